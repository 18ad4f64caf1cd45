"""LeastNUMANodes (scheduler-plugins' NodeResourceTopologyMatch score strategy), from zones and from the
emulated node's own state; the worked example of ``shared/spec/scheduler-side.md`` §1."""

from __future__ import annotations

from pathlib import Path

import pytest

import hostprobe
from hostprobe.synthetic import GIB_KIB, SyntheticHost, write_tree
from kubeletemu.bitmask import BitMask
from kubeletemu.config import parse_config
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.node_topology import node_topology
from kubeletemu.pod import Container, Pod, QOSClass
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler import (
    NUMAZone,
    Requirement,
    least_numa_nodes,
    least_numa_nodes_for_node,
    normalize_score,
    numa_nodes_required,
    zones_from_report,
)

GI = 1 << 30
TWO_NODE_COSTS = {0: {0: 10, 1: 20}, 1: {0: 20, 1: 10}}


def guaranteed(name: str, cpus: int, memory: str = "256Mi", extra: dict[str, str] | None = None) -> Container:
    limits = {"cpu": Quantity.parse(cpus), "memory": Quantity.parse(memory)}
    limits.update({k: Quantity.parse(v) for k, v in (extra or {}).items()})
    return Container(name, requests=limits, limits=limits)


def pod(*containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod("p", "default", "uid-p", tuple(containers), init)


def two_nodes(cpus0: int, cpus1: int) -> list[NUMAZone]:
    return [
        NUMAZone(0, {"cpu": cpus0, "memory": 16 * GI}, TWO_NODE_COSTS[0]),
        NUMAZone(1, {"cpu": cpus1, "memory": 16 * GI}, TWO_NODE_COSTS[1]),
    ]


def test_worked_example_from_zones() -> None:
    """Two worker nodes, a pod of two 3-CPU containers, container scope, maxNUMA 8 (step 12).

    Node 1 (2 + 4 free): c1 fits NUMA 1 (k=1, minimal distance), leaving 1 CPU there; c2 fits no single
    node, {0,1} has 2 + 1 = 3 (k=2; the only 2-combination, so minimal): 100 - 2·12 + 6 = 82.
    Node 2 (8 + 8 free): both fit NUMA 0 (k=1): 100 - 12 + 6 = 94."""
    workload = pod(guaranteed("c1", 3), guaranteed("c2", 3))
    first = least_numa_nodes(two_nodes(2, 4), workload)
    assert (first.numa_nodes, first.min_distance, first.score) == (2, True, 82)
    assert first.requests == (
        ("c1", Requirement(BitMask.of(1), True)),
        ("c2", Requirement(BitMask.of(0, 1), True)),
    )
    second = least_numa_nodes(two_nodes(8, 8), workload)
    assert (second.numa_nodes, second.min_distance, second.score) == (1, True, 94)
    assert [r.nodes for _, r in second.requests] == [BitMask.of(0), BitMask.of(0)]


def _node(tmp: Path, host: SyntheticHost, reserved: str) -> NodeEmulator:
    sys_root, proc_root = write_tree(tmp, host)
    machine = Machine.from_host(hostprobe.probe(str(sys_root), str(proc_root)))
    config = parse_config(
        "apiVersion: kubelet.config.k8s.io/v1beta1\n"
        "kind: KubeletConfiguration\n"
        "topologyManagerPolicy: single-numa-node\n"
        "cpuManagerPolicy: static\n"
        f'reservedSystemCPUs: "{reserved}"\n'
    )
    return NodeEmulator(config, machine)


def test_worked_example_from_the_nodes_own_state(tmp_path: Path) -> None:
    """The same numbers from emulated nodes. Node 1: 2 × 4 cores × 2 threads, CPU 0 reserved (7 + 8
    allocatable); a 5-CPU pod lands on NUMA 0 and a 4-CPU pod on NUMA 1, leaving 2 + 4. Node 2: one thread
    per core, 9 cores per socket, CPUs 0 and 9 reserved: 8 + 8 free."""
    node1 = _node(tmp_path / "n1", SyntheticHost(), "0")
    for name, cpus in (("five", 5), ("four", 4)):
        report = node1.admit(Pod(name, "default", f"uid-{name}", (guaranteed("c", cpus),)))
        assert report.admitted
    assert [len(n.free_cpu_ids) for n in node_topology(node1.cm).numa_nodes] == [2, 4]
    node2 = _node(tmp_path / "n2", SyntheticHost(cores_per_socket=9, threads_per_core=1), "0,9")
    assert [len(n.free_cpu_ids) for n in node_topology(node2.cm).numa_nodes] == [8, 8]
    workload = pod(guaranteed("c1", 3), guaranteed("c2", 3))
    assert least_numa_nodes_for_node(node1, workload).score == 82
    assert least_numa_nodes_for_node(node2, workload).score == 94
    # Asking changes nothing on the node.
    assert [len(n.free_cpu_ids) for n in node_topology(node1.cm).numa_nodes] == [2, 4]
    # Pod scope (the effective request, 6 CPUs): node 1 needs both nodes, node 2 one.
    assert least_numa_nodes_for_node(node1, workload, scope="pod").score == 82
    assert least_numa_nodes_for_node(node2, workload, scope="pod").score == 94


FOUR_NODE_COSTS = {
    0: {0: 10, 1: 12, 2: 20, 3: 20},
    1: {0: 12, 1: 10, 2: 20, 3: 20},
    2: {0: 20, 1: 20, 2: 10, 3: 12},
    3: {0: 20, 1: 20, 2: 12, 3: 10},
}


def four_nodes(*cpus: int) -> list[NUMAZone]:
    return [NUMAZone(i, {"cpu": c, "memory": 8 * GI}, FOUR_NODE_COSTS[i]) for i, c in enumerate(cpus)]


def test_distance_not_minimal_when_no_close_pair_fits() -> None:
    """k=2: {0,1} and {2,3} have the minimum average (11); only {0,2}, {1,2}… (15) have room."""
    request = {"cpu": Quantity.parse(6), "memory": Quantity.parse("1Gi")}
    needed = numa_nodes_required(four_nodes(4, 0, 2, 0), request, QOSClass.GUARANTEED)
    assert needed == Requirement(BitMask.of(0, 2), False)
    assert least_numa_nodes(four_nodes(4, 0, 2, 0), pod(guaranteed("c", 6, "1Gi"))).score == 100 - 24
    # Once a close pair fits, it is taken at once even if a lower combination fits too.
    assert numa_nodes_required(four_nodes(4, 0, 3, 3), request, QOSClass.GUARANTEED) == Requirement(
        BitMask.of(2, 3), True
    )


def test_container_scope_keeps_the_worst_container_and_every_distance() -> None:
    # c1 takes NUMA 0 whole; c2 (6) then needs two nodes and only {1,2}, {1,3}… remain: not minimal.
    zones = four_nodes(4, 4, 2, 0)
    result = least_numa_nodes(zones, pod(guaranteed("c1", 4), guaranteed("c2", 6)))
    assert [r for _, r in result.requests] == [
        Requirement(BitMask.of(0), True),
        Requirement(BitMask.of(1, 2), False),
    ]
    assert (result.numa_nodes, result.min_distance, result.score) == (2, False, 76)
    # The zones given are not modified.
    assert zones[0].available["cpu"] == 4


def test_init_containers_come_first() -> None:
    result = least_numa_nodes(two_nodes(4, 4), pod(guaranteed("app", 4), init=(guaranteed("init", 2),)))
    # init takes 2 of NUMA 0 (its resources are not given back here, as in the plugin); app then needs NUMA 1.
    assert [(name, r.nodes) for name, r in result.requests] == [
        ("init", BitMask.of(0)),
        ("app", BitMask.of(1)),
    ]
    assert result.score == 94


def test_pod_scope_uses_the_effective_request() -> None:
    workload = pod(guaranteed("a", 2), guaranteed("b", 2), init=(guaranteed("init", 5),))
    result = least_numa_nodes(two_nodes(4, 4), workload, scope="pod")
    # max(2 + 2, 5) = 5 CPUs: no single node has 5.
    assert (result.numa_nodes, result.score) == (2, 82)
    assert result.requests == (("p", Requirement(BitMask.of(0, 1), True)),)


def test_requests_without_numa_resources() -> None:
    best_effort = pod(Container("c"))
    assert least_numa_nodes(two_nodes(1, 1), best_effort).score == 100
    assert least_numa_nodes(two_nodes(1, 1), best_effort, scope="pod").score == 100
    storage_only = pod(Container("c", requests={"ephemeral-storage": Quantity.parse("1Gi")}))
    assert least_numa_nodes(two_nodes(1, 1), storage_only).numa_nodes == 0
    # A non-NUMA resource next to NUMA ones: the plugin's isValidCombineResources (least_numa.go at
    # scheduler-plugins 903da7d) wants every requested name in every zone of a combination, so no
    # combination is valid and the pod scores 0 (MinNodeScore), the code's answer.
    mixed = pod(guaranteed("c", 2, extra={"ephemeral-storage": "1Gi"}))
    result = least_numa_nodes(two_nodes(2, 2), mixed)
    assert (result.numa_nodes, result.score) == (None, 0)
    assert result.requests == (("c", Requirement(None, False)),)


def test_does_not_fit() -> None:
    result = least_numa_nodes(two_nodes(2, 2), pod(guaranteed("c1", 1), guaranteed("c2", 4)))
    assert (result.numa_nodes, result.score) == (None, 0)
    assert result.requests[-1] == ("c2", Requirement(None, False))


def test_burstable_cpu_and_memory_always_fit_devices_do_not() -> None:
    burstable = Container(
        "c",
        requests={"cpu": Quantity.parse(64), "example.com/gpu": Quantity.parse(1)},
        limits={"example.com/gpu": Quantity.parse(1)},
    )
    zones = [
        NUMAZone(0, {"cpu": 1, "example.com/gpu": 0}, TWO_NODE_COSTS[0]),
        NUMAZone(1, {"cpu": 1, "example.com/gpu": 1}, TWO_NODE_COSTS[1]),
    ]
    assert least_numa_nodes(zones, pod(burstable)).requests == (("c", Requirement(BitMask.of(1), True)),)


def test_unknown_costs_count_as_255() -> None:
    zones = [NUMAZone(0, {"cpu": 2}, {0: 10}), NUMAZone(1, {"cpu": 2}, {1: 10}), NUMAZone(2, {"cpu": 2}, {})]
    request = {"cpu": Quantity.parse(4)}
    # Every pair has a cost unknown one way or both; {0,1} = (10+255+255+10)/4 is the minimum.
    assert numa_nodes_required(zones, request, QOSClass.GUARANTEED) == Requirement(BitMask.of(0, 1), True)


@pytest.mark.parametrize(
    ("count", "minimal", "max_numa", "score"),
    [
        (1, True, 8, 94),
        (1, False, 8, 88),
        (2, True, 8, 82),
        (8, False, 8, 4),
        (3, True, 16, 85),
        (1, True, 2, 75),
    ],
)
def test_normalize_score(count: int, minimal: bool, max_numa: int, score: int) -> None:
    assert normalize_score(count, minimal, max_numa) == score


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match='unknown scope "node"'):
        least_numa_nodes(two_nodes(1, 1), pod(), scope="node")
    with pytest.raises(ValueError, match="max_numa_nodes"):
        least_numa_nodes(two_nodes(1, 1), pod(), max_numa_nodes=0)


