"""Layouts no real capture has, built with the synthetic generator (``shared/spec/hostprobe.md`` §5)."""

from __future__ import annotations

from pathlib import Path

import pytest

import hostprobe
from hostprobe.model import HostTopology
from hostprobe.sample import SAMPLE_HOST, write_sample_tree
from tests.synthetic_sysfs import (
    GIB_KIB,
    SyntheticHost,
    SyntheticPciFunction,
    gb200_like,
    offline_cpus_host,
    sriov_virtio_vmd_host,
    write_tree,
)


def build(tmp_path: Path, host: SyntheticHost) -> HostTopology:
    sys_root, proc_root = write_tree(tmp_path, host)
    return hostprobe.probe(sys_root, proc_root)


@pytest.fixture(scope="module")
def gb200(tmp_path_factory: pytest.TempPathFactory) -> HostTopology:
    return build(tmp_path_factory.mktemp("gb200"), gb200_like())


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> HostTopology:
    return build(tmp_path_factory.mktemp("mixed"), sriov_virtio_vmd_host())


# -- GB200-like: 36 nodes, 2 with CPUs ------------------------------------------------------------------


def test_gb200_nodes_and_memory(gb200: HostTopology) -> None:
    assert gb200.online_node_ids == tuple(range(36))
    assert [n.id for n in gb200.numa_nodes if n.has_cpus] == [0, 1]
    assert gb200.memory_only_node_ids == (2, 10, 18, 26)  # the other GPU nodes hold no memory yet
    assert gb200.node(2).memory_bytes == 186 * 1024**3 and gb200.node(3).memory_bytes == 0
    assert gb200.node(3).hugepages == {}  # no pools on nodes without memory (not in N_MEMORY)
    assert gb200.node(0).hugepages == {64: (0, 0), 2048: (1024, 1000), 524288: (0, 0)}
    assert gb200.node(1).hugepages[524288] == (4, 4)
    assert len(gb200.node(0).cpus) == 72 and gb200.node(1).cpus == tuple(range(72, 144))
    assert gb200.node(0).distances[1] == 40 and gb200.node(35).distances[0] == 80
    assert gb200.node(35).distances[34] == 120 and gb200.node(35).distances[35] == 10


def test_gb200_kubelet_would_refuse_to_start(gb200: HostTopology) -> None:
    view = gb200.kubelet_view
    assert view.num_topology_nodes == 36 and view.num_numa_nodes == 2
    assert view.topology_manager_default_limit_exceeded
    assert view.refusal_reasons == ("unsupported on machines with more than 8 NUMA Nodes",)
    assert view.startup_errors(max_allowable_numa_nodes=36) == ()
    assert view.startup_errors(topology_manager_policy="none") == ()
    assert view.startup_errors(max_allowable_numa_nodes=35) != ()
    assert not view.node_ids_over_63 and not view.distances_indexed_by_id_mismatch
    # cadvisor's glob order: node0, node1, node10..node19, node2, node20...
    assert view.topology_node_ids[:4] == (0, 1, 10, 11)
    doc = gb200.to_json_dict()["kubelet_view"]
    assert doc["would_refuse_to_start"] is True and doc["num_topology_nodes_incl_memory_only"] == 36


def test_gb200_gpus_by_node(gb200: HostTopology) -> None:
    gpus = [d for d in gb200.pci_devices if d.class_code == "0x030200"]
    assert [(d.address, d.numa_node, d.driver) for d in gpus] == [
        ("0000:01:00.0", 0, "nvidia"),
        ("0001:01:00.0", 0, "nvidia"),
        ("0002:01:00.0", 1, "nvidia"),
        ("0003:01:00.0", 1, "nvidia"),
    ]


# -- SR-IOV links, virtio parent, VMD domain, offline node, CXL ----------------------------------------


