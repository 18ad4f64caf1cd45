"""The live probe on this machine, cross-checked with psutil and netlink."""

from __future__ import annotations

import os

import psutil
import pytest

import hostprobe
from hostprobe.crosscheck import memory_block_bytes, zoneinfo_managed_bytes
from hostprobe.model import HostTopology

pytestmark = pytest.mark.skipif(not os.path.isdir("/sys/devices/system/cpu"), reason="no live sysfs here")


@pytest.fixture(scope="module")
def live() -> HostTopology:
    return hostprobe.probe()


def test_online_cpus_agree_with_psutil(live: HostTopology) -> None:
    # Both read the kernel's online mask: sysconf(_SC_NPROCESSORS_ONLN) parses /sys/devices/system/cpu/online.
    assert live.live
    assert len(live.online_cpus) == psutil.cpu_count()
    physical = psutil.cpu_count(logical=False)
    if physical is not None:
        assert len({c.thread_siblings for c in live.cpus if c.online}) == physical


def test_total_memory_agrees_with_psutil(live: HostTopology) -> None:
    # psutil parses the same /proc/meminfo: exact.
    assert live.memory.mem_total_bytes == psutil.virtual_memory().total


def test_node_memory_sum_agrees_with_psutil(live: HostTopology) -> None:
    """Σ node MemTotal vs psutil's total.

    Both are sums of the zones' managed pages, so they are equal unless memory is hot-(un)plugged or
    ballooned between the reads: the tolerance is one memory block (block_size_bytes, 128 MiB on x86).
    Kernels that initialise struct pages lazily (``deferred_init=lazy``, as on the Firecracker build VMs)
    count pages not yet handed to the zones in MemTotal only; there the node sum must instead equal the
    managed pages of /proc/zoneinfo (another kernel counter) and stay below MemTotal.
    """
    if not live.numa_nodes:
        pytest.skip("this sysfs has no devices/system/node (no CONFIG_NUMA or a container sysfs)")
    check = hostprobe.psutil_cross_check(live)
    tolerance = memory_block_bytes("/sys")
    assert check.node_mem_total_bytes is not None
    if check.node_memory_agrees:
        assert abs(check.node_mem_total_bytes - psutil.virtual_memory().total) <= tolerance
        assert not check.deferred_page_init
    else:
        managed = zoneinfo_managed_bytes("/proc")
        assert managed is not None, "node memory disagrees with psutil and /proc/zoneinfo is unreadable"
        assert abs(check.node_mem_total_bytes - managed) <= tolerance
        assert check.node_mem_total_bytes < psutil.virtual_memory().total
        assert check.deferred_page_init
        assert any("deferred page init" in d for d in live.diagnostics)
    assert check.cpu_count_agrees and check.proc_memory_agrees


def test_every_online_cpu_has_a_node(live: HostTopology) -> None:
    if not live.numa_nodes:
        pytest.skip("this sysfs has no devices/system/node")
    assert sorted(c for n in live.numa_nodes for c in n.cpus) == list(live.online_cpus)
    assert live.kubelet_view.num_cpus == len(live.online_cpus)


def test_netlink_lists_loopback(live: HostTopology) -> None:
    names = {i.name: i for i in live.net_interfaces}
    if not any(i.source == "netlink" for i in live.net_interfaces):
        pytest.skip(f"netlink not permitted here: {[d for d in live.diagnostics if 'netlink' in d]}")
    assert "lo" in names and names["lo"].ifindex == 1 and names["lo"].virtual
    # Interfaces whose sysfs parent is a PCI function (directly or through virtio) carry its NUMA node.
    for iface in live.net_interfaces:
        if iface.pci_address is not None:
            assert iface.numa_node == live.pci_device(iface.pci_address).numa_node
            assert iface.name in live.pci_device(iface.pci_address).netdevs