def test_zones_from_report_hugepages_and_devices(tmp_path: Path) -> None:
    host = SyntheticHost(node_memory_kib=8 * GIB_KIB, hugepages={0: {2048: (4, 4)}, 1: {1048576: (1, 1)}})
    sys_root, proc_root = write_tree(tmp_path, host)
    machine = Machine.from_host(hostprobe.probe(str(sys_root), str(proc_root)))
    config = parse_config(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "topologyManagerPolicy: best-effort\n---\n"
        "apiVersion: kubeletemu.io/v1alpha1\nkind: EmulatorConfiguration\ndevices:\n"
        "- resourceName: example.com/nic\n  devices:\n"
        "  - {id: a, numaNodes: [1]}\n  - {id: b, numaNodes: [1]}\n"
    )
    zones = zones_from_report(node_topology(NodeEmulator(config, machine).cm))
    assert [z.id for z in zones] == [0, 1]
    # CPU manager none: every CPU of the node counts.
    assert zones[0].available["cpu"] == 8
    assert zones[0].available["hugepages-2Mi"] == 4 * 2 * 1024 * 1024
    assert zones[1].available["hugepages-1Gi"] == GI
    assert "example.com/nic" not in zones[0].available
    assert zones[1].available["example.com/nic"] == 2
    assert zones[0].costs == {0: 10, 1: 21}


def test_for_node_scores_non_guaranteed_pods_100(tmp_path: Path) -> None:
    """The plugin's Score (score.go at scheduler-plugins 903da7d) returns 100 for a pod that is not
    Guaranteed before any strategy runs; the strategy's own numbers are still reported."""
    node = _node(tmp_path, SyntheticHost(), "0")
    burstable = pod(Container("c", requests={"cpu": Quantity.parse(64)}))
    result = least_numa_nodes_for_node(node, burstable)
    assert result.score == 100
    # cpu always "fits" for a Burstable pod: one NUMA node, minimal distance.
    assert (result.numa_nodes, result.min_distance) == (1, True)
    assert least_numa_nodes(zones_from_report(node_topology(node.cm)), burstable).score == 94