def test_sriov_pf_and_vf_links(mixed: HostTopology) -> None:
    pf = mixed.pci_device("0000:3b:00.0")
    assert pf.virtfns == ("0000:3b:02.0", "0000:3b:02.1", "0000:3b:02.2", "0000:3b:02.3")
    assert (pf.sriov_totalvfs, pf.sriov_numvfs, pf.physfn, pf.is_virtual_function) == (64, 4, None, False)
    for index, address in enumerate(pf.virtfns):
        vf = mixed.pci_device(address)
        assert vf.physfn == "0000:3b:00.0" and vf.is_virtual_function
        assert vf.driver == "iavf" and vf.netdevs == (f"ens1f0v{index}",)
        iface = mixed.net_interface(f"ens1f0v{index}")
        assert (iface.pci_address, iface.physfn) == (address, "0000:3b:00.0")
    # A VF may report another node than its PF: each keeps its own.
    assert [mixed.pci_device(a).numa_node for a in pf.virtfns] == [0, 0, 0, 1]


def test_virtio_parent_reaches_pci_function(mixed: HostTopology) -> None:
    eth0 = mixed.net_interface("eth0")
    assert (eth0.parent_device, eth0.pci_address, eth0.numa_node, eth0.virtual) == (
        "virtio0",
        "0000:00:03.0",
        -1,
        False,
    )
    dev = mixed.pci_device("0000:00:03.0")
    assert dev.netdevs == ("eth0",) and dev.numa_node == -1 and dev.numa_affinity is None
    assert mixed.net_interface("br0").virtual and mixed.net_interface("br0").pci_address is None


def test_five_hex_digit_domain_behind_a_bridge(mixed: HostTopology) -> None:
    nvme = mixed.pci_device("10000:01:00.0")
    assert (nvme.class_code, nvme.numa_node, nvme.parent, nvme.driver) == (
        "0x010802",
        1,
        "10000:00:02.0",
        "nvme",
    )
    assert mixed.pci_device("10000:00:02.0").is_bridge
    # Sorted by (domain, bus, device, function): the VMD domain comes last.
    assert mixed.pci_devices[-1].address == "10000:01:00.0"


def test_numa_node_file_absent_is_not_minus_one(mixed: HostTopology) -> None:
    accel = mixed.pci_device("0000:d8:00.0")
    assert accel.numa_node is None and accel.driver is None
    assert accel.to_json_dict()["numa_node"] is None


def test_possible_but_offline_node_and_cxl_initiators(mixed: HostTopology) -> None:
    assert mixed.possible_node_ids == (0, 1, 2, 3)
    assert mixed.online_node_ids == (0, 1, 2) and mixed.offline_node_ids == (3,)
    assert all(3 not in node.distances for node in mixed.numa_nodes)
    cxl = mixed.node(2)
    assert cxl.memory_only and cxl.initiators == (1,) and cxl.has_normal_memory is False
    assert cxl.distances == {0: 28, 1: 17, 2: 10}
    assert mixed.node(0).hugepages[2048] == (256, 200) and mixed.node(1).hugepages[1048576] == (4, 3)
    assert mixed.memory.hugepages[2048] == (256, 200)
    assert mixed.isolated_cpus == (2, 3, 10, 11) and mixed.isolated_cpus_source == "sysfs"
    assert mixed.to_json_dict()["offline_node_ids"] == [3]


# -- offline CPUs, old kernels, missing cache ids ------------------------------------------------------


def test_offline_cpus_on_a_consistent_multi_node_host(tmp_path: Path) -> None:
    host = offline_cpus_host()
    topo = build(tmp_path, host)
    assert [c.id for c in topo.cpus if not c.online] == [3, 7, 11]
    for cpu_id in (3, 7, 11):
        cpu = topo.cpu(cpu_id)
        # No topology/ for an offline CPU; its node still comes from the nodeN/cpuM link.
        expected_node = next(p.node for p in host.layout() if p.cpu == cpu_id)
        assert (cpu.socket_id, cpu.core_id, cpu.numa_node_id, cpu.uncore_cache_id) == (
            None,
            None,
            expected_node,
            None,
        )
    assert all(c not in node.cpus for node in topo.numa_nodes for c in (3, 7, 11))
    # Interleaved numbering: even CPUs on socket 0, odd on socket 1.
    assert topo.node(0).cpus == (0, 2, 4, 6, 8, 10, 12, 14)
    assert topo.kubelet_view.num_cpus == 13
    assert not topo.diagnostics


