"""Emulated nodes the suites share: the probed ``Machine`` of a synthetic host (the bundled sample by
default) and the configuration text of a test node (a KubeletConfiguration, most often with the static CPU
and Memory Managers, and an optional EmulatorConfiguration)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import hostprobe
from hostprobe.sample import SAMPLE_HOST
from hostprobe.synthetic import SyntheticHost, write_tree
from kubeletemu.machine import Machine

# The kubelet's default hard eviction threshold (memory.available<100Mi): reservedMemory must cover it.
EVICTION_MIB = 100

# The static CPU Manager with CPU 0 reserved, nothing else.
STATIC_CPUS = 'cpuManagerPolicy: static\nreservedSystemCPUs: "0"\n'


def static_managers(kube_reserved_mib: int = 512) -> str:
    """The static CPU and Memory Managers: 1 CPU and ``kube_reserved_mib`` kube-reserved, the memory held
    back (with the eviction threshold) on NUMA node 0."""
    return (
        "cpuManagerPolicy: static\n"
        "memoryManagerPolicy: Static\n"
        f'kubeReserved: {{cpu: "1", memory: {kube_reserved_mib}Mi}}\n'
        "reservedMemory:\n"
        "- numaNode: 0\n"
        f"  limits: {{memory: {kube_reserved_mib + EVICTION_MIB}Mi}}\n"
    )


def kubelet_config(
    policy: str = "single-numa-node",
    scope: str | None = None,
    *,
    managers: str | None = None,
    gates: Mapping[str, bool] | None = None,
    emulator: str = "",
) -> str:
    """A KubeletConfiguration: the Topology Manager's ``policy`` and ``scope`` (the default when None),
    the ``managers`` lines (:func:`static_managers` when None) and ``gates``; then, when ``emulator`` has
    lines, an EmulatorConfiguration holding them."""
    text = (
        "apiVersion: kubelet.config.k8s.io/v1beta1\n"
        "kind: KubeletConfiguration\n"
        f"topologyManagerPolicy: {policy}\n"
        + (f"topologyManagerScope: {scope}\n" if scope is not None else "")
        + (static_managers() if managers is None else managers)
    )
    if gates:
        text += "featureGates:\n" + "".join(f"  {name}: {str(on).lower()}\n" for name, on in gates.items())
    if emulator:
        text += "---\napiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\n" + emulator
    return text


def probe_machine(root: Path, host: SyntheticHost = SAMPLE_HOST) -> Machine:
    """The Machine of ``host``, its sysfs and procfs trees written below ``root`` and probed."""
    sys_root, proc_root = write_tree(root, host)
    return Machine.from_host(hostprobe.probe(str(sys_root), str(proc_root)))
