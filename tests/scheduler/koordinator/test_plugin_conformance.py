"""koord_plugin.json: NodeNUMAResource's PreFilter, Filter and Reserve (nodenumaresource/plugin_test.go
TestPlugin_PreFilter, TestPlugin_Filter, TestFilterWithAmplifiedCPUs, TestFilterWithNUMANodeScoring,
TestPlugin_Reserve)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.lifecycle.resources import Resource
from kubeletemu.scheduler.framework import SUCCESS, Status
from kubeletemu.scheduler.koordinator.allocation import (
    NodeAllocation,
    PodAllocation,
    allocations_from,
    node_allocation,
)
from kubeletemu.scheduler.koordinator.args import NodeNUMAResourceArgs
from kubeletemu.scheduler.koordinator.cpu_topology import CPUTopology, cpu_topology_for_test
from kubeletemu.scheduler.koordinator.extension import KubeletCPUManagerPolicy, amplify
from kubeletemu.scheduler.koordinator.merge import NUMATopologyHint
from kubeletemu.scheduler.koordinator.options import NUMANodeResource, TopologyOptions
from kubeletemu.scheduler.koordinator.plugin import NodeNUMAResourcePlugin, PreFilterState
from kubeletemu.scheduler.koordinator.reservation import (
    EMPTY_RESTORE,
    DesignatedAllocation,
    NodeRestoreState,
    ReusableAlloc,
)
from kubeletemu.scheduler.koordinator.resources import NodeState
from tests.conformance.loader import rows
from tests.scheduler.koordinator.codec import (
    amplified_node,
    cpu_options,
    cpu_topology,
    make_pod,
    pod,
    pod_object,
    requested,
    resources,
    scoring_strategy,
)

TABLE = "koord_plugin"
GIB = 1024**3


def _options(row: dict[str, Any]) -> TopologyOptions:
    if not row["allocationState"]:
        return TopologyOptions()
    raw = row["cpuTopology"]
    topology = cpu_topology_for_test(*raw["buildCPUTopologyForTest"]) if "empty" not in raw else CPUTopology()
    kubelet = row["kubeletPolicy"]
    return replace(
        cpu_options(topology, topology.num_nodes, memory=Fraction(32 * GIB)),
        kubelet_policy=None
        if kubelet is None
        else KubeletCPUManagerPolicy(kubelet["policy"], kubelet["options"]),
    )


def numa_map(raw: list[dict[str, Any]] | None) -> dict[int, dict[str, Fraction]] | None:
    """``[{node, resources}]`` as a Go ``map[int]ResourceList`` (None: absent, a nil map)."""
    return None if raw is None else {item["node"]: resources(item["resources"]) for item in raw}


def designated(raw: dict[str, Any] | None) -> DesignatedAllocation | None:
    if raw is None:
        return None
    return DesignatedAllocation(numa_map(raw.get("numaNodeResource")) or {}, CPUSet(raw.get("cpuset", [])))


def _state(raw: dict[str, Any] | None) -> PreFilterState | None:
    if raw is None:
        return None
    requests = resources(raw["requests"]) if "requests" in raw else {}
    needed = raw.get("numCPUsNeeded", 0)
    if needed > 0 and "requests" not in raw:
        requests = {"cpu": Fraction(needed)}
    return PreFilterState(
        request_cpu_bind=raw.get("requestCPUBind", False),
        requests=requests,
        required_cpu_bind_policy=raw.get("requiredCPUBindPolicy", ""),
        preferred_cpu_bind_policy=raw.get("preferredCPUBindPolicy", ""),
        num_cpus_needed=needed,
        designated=designated(raw.get("designatedAllocation")),
    )


@pytest.mark.parametrize("row", rows(TABLE, "filter"))
def test_filter(row: dict[str, Any]) -> None:
    node = NodeState(
        name="test-node-1",
        options=_options(row),
        allocation=NodeAllocation(),
        labels=row["nodeLabels"],
        annotations=row["nodeAnnotations"],
        allocatable=Resource.from_list({"cpu": Fraction(96), "memory": Fraction(512 * GIB)}),
    )
    want = row["want"]
    expected = Status(SUCCESS) if want is None else Status(want["code"], tuple(want["reasons"]))
    result = NodeNUMAResourcePlugin().filter(_state(row["state"]), node)
    assert result.status == expected
    # The allocation Filter stored (a designated allocation's; nil for every other row).
    stored = row["wantAllocationResult"]
    if stored is None:
        assert result.allocation is None
    else:
        assert result.allocation is not None
        assert result.allocation.cpuset == CPUSet(stored["cpuset"])
        assert [(n.node, n.resources) for n in result.allocation.numa_node_resources] == [
            (item["node"], resources(item["resources"])) for item in stored["numaNodeResources"]
        ]


def _status(raw: dict[str, Any] | None) -> Status:
    """``want``: null = success (a nil status), else code and reasons."""
    return Status(SUCCESS) if raw is None else Status(raw["code"], tuple(raw["reasons"]))


@pytest.mark.parametrize("row", rows(TABLE, "preFilter"))
def test_pre_filter(row: dict[str, Any]) -> None:
    args = NodeNUMAResourceArgs()
    if row["defaultBindPolicy"]:
        args = NodeNUMAResourceArgs(default_cpu_bind_policy=row["defaultBindPolicy"])
    got = NodeNUMAResourcePlugin(args).pre_filter(pod_object(row["pod"]))
    want = row["want"]
    if want is not None and want["code"] == "Skip":
        # PreFilter returns Skip having written {skip: true}; the model returns that state.
        assert got == PreFilterState(skip=True)
        return
    if want is not None:
        assert got == _status(want)
        return
    raw = row["wantState"]
    assert got == PreFilterState(
        skip=raw["skip"],
        request_cpu_bind=raw["requestCPUBind"],
        requests=resources(raw["requests"]),
        required_cpu_bind_policy=raw["requiredCPUBindPolicy"],
        preferred_cpu_bind_policy=raw["preferredCPUBindPolicy"],
        num_cpus_needed=raw["numCPUsNeeded"],
        designated=designated(raw.get("designatedAllocation")),
    )


@pytest.mark.parametrize("row", rows(TABLE, "filterWithAmplifiedCPUs"))
def test_filter_with_amplified_cpus(row: dict[str, Any]) -> None:
    topology = cpu_topology(row["cpuTopology"])
    assert topology is not None
    ratio = float(row["nodeCPUAmplificationRatio"])
    allocatable, annotations = amplified_node(
        {"capacity": {"cpu": str(topology.num_cpus), "memory": "40Gi"}, "cpuAmplificationRatio": ratio}
    )
    options = TopologyOptions()
    if row["nodeHasNRT"]:
        options = TopologyOptions(
            cpu_topology=topology,
            max_ref_count=1,
            numa_node_resources=tuple(
                NUMANodeResource(
                    i,
                    {"cpu": Fraction(amplify(topology.cpus_per_node(), ratio)), "memory": Fraction(20 * GIB)},
                )
                for i in range(topology.num_nodes)
            ),
        )
    existing = [make_pod(p, f"existing-{i}") for i, p in enumerate(row["existingPods"])]
    node = NodeState(
        name="node-1",
        options=options,
        allocation=node_allocation(existing, options),
        annotations=annotations,
        allocatable=Resource.from_list(allocatable),
        requested=requested(existing),
    )
    plugin = NodeNUMAResourcePlugin()
    state = plugin.pre_filter(make_pod(row["pod"]))
    assert isinstance(state, PreFilterState)
    assert plugin.filter(state, node).status == _status(row["want"])


@pytest.mark.parametrize("row", rows(TABLE, "filterWithNUMANodeScoring"))
def test_filter_with_numa_node_scoring(row: dict[str, Any]) -> None:
    raw = row["node"]
    allocatable = resources(raw["capacity"])
    count = row["numaNodeCount"]
    per_node = {
        "cpu": Fraction(int(allocatable["cpu"] * 1000) // count, 1000),
        "memory": allocatable["memory"] // count,
    }
    topology = cpu_topology_for_test(count, 1, int(allocatable["cpu"]) // 2 // count, 2)
    options = TopologyOptions(
        cpu_topology=topology,
        max_ref_count=1,
        numa_node_resources=tuple(NUMANodeResource(i, dict(per_node)) for i in range(count)),
    )
    entries = [
        PodAllocation(
            uid=f"existing-{numa}-{i}",
            numa_node_resources=(NUMANodeResource(int(numa), resources(p["requests"])),),
        )
        for numa, pods in row["existingPods"].items()
        for i, p in enumerate(pods)
    ]
    node = NodeState(
        name=raw["name"],
        options=options,
        allocation=allocations_from(entries, topology),
        labels=raw["labels"],
        allocatable=Resource.from_list(allocatable),
    )
    plugin = NodeNUMAResourcePlugin(
        NodeNUMAResourceArgs(numa_scoring_strategy=scoring_strategy(row["numaScoringStrategy"]))
    )
    state = plugin.pre_filter(pod(row["pod"]))
    assert isinstance(state, PreFilterState)
    result = plugin.filter(state, node)
    assert result.status.ok
    assert result.affinity is not None and result.affinity.affinity is not None
    assert result.affinity.affinity.bits() == row["wantAffinity"]


def reserve_node(row: dict[str, Any]) -> NodeState:
    """test-node-1 (cpu 96, memory 512Gi) with, given a topology, options {CPUTopology, MaxRefCount 1,
    cpu = CPUsPerNode on NUMA nodes 0..NumSockets-1}, the allocatedCPUs held by one pod, each matched
    reservation's remaining CPUs under its UID and the extra NUMA allocations of one more pod."""
    topology = cpu_topology(row["cpuTopology"])
    options = TopologyOptions()
    allocation = NodeAllocation()
    if topology is not None:
        options = cpu_options(topology, topology.num_sockets)
        cpus = CPUSet(row["allocatedCPUs"])
        held = [PodAllocation(uid="allocated", cpuset=cpus)] if row["allocatedCPUs"] else []
        # addCPUs registers the reservation's UID first, so its NUMA resources are never added.
        held += [
            PodAllocation(uid=f"reservation-{i}", cpuset=CPUSet(m.get("remainedCPUs", [])))
            for i, m in enumerate(row.get("matched", []))
        ]
        extra = row.get("extraNUMAAllocations", [])
        if extra:
            held.append(
                PodAllocation(
                    uid="extra",
                    numa_node_resources=tuple(
                        NUMANodeResource(e["node"], resources(e["resources"])) for e in extra
                    ),
                )
            )
        allocation = allocations_from(held, topology)
    return NodeState(
        name="test-node-1",
        options=options,
        allocation=allocation,
        labels=row["nodeLabels"],
        allocatable=Resource.from_list({"cpu": Fraction(96), "memory": Fraction(512 * GIB)}),
    )