def test_old_kernel_names_and_missing_cache_ids(tmp_path: Path) -> None:
    topo = build(tmp_path, offline_cpus_host())
    cpu0 = topo.cpu(0)
    assert cpu0.thread_siblings == (0, 8)  # from thread_siblings_list: no core_cpus_list on this kernel
    assert cpu0.die_id is None and cpu0.cluster_id is None
    assert cpu0.l3_cache_id is None
    view = topo.kubelet_view
    assert not any(n.caches_readable for n in view.nodes)
    assert {c.uncore_cache_id for c in view.cpus} == {0, 1}  # socket ids stand in
    assert any("fall back to socket ids" in w for w in view.warnings)
    # Without ids, L3 groups still come from the sharing sets.
    assert len(topo.l3_groups) == 2


@pytest.mark.slow
def test_amd_like_ccx_uncore_and_snc(tmp_path: Path) -> None:
    host = SyntheticHost(sockets=2, cores_per_socket=8, threads_per_core=2, nodes_per_socket=2, l3_cores=2)
    topo = build(tmp_path, host)
    view = topo.kubelet_view
    assert len(topo.numa_nodes) == 4 and len(topo.l3_groups) == 8
    assert topo.node(0).distances == {0: 10, 1: 11, 2: 21, 3: 21}
    assert [n.uncore_cache_ids for n in view.nodes] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert not any(n.node_level_l3 for n in view.nodes) and view.num_uncore_caches == 8
    # SNC: one L3 per socket spanning two nodes is also an uncore cache (larger than the node).
    snc = build(tmp_path / "snc", SyntheticHost(sockets=2, cores_per_socket=8, nodes_per_socket=2))
    assert [n.uncore_cache_ids for n in snc.kubelet_view.nodes] == [(0,), (0,), (1,), (1,)]
    assert not any(n.node_level_l3 for n in snc.kubelet_view.nodes)


def test_non_contiguous_node_ids(tmp_path: Path) -> None:
    host = SyntheticHost(cpu_node_ids=(0, 8), memory_only_node_ids=(70,), node_memory_kib=4 * GIB_KIB)
    topo = build(tmp_path, host)
    assert topo.online_node_ids == (0, 8, 70)
    assert topo.node(8).distances == {0: 21, 8: 10, 70: 28}
    assert topo.node(70).distance_row == (17, 28, 10)
    view = topo.kubelet_view
    assert view.node_ids_over_63 == (70,) and view.distances_indexed_by_id_mismatch
    assert view.topology_node_ids == (0, 70, 8)


def test_no_node_directory_gives_package_pseudo_nodes(tmp_path: Path) -> None:
    sys_root, proc_root = write_tree(tmp_path, SyntheticHost())
    import shutil

    shutil.rmtree(sys_root / "devices" / "system" / "node")
    topo = hostprobe.probe(sys_root, proc_root)
    assert topo.numa_nodes == ()
    assert topo.kubelet_view.topology_node_ids == (0, 1)  # one pseudo-node per package, as cadvisor
    assert any("no NUMA information" in d for d in topo.diagnostics)


def test_pf_with_vfs_json(mixed: HostTopology) -> None:
    doc = mixed.to_json_dict()
    pf = next(d for d in doc["pci_devices"] if d["address"] == "0000:3b:00.0")
    assert pf["virtfns"] == ["0000:3b:02.0", "0000:3b:02.1", "0000:3b:02.2", "0000:3b:02.3"]
    assert pf["netdevs"] == ["ens1f0"] and pf["class"] == "0x020000"


# -- the bundled sample ----------------------------------------------------------------------------------


