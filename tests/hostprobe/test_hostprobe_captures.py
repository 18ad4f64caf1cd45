"""The probe against the eight real captures and their frozen ground truth (``*.truth.json``)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

import hostprobe
from hostprobe.model import HostTopology
from hostprobe.parse import format_cpulist, parse_cpulist
from tests.hostprobe.hostprobe_capture_support import FIXTURE_NAMES, Capture

pytestmark = pytest.mark.slow

ALL = pytest.mark.parametrize("capture", FIXTURE_NAMES, indirect=True)


def probed(capture: Capture) -> HostTopology:
    return hostprobe.probe(capture.sys, capture.proc)


def probed_json(capture: Capture) -> dict[str, Any]:
    # Through a JSON round trip: the contract is what ``--json`` prints.
    doc: dict[str, Any] = json.loads(json.dumps(probed(capture).to_json_dict()))
    return doc


def cpus(text: str) -> list[int]:
    return list(parse_cpulist(text))


@ALL
def test_nodes_cpus_memory_and_memory_only(capture: Capture) -> None:
    summary = capture.truth["summary"]
    doc = probed_json(capture)
    nodes = {node["id"]: node for node in doc["numa_nodes"]}
    assert list(nodes) == summary["numa_node_ids"]
    assert [i for i, n in nodes.items() if n["cpus"]] == summary["numa_nodes_with_cpus"]
    assert [i for i, n in nodes.items() if n["memory_only"]] == summary["memory_only_nodes"]
    for node_id, count in summary["online_cpus_per_node"].items():
        assert len(nodes[int(node_id)]["cpus"]) == count
    for node_id, truth in capture.truth["nodes"].items():
        node = nodes[int(node_id)]
        assert node["cpus"] == cpus(truth["cpus_online"])
        assert node["cpus_source"] == truth["cpus_source"]
        expected_bytes = None if truth["memtotal_kb"] is None else truth["memtotal_kb"] * 1024
        assert node["memory_bytes"] == expected_bytes
        assert node["memory_bytes"] == (
            None
            if summary["memtotal_kb_per_node"][node_id] is None
            else summary["memtotal_kb_per_node"][node_id] * 1024
        )
        assert node["distance_row"] == truth["distance_row"]
        assert node["socket_ids"] == truth["sockets"] == summary["node_to_sockets"][node_id]


@ALL
def test_hugepages_per_node_and_global(capture: Capture) -> None:
    doc = probed_json(capture)
    nodes = {str(node["id"]): node for node in doc["numa_nodes"]}
    for node_id, pools in capture.truth["summary"]["hugepages_per_node"].items():
        got = {
            f"{size}kB": [pool["total"], pool["free"]] for size, pool in nodes[node_id]["hugepages"].items()
        }
        assert got == pools
    truth_global = capture.truth["global_hugepages"] or {}
    got_global = {f"{size}kB": pool for size, pool in doc["memory"]["hugepages"].items()}
    assert got_global == {
        size: {"total": pool["nr_hugepages"], "free": pool["free_hugepages"]}
        for size, pool in truth_global.items()
    }


@ALL
def test_distances_are_keyed_by_node_id(capture: Capture) -> None:
    matrix = capture.truth.get("distance_matrix")
    topo = probed(capture)
    if matrix is None:
        assert all(not node.distances for node in topo.numa_nodes)
        return
    columns = matrix["column_node_ids"]
    for node_id, row in matrix["rows"].items():
        node = topo.node(int(node_id))
        if matrix["consistent_with_online"]:
            assert dict(node.distances) == dict(zip(columns, row, strict=True))
            assert node.distances[node.id] == 10
        else:
            # The hand-edited capture's row does not match `online`; it is mapped through `possible`.
            assert len(row) != len(columns)
            assert list(node.distances) == list(topo.possible_node_ids)
            assert any("distance row" in d for d in topo.diagnostics)


@ALL
def test_cpus_sockets_cores_and_l3(capture: Capture) -> None:
    truth, summary = capture.truth, capture.truth["summary"]
    topo = probed(capture)
    assert format_cpulist(topo.online_cpus) == truth["cpus"]["online"]
    assert len(topo.online_cpus) == summary["num_online_cpus"] == truth["cpus"]["num_online"]
    assert format_cpulist(c.id for c in topo.cpus) == truth["cpus"]["cpu_dirs"]
    assert len(topo.socket_ids) == summary["num_sockets"]
    for package, members in truth["sockets"].items():
        assert [c.id for c in topo.cpus if c.online and c.socket_id == int(package)] == cpus(members)
    sibling_groups = {c.thread_siblings for c in topo.cpus if c.online}
    assert len(sibling_groups) == summary["num_physical_cores"]
    assert [format_cpulist(group) for group in topo.l3_groups] == [g["cpus"] for g in truth["l3_groups"]]
    assert len(topo.l3_groups) == summary["num_l3_groups"]
    for group in truth["l3_groups"]:
        members = cpus(group["cpus"])
        assert {topo.cpu(c).l3_cache_id for c in members} == {group["l3_id"]}


@ALL
def test_isolated_and_nohz_full(capture: Capture) -> None:
    truth = capture.truth["cpus"]
    topo = probed(capture)
    if truth["isolated_file"] is not None:
        assert topo.isolated_cpus_source == "sysfs"
        assert format_cpulist(topo.isolated_cpus) == truth["isolated_file"]
    elif truth["isolcpus_cmdline"] is not None:
        assert topo.isolated_cpus_source == "cmdline"
        assert format_cpulist(topo.isolated_cpus) == truth["isolcpus_cmdline"]
    else:
        assert topo.isolated_cpus == ()
    nohz = truth["nohz_full_file"]
    if nohz is not None:
        assert format_cpulist(topo.nohz_full_cpus) == ("" if nohz == "(null)" else nohz)


@ALL
def test_proc_meminfo(capture: Capture) -> None:
    truth = capture.truth["proc_meminfo"]
    memory = probed(capture).memory
    if truth is None:
        assert memory.mem_total_bytes is None
        return
    assert memory.mem_total_bytes == truth["MemTotal"] * 1024
    assert memory.mem_free_bytes == truth["MemFree"] * 1024
    assert memory.default_hugepage_size_kib == truth["Hugepagesize"]


@ALL
def test_pci_numa_nodes(capture: Capture) -> None:
    pci = capture.truth["pci"]
    doc = probed_json(capture)
    devices = {d["address"]: d for d in doc["pci_devices"]}
    assert len(devices) == pci["num_devices"]
    counts = Counter("absent" if d["numa_node"] is None else str(d["numa_node"]) for d in devices.values())
    assert dict(counts) == pci["count_by_numa_node"] == capture.truth["summary"]["pci_devices_by_numa_node"]
    for want in pci["endpoint_devices_of_interest"]:
        got = devices[want["address"]]
        assert got["numa_node"] == (None if want["numa_node"] == "absent" else want["numa_node"])
        for key in (
            "class",
            "vendor",
            "device",
            "subsystem_vendor",
            "subsystem_device",
            "driver",
            "sriov_totalvfs",
            "sriov_numvfs",
            "physfn",
        ):
            assert got[key] == want.get(key), key
        assert got["virtfns"] == want.get("virtfns", [])
        assert got["netdevs"] == want.get("netdevs", [])
        if "local_cpulist" in want:
            assert got["local_cpus"] == cpus(want["local_cpulist"])


@ALL
def test_netdevs_map_to_pci_and_node(capture: Capture) -> None:
    topo = probed(capture)
    got = {i.name: i.numa_node for i in topo.net_interfaces if i.pci_address is not None}
    assert got == capture.truth["summary"]["netdev_to_numa"]
    for name, want in capture.truth["netdevs"].items():
        iface = topo.net_interface(name)
        assert (iface.pci_address, iface.numa_node, iface.ifindex, iface.virtual) == (
            want["pci_address"],
            want["numa_node"],
            want["ifindex"],
            want["virtual"],
        )


@ALL
def test_kubelet_view(capture: Capture) -> None:
    truth = capture.truth["kubelet_view"]
    view = probed(capture).kubelet_view
    got = {
        n.id: {
            "id": n.id,
            "num_cores": n.num_cores,
            "num_threads": n.num_threads,
            "node_level_l3": n.node_level_l3,
            "uncore_cache_ids": list(n.uncore_cache_ids),
        }
        for n in view.nodes
    }
    assert got == {n["id"]: n for n in truth["nodes"]}
    assert view.num_cpus == truth["num_cpus"]
    assert view.num_numa_nodes == truth["num_numa_nodes_with_cpus"]
    assert view.num_topology_nodes == truth["num_topology_nodes_incl_memory_only"]
    assert view.num_uncore_caches == truth["num_uncore_caches"]
    assert view.topology_manager_default_limit_exceeded is truth["topology_manager_default_limit_exceeded"]
    assert list(view.node_ids_over_63) == truth["node_ids_over_63"]
    # Discover's per-CPU view agrees with its per-node summary.
    for node in view.nodes:
        for core in node.cores:
            for thread in core.threads:
                assert next(c for c in view.cpus if c.cpu_id == thread).core_id == min(core.threads)


@ALL
def test_probe_is_deterministic_and_cli_json_matches(
    capture: Capture, capsys: pytest.CaptureFixture[str]
) -> None:
    from hostprobe.__main__ import main

    assert main(["--sysfs-root", str(capture.sys), "--procfs-root", str(capture.proc), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == probed_json(capture)
    for node in printed["numa_nodes"]:
        assert {"id", "cpus", "memory_bytes", "hugepages", "distances"} <= set(node)
    for cpu in printed["cpus"]:
        assert {"id", "core_id", "socket_id", "numa_node_id", "uncore_cache_id", "online"} <= set(cpu)
    for dev in printed["pci_devices"]:
        assert {"address", "class", "vendor", "device", "numa_node"} <= set(dev)


# -- targeted checks (shared/spec/hostprobe.md §6 "Testing") -----------------------------------------


@pytest.mark.parametrize("capture", ["ocp-worker-2s20c2t-cascadelake"], indirect=True)
def test_ocp_matches_cadvisor_machineinfo(capture: Capture) -> None:
    machine = json.loads((capture.root / "machineinfo.json").read_text())
    topo = probed(capture)
    view = topo.kubelet_view
    assert view.num_cpus == machine["num_cores"] == 80
    assert view.num_sockets == machine["num_sockets"]
    # cadvisor's NumPhysicalCores counts distinct `core id` machine-wide: 20, not the true 40.
    assert view.num_physical_cores == machine["num_physical_cores"] == 20
    assert view.num_cores == 40
    assert view.memory_capacity_bytes == machine["memory_capacity"]
    for want, node in zip(machine["topology"], view.nodes, strict=True):
        assert node.id == want["node_id"]
        assert node.memory_bytes == want["memory"] == topo.node(node.id).memory_bytes
        # Same cores, same threads, in cadvisor's lexicographic glob order (cpu46 before cpu6).
        assert [(c.core_id, list(c.threads), c.socket_id) for c in node.cores] == [
            (c["core_id"], c["thread_ids"], c["socket_id"]) for c in want["cores"]
        ]
        assert node.node_level_l3 is (len(want["caches"]) == 1 and want["caches"][0]["level"] == 3)
    assert topo.node(0).hugepages[2048] == (128, 128)
    assert topo.memory.hugepages == {}  # not captured; meminfo's HugePages_* cover the 1G default only
    assert topo.memory.default_hugepage_size_kib == 1048576


@pytest.mark.parametrize("capture", ["hwloc-power9-gpu-memnodes"], indirect=True)
def test_power9_sparse_ids_over_63(capture: Capture) -> None:
    topo = probed(capture)
    view = topo.kubelet_view
    assert topo.online_node_ids == (0, 8, 250, 251, 252, 253, 254, 255)
    assert topo.memory_only_node_ids == (250, 251, 252, 253, 254, 255)
    assert topo.node(8).distances[250] == 80 and topo.node(0).distances[8] == 40
    assert all(dev.numa_node is None and dev.numa_affinity is None for dev in topo.pci_devices)
    # cadvisor's glob order is lexicographic: node8 comes last.
    assert view.topology_node_ids == (0, 250, 251, 252, 253, 254, 255, 8)
    assert not view.would_refuse_to_start  # 8 nodes is not more than 8
    assert view.distances_indexed_by_id_mismatch
    assert any("exceed 63" in w for w in view.warnings)
    assert not any(n.caches_readable for n in view.nodes if n.cores)  # no cache ids on this kernel
    assert {c.uncore_cache_id for c in topo.cpus if c.online} == {0, 8}  # socket ids


@pytest.mark.parametrize("capture", ["nri-2s-snc2-pmem-memonly"], indirect=True)
def test_nri_snc_pmem(capture: Capture) -> None:
    topo = probed(capture)
    assert topo.memory_only_node_ids == (4, 5, 6, 7)
    assert format_cpulist(topo.isolated_cpus) == "4-7,60-63"
    assert topo.nohz_full_cpus == ()  # the file reads "(null)"
    assert [topo.node(n).has_normal_memory for n in range(8)] == [True] * 4 + [False] * 4
    assert {n.id: n.uncore_cache_ids for n in topo.kubelet_view.nodes if n.cores} == {
        0: (0,),
        1: (1,),
        2: (0,),
        3: (1,),
    }
    assert topo.node(0).distances == {0: 10, 1: 21, 2: 11, 3: 21, 4: 17, 5: 28, 6: 28, 7: 28}
    assert any("procfs root" in d for d in topo.diagnostics)
    assert {c.die_id for c in topo.cpus} == {0} and len({c.cluster_id for c in topo.cpus}) > 1


@pytest.mark.parametrize("capture", ["hwloc-2s8c2t-sriov-ve"], indirect=True)
def test_hwloc_sriov_pf_and_netdev(capture: Capture) -> None:
    topo = probed(capture)
    pf = topo.pci_device("0000:60:00.0")
    assert (pf.sriov_totalvfs, pf.sriov_numvfs, pf.virtfns, pf.netdevs) == (64, 0, (), ("enp96s0f0",))
    iface = topo.net_interface("enp96s0f0")
    assert (iface.pci_address, iface.numa_node, iface.parent_device) == ("0000:60:00.0", 0, "0000:60:00.0")
    assert pf.parent == "0000:5f:03.0"


@pytest.mark.parametrize("capture", ["ul-epyc7451-2s-8numa"], indirect=True)
def test_epyc_cpumap_only(capture: Capture) -> None:
    topo = probed(capture)
    assert [n.cpus_source for n in topo.numa_nodes] == ["cpumap"] * 8
    assert len(topo.l3_groups) == 16 and len(topo.socket_ids) == 2
    assert topo.kubelet_view.num_uncore_caches == 16
    assert all(n.memory_bytes is None and not n.distances for n in topo.numa_nodes)


@pytest.mark.parametrize("capture", ["ghw-xeon-l5640-2s-igbvf"], indirect=True)
def test_l5640_node_is_not_socket(capture: Capture) -> None:
    topo = probed(capture)
    assert topo.node(0).socket_ids == (1,) and topo.node(1).socket_ids == (0,)
    assert sum(1 for d in topo.pci_devices if d.numa_node == -1) == 72
    vfs = [d for d in topo.pci_devices if d.device == "0x1520"]
    # The README says six igbvf functions; the capture (and its truth file) holds eight, alternating nodes.
    assert len(vfs) == 8 and [d.numa_node for d in vfs] == [0, 1] * 4
    assert all(d.physfn is None for d in vfs)  # the capture kept no physfn links
    assert {c.numa_node_id for c in topo.kubelet_view.cpus if c.socket_id == 1} == {0}


@pytest.mark.parametrize("capture", ["hwloc-offline-cpu0-node0"], indirect=True)
def test_offline_capture_gives_diagnostics_not_a_crash(capture: Capture) -> None:
    topo = probed(capture)
    assert topo.online_node_ids == (1,) and topo.offline_node_ids == (0,)
    assert topo.node(1).distances == {0: 21, 1: 10}
    text = "\n".join(topo.diagnostics)
    assert "distance row has 2 entries for 1 online nodes" in text
    assert "CPUs 4,6,8,10,12,14,16,18,20 are online but belong to NUMA node 0, which is not online" in text
    assert "node1: cpulist names CPUs that are not online (1,3,21,23)" in text
    assert [c.id for c in topo.cpus if not c.online] == [0, 1, 2, 3, 21, 22, 23]
    assert topo.cpu(2).socket_id is None and topo.cpu(2).numa_node_id == 0  # no topology/, dangling link
    assert topo.cpu(4).uncore_cache_id is None  # the kubelet does not see CPUs of an offline node
    assert any("the kubelet does not see them" in w for w in topo.kubelet_view.warnings)