def restore_state(row: dict[str, Any]) -> NodeRestoreState:
    """The restore state the test writes: matched as given, merged fields as injected (others nil), and
    the reservation nominated unless skipNominate."""
    matched = tuple(
        ReusableAlloc(
            uid=f"reservation-{i}",
            name="test-reservation",
            allocate_policy=row["reservationAllocatePolicy"],
            remained_cpus=CPUSet(m.get("remainedCPUs", [])),
            allocatable=numa_map(m.get("allocatable")),
            remained=numa_map(m.get("remained")),
        )
        for i, m in enumerate(row.get("matched", []))
    )
    if not matched:
        return EMPTY_RESTORE
    return NodeRestoreState(
        matched=matched,
        nominated=None if row["skipNominate"] else matched[0].uid,
        merged_matched_allocatable=numa_map(row.get("mergedMatchedAllocatable")) or {},
        merged_matched_allocated=numa_map(row.get("mergedMatchedAllocated")) or {},
    )


def reserve_state(
    raw: dict[str, Any] | None, pod_labels: dict[str, str] | None = None
) -> PreFilterState | None:
    if raw is None:
        return None
    return PreFilterState(
        request_cpu_bind=raw.get("requestCPUBind", False),
        requests=resources(raw.get("requests", {})),
        required_cpu_bind_policy=raw.get("requiredCPUBindPolicy", ""),
        preferred_cpu_bind_policy=raw.get("preferredCPUBindPolicy", ""),
        pod_numa_topology_policy=raw.get("podNUMATopologyPolicy", ""),
        num_cpus_needed=raw.get("numCPUsNeeded", 0),
        has_reservation_affinity=raw.get("hasReservationAffinity", False),
        reservation_ignored=(pod_labels or {}).get("scheduling.koordinator.sh/reservation-ignored") == "true",
    )


@pytest.mark.parametrize("row", rows(TABLE, "reserve"))
def test_reserve(row: dict[str, Any]) -> None:
    """Reserve's status and the allocation it stores: CPU set and NUMA resources (none = empty)."""
    affinity = None if row["numaAffinity"] is None else NUMATopologyHint(BitMask.of(*row["numaAffinity"]))
    plugin = NodeNUMAResourcePlugin()
    state, node = reserve_state(row["state"], row["podLabels"]), reserve_node(row)
    restore = restore_state(row)
    got = plugin.reserve_allocation(state, node, affinity, restore)
    assert got.status == _status(row["want"])
    assert plugin.reserve(state, node, affinity, restore) == got.status
    allocation = got.allocation
    cpus = allocation.cpuset if allocation is not None else CPUSet()
    numa = allocation.numa_node_resources if allocation is not None else ()
    assert cpus == CPUSet(row["wantCPUSet"])
    assert [(n.node, n.resources) for n in numa] == [
        (raw["node"], resources(raw["resources"])) for raw in row["wantNUMAResource"]
    ]