def test_sample_tree(tmp_path: Path) -> None:
    sys_root, proc_root = write_sample_tree(tmp_path)
    topo = hostprobe.probe(sys_root, proc_root)
    assert topo.online_node_ids == (0, 1) and len(topo.online_cpus) == 16
    assert len(topo.socket_ids) == 2 and len({c.thread_siblings for c in topo.cpus}) == 8
    assert all(n.memory_bytes == 16 * 1024**3 for n in topo.numa_nodes)
    assert topo.node(0).hugepages == {2048: (512, 512), 1048576: (2, 2)}
    assert topo.node(1).distances == {0: 21, 1: 10}
    vfs = [d for d in topo.pci_devices if (d.vendor, d.device) == ("0x8086", "0x154c")]
    assert [(d.address, d.numa_node) for d in vfs] == [
        ("0000:3b:02.0", 0),
        ("0000:3b:02.1", 0),
        ("0000:86:02.0", 1),
        ("0000:86:02.1", 1),
    ]
    assert topo.net_interface("ens2f0").numa_node == 1
    assert not topo.diagnostics and not topo.kubelet_view.warnings
    assert topo.memory.mem_total_bytes == 32 * 1024**3


def test_sample_module_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hostprobe.sample import main

    assert main([str(tmp_path / "tree")]) == 0
    assert capsys.readouterr().out.split() == [
        "--sysfs-root",
        str(tmp_path / "tree" / "sys"),
        "--procfs-root",
        str(tmp_path / "tree" / "proc"),
    ]
    assert main([str(tmp_path / "tree")]) == 2  # refuses to write over an existing tree
    assert "already exists" in capsys.readouterr().err


def test_generator_rejects_a_bad_node_id_count() -> None:
    with pytest.raises(ValueError, match="cpu_node_ids needs 2 ids"):
        SyntheticHost(cpu_node_ids=(0,)).layout()
    assert SAMPLE_HOST.num_cpus == 16


def test_pci_function_written_without_optional_files(tmp_path: Path) -> None:
    host = SyntheticHost(pci_functions=(SyntheticPciFunction("0000:af:00.0", numa_node=None, driver=None),))
    sys_root, _ = write_tree(tmp_path, host)
    device = sys_root / "bus" / "pci" / "devices" / "0000:af:00.0"
    assert device.is_symlink() and not (device / "numa_node").exists() and not (device / "driver").exists()


# -- netlink joined with sysfs ---------------------------------------------------------------------------


def test_netlink_links_joined_with_sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hostprobe import net

    links = [
        net.NetlinkLink("lo", 1, "00:00:00:00:00:00", "UNKNOWN", 65536, None, None),
        net.NetlinkLink("eth0", 8, "52:54:00:12:34:56", "UP", 1400, None, "virtio0"),
        net.NetlinkLink("veth1", 9, None, "DOWN", 1500, "veth", None),
        net.NetlinkLink("ens9", 10, None, "UP", 9000, None, "0000:af:00.0"),  # not in this sysfs
    ]
    monkeypatch.setattr(net, "read_netlink_links", lambda: links)
    sys_root, proc_root = write_tree(tmp_path, sriov_virtio_vmd_host())
    topo = hostprobe.probe(sys_root, proc_root, netlink=True)
    by_name = {i.name: i for i in topo.net_interfaces}
    assert list(by_name) == ["ens9", "eth0", "lo", "veth1"]  # netlink decides which links exist
    eth0 = by_name["eth0"]
    assert (eth0.source, eth0.ifindex, eth0.mtu, eth0.operstate) == ("netlink", 8, 1400, "up")
    assert (eth0.pci_address, eth0.numa_node) == ("0000:00:03.0", -1)  # from sysfs, through virtio0
    assert by_name["veth1"].kind == "veth" and by_name["veth1"].virtual
    assert (by_name["ens9"].pci_address, by_name["ens9"].numa_node) == ("0000:af:00.0", None)


def test_netlink_unavailable_falls_back_to_sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hostprobe import net

    def refuse() -> list[net.NetlinkLink]:
        raise net.NetlinkUnavailable("netlink: [Errno 13] Permission denied")

    monkeypatch.setattr(net, "read_netlink_links", refuse)
    sys_root, proc_root = write_tree(tmp_path, SyntheticHost())
    topo = hostprobe.probe(sys_root, proc_root, netlink=True)
    assert [(i.name, i.source) for i in topo.net_interfaces] == [("lo", "sysfs")]
    assert "netlink: [Errno 13] Permission denied; interfaces listed from sysfs instead" in topo.diagnostics
