"""NodeNUMAResource and its design model on koordlet's NRT of an emulated node; args; crashes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubeletemu.config import ConfigError
from kubeletemu.config.fields import Where
from kubeletemu.manifest import pod_from_manifest
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import NodeInfo, PluginPanic, Status
from kubeletemu.scheduler.koordinator import (
    NodeNUMAResource,
    NodeNUMAResourceArgs,
    NodeNUMAResourceDesign,
    ScoringStrategy,
)
from kubeletemu.scheduler.koordinator.koordlet import koordlet_node_resource_topology
from kubeletemu.scheduler.koordinator.model import node_state
from kubeletemu.scheduler.koordinator.options import topology_options
from kubeletemu.scheduler.objects import Node, NodeResourceTopology
from tests.podresources.nodes import (
    WORKED_EXAMPLE_CONFIG,
    WORKED_EXAMPLE_HOST,
    WORKED_EXAMPLE_PODS,
    admit_all,
    make_emulator,
)

POLICY_LABEL = "node.koordinator.sh/numa-topology-policy"


def _pod(cpu: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> Pod:
    resources = {"cpu": cpu, "memory": "1Gi"}
    return pod_from_manifest(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "p",
                "namespace": "d",
                "labels": labels or {},
                "annotations": annotations or {},
            },
            "spec": {
                "priority": 9000,
                "containers": [{"name": "c", "resources": {"requests": resources, "limits": resources}}],
            },
        }
    )


LSR = {"koordinator.sh/qosClass": "LSR"}


@pytest.fixture
def nrt(tmp_path: Path) -> NodeResourceTopology:
    """The worked example (two NUMA nodes of 4 CPUs, reserved 0-1, a kubelet-pinned pod) in pod scope."""
    config = WORKED_EXAMPLE_CONFIG.replace("topologyManagerScope: container", "topologyManagerScope: pod")
    emulator = make_emulator(tmp_path, WORKED_EXAMPLE_HOST, config)
    admit_all(emulator, WORKED_EXAMPLE_PODS)
    return koordlet_node_resource_topology(emulator)


def test_koordlet_nrt(nrt: NodeResourceTopology) -> None:
    assert nrt.name == "worker-1"
    assert nrt.topology_policies == ("SingleNUMANodePodLevel",)
    assert [(z.name, z.resource("cpu").allocatable.amount) for z in nrt.zones if z.resource("cpu")] == [
        ("node-0", 4),
        ("node-1", 4),
    ]
    allocs = json.loads(nrt.annotations["node.koordinator.sh/pod-cpu-allocs"])
    assert allocs == [
        {"namespace": "ns1", "name": "gu-pod", "uid": "uid-gu", "cpuset": "2,4", "managedByKubelet": True}
    ]
    policy = json.loads(nrt.annotations["kubelet.koordinator.sh/cpu-manager-policy"])
    assert policy == {"policy": "static", "reservedCPUs": "0-1"}
    options = topology_options(nrt)
    assert str(options.reserved_cpus) == "0-2,4"
    assert [(n.node, n.resources["cpu"]) for n in options.numa_node_resources] == [(0, 1), (1, 3)]
    assert options.numa_topology_policy == "SingleNUMANode"


def test_shipped_single_numa_node(nrt: NodeResourceTopology) -> None:
    model = NodeNUMAResource()
    node = NodeInfo("worker-1", topology=nrt)
    assert model.policy(_pod("1", LSR), node) == "SingleNUMANode"
    # 1 CPU fits either NUMA node; the NUMA scorer (LeastAllocated) prefers NUMA 1 (3 CPUs free).
    assert model.filter(_pod("1", LSR), node).ok
    assert model.score(_pod("1", LSR), node) == 78
    assert model.score(_pod("3", LSR), node) == 45
    assert model.filter(_pod("4", LSR), node) == Status.unschedulable(
        "Unaligned NUMA Hint cause cpu prefer [11] among [11],memory prefer [11] among [11]"
    )
    assert model.reserve(_pod("3", LSR), node).ok
    # Reserve also says what it allocated: 3 CPUs, all on NUMA node 1, with that node's NUMA resources.
    reserved = model.reserve_allocation(_pod("3", LSR), node)
    assert reserved.status.ok and reserved.allocation is not None
    topology = node_state(node).options.cpu_topology
    assert topology is not None
    assert reserved.allocation.cpuset.size() == 3
    assert reserved.allocation.cpuset.is_subset_of(topology.cpus_in_numa_nodes(1))
    assert [n.node for n in reserved.allocation.numa_node_resources] == [1]


def _node(labels: dict[str, str], nrt: NodeResourceTopology) -> NodeInfo:
    return NodeInfo("worker-1", node=Node("worker-1", labels=labels), topology=nrt)


def test_unknown_policy_label_crashes_shipped(nrt: NodeResourceTopology) -> None:
    with pytest.raises(PluginPanic) as caught:
        NodeNUMAResource().filter(_pod("1"), _node({POLICY_LABEL: "None"}, nrt))
    assert caught.value.crash.what == "invalid memory address or nil pointer dereference"
    assert caught.value.crash.where == "topologymanager.(*topologyManager).calculateAffinity"
    # The design reads the kubelet's policy first and never crashes.
    assert NodeNUMAResourceDesign().filter(_pod("1"), _node({POLICY_LABEL: "None"}, nrt)).ok


def test_label_wins_over_kubelet_in_shipped_code(nrt: NodeResourceTopology) -> None:
    node = _node({POLICY_LABEL: "BestEffort"}, nrt)
    assert NodeNUMAResource().policy(_pod("4"), node) == "BestEffort"
    assert NodeNUMAResourceDesign().policy(_pod("4"), node) == "SingleNUMANode"
    # BestEffort admits at Reserve only: 4 CPUs spread over both NUMA nodes (1 + 3 free) pass, 5 do not.
    assert NodeNUMAResource().reserve(_pod("4"), node).ok
    assert NodeNUMAResource().filter(_pod("5"), node).ok
    assert NodeNUMAResource().reserve(_pod("5"), node) == Status.unschedulable("Insufficient NUMA cpu")


def test_pod_policy_conflict(nrt: NodeResourceTopology) -> None:
    spec = {"scheduling.koordinator.sh/numa-topology-spec": '{"numaTopologyPolicy":"Restricted"}'}
    status = NodeNUMAResource().filter(_pod("1", annotations=spec), NodeInfo("worker-1", topology=nrt))
    assert status == Status("UnschedulableAndUnresolvable", ("node(s) NUMA Topology policy not match",))


def test_design_score_counts_numa_nodes(nrt: NodeResourceTopology) -> None:
    # Nothing Koordinator-accounted yet: the pod alone uses 1 of 2 NUMA nodes.
    assert NodeNUMAResourceDesign().score(_pod("1", LSR), NodeInfo("worker-1", topology=nrt)) == 50


def _where() -> Where:
    return Where("sched.yaml")


def test_args_defaults_and_errors() -> None:
    assert NodeNUMAResourceArgs.from_args({}, _where()) == NodeNUMAResourceArgs()
    args = NodeNUMAResourceArgs.from_args(
        {"numaScoringStrategy": {"type": "MostAllocated"}, "defaultCPUBindPolicy": "SpreadByPCPUs"}, _where()
    )
    assert args.numa_scoring_strategy == ScoringStrategy("MostAllocated", ())
    assert args.numa_scorer().weights == {"cpu": 1, "memory": 1}  # weights come from scoringStrategy
    assert args.default_cpu_bind_policy == "SpreadByPCPUs"
    bad: list[tuple[dict[str, Any], str]] = [
        ({"defaultCPUBindPolicy": "Default"}, "sched.yaml: defaultCPUBindPolicy: Invalid value"),
        ({"scoringStrategy": {"type": "BalancedAllocation"}}, "sched.yaml: scoringStrategy.type"),
        (
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]}},
            "sched.yaml: scoringStrategy.resources[0].weight",
        ),
    ]
    for raw, field in bad:
        with pytest.raises(ConfigError, match=field.replace("[", r"\[").replace("]", r"\]")):
            NodeNUMAResourceArgs.from_args(raw, _where())
