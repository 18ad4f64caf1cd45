"""koord_scoring.json: NodeNUMAResource's Score (nodenumaresource/scoring_test.go TestNUMANodeScore,
TestPlugin_Score, TestScoreWithAmplifiedCPUs)."""

from __future__ import annotations

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
from kubeletemu.scheduler.koordinator.args import NodeNUMAResourceArgs, ScoringStrategy
from kubeletemu.scheduler.koordinator.cpu_topology import cpu_topology_for_test
from kubeletemu.scheduler.koordinator.extension import allow_use_cpuset, amplify
from kubeletemu.scheduler.koordinator.merge import NUMATopologyHint
from kubeletemu.scheduler.koordinator.options import NUMANodeResource, TopologyOptions
from kubeletemu.scheduler.koordinator.plugin import NodeNUMAResourcePlugin, PreFilterState
from kubeletemu.scheduler.koordinator.resources import NodeState
from tests.conformance.loader import rows
from tests.scheduler.koordinator.codec import (
    amplified_node,
    cpu_options,
    cpu_topology,
    make_pod,
    pod,
    requested,
    resources,
    scoring_strategy,
)
from tests.scheduler.koordinator.test_plugin_conformance import restore_state

TABLE = "koord_scoring"


def _node(raw: dict[str, Any], count: int, existing: list[dict[str, Any]]) -> NodeState:
    allocatable = resources(raw["capacity"])
    options = TopologyOptions()
    if count > 0:
        milli = int(allocatable["cpu"] * 1000) // count
        memory = int(allocatable["memory"]) // count
        cores = int(allocatable["cpu"]) // 2 // count
        options = TopologyOptions(
            cpu_topology=cpu_topology_for_test(count, 1, cores, 2),
            max_ref_count=1,
            numa_node_resources=tuple(
                NUMANodeResource(i, {"cpu": Fraction(milli, 1000), "memory": Fraction(memory)})
                for i in range(count)
            ),
        )
    entries = []
    for index, item in enumerate(existing):
        placed = pod(item, f"existing-{index}")
        cpus = int(resources(item["requests"])["cpu"]) if allow_use_cpuset(placed) else 0
        entries.append(
            PodAllocation(
                uid=item.get("uid", ""),
                cpuset=CPUSet(range(cpus)),
                numa_node_resources=(NUMANodeResource(0, resources(item["requests"])),),
            )
        )
    return NodeState(
        name=raw["name"],
        options=options,
        allocation=allocations_from(entries, options.cpu_topology),
        labels=raw["labels"],
        allocatable=Resource.from_list(allocatable),
    )


@pytest.mark.parametrize("row", rows(TABLE, "numaNodeScore"))
def test_numa_node_score(row: dict[str, Any]) -> None:
    plugin = NodeNUMAResourcePlugin(
        NodeNUMAResourceArgs(scoring_strategy=scoring_strategy(row["scoringStrategy"]))
    )
    state = plugin.pre_filter(pod(row["pod"]))
    assert isinstance(state, PreFilterState)
    got = []
    for raw in row["nodes"]:
        existing = [p for p in row["existingPods"] if p["node"] == raw["name"]]
        node = _node(raw, row["numaNodeCounts"].get(raw["name"], 0), existing)
        result = plugin.filter(state, node)
        assert result.status.ok
        got.append({"name": raw["name"], "score": plugin.score(state, node, result.affinity)})
    assert got == row["expectedScores"]


def _score_state(raw: dict[str, Any] | None) -> PreFilterState | None:
    """The preFilterState the test writes; requests become cpu = numCPUsNeeded when that is > 0."""
    if raw is None:
        return None
    needed = raw.get("numCPUsNeeded", 0)
    requests = resources(raw.get("requests", {}))
    if needed > 0:
        requests = {"cpu": Fraction(needed)}
    return PreFilterState(
        request_cpu_bind=raw.get("requestCPUBind", False),
        requests=requests,
        required_cpu_bind_policy=raw.get("requiredCPUBindPolicy", ""),
        preferred_cpu_bind_policy=raw.get("preferredCPUBindPolicy", ""),
        pod_numa_topology_policy=raw.get("podNUMATopologyPolicy", ""),
        num_cpus_needed=needed,
    )


@pytest.mark.parametrize("row", rows(TABLE, "score"))
def test_score(row: dict[str, Any]) -> None:
    topology = cpu_topology(row["cpuTopology"])
    options = TopologyOptions()
    allocation = NodeAllocation()
    if topology is not None:
        options = cpu_options(topology, topology.num_nodes)
        extra = tuple(
            NUMANodeResource(e["node"], resources(e["resources"])) for e in row["extraNUMAAllocations"]
        )
        # Each matched reservation's remaining CPUs under its UID (addCPUs: its NUMA resources never follow).
        held = [
            PodAllocation(uid=f"reservation-{i}", cpuset=CPUSet(m.get("remainedCPUs", [])))
            for i, m in enumerate(row["matched"])
        ]
        held += [PodAllocation(uid="extra", numa_node_resources=extra)] if extra else []
        allocation = allocations_from(held, topology)
    total = 96 if topology is None else topology.cpus().size()
    node = NodeState(
        name="test-node-1",
        options=options,
        allocation=allocation,
        labels=row["nodeLabels"],
        allocatable=Resource.from_list({"cpu": Fraction(total), "memory": Fraction(512 * 1024**3)}),
    )
    plugin = NodeNUMAResourcePlugin(
        NodeNUMAResourceArgs(scoring_strategy=ScoringStrategy("MostAllocated", (("cpu", 1),)))
    )
    affinity = None if row["numaAffinity"] is None else NUMATopologyHint(BitMask.of(*row["numaAffinity"]))
    want = row["want"]
    expected = Status(SUCCESS) if want is None else Status(want["code"], tuple(want["reasons"]))
    state = _score_state(row["state"])
    assert plugin.score_status(state, node, affinity, restore_state(row)) == (row["wantScore"], expected)


@pytest.mark.parametrize("row", rows(TABLE, "scoreWithAmplifiedCPUs"))
def test_score_with_amplified_cpus(row: dict[str, Any]) -> None:
    plugin = NodeNUMAResourcePlugin(
        NodeNUMAResourceArgs(scoring_strategy=scoring_strategy(row["scoringStrategy"]))
    )
    scheduled = make_pod(row["pod"])
    state = plugin.pre_filter(scheduled)
    assert isinstance(state, PreFilterState) and not state.skip
    existing = [make_pod(p, f"existing-{i}") for i, p in enumerate(row["existingPods"])]
    got = []
    for raw in row["nodes"]:
        allocatable, annotations = amplified_node(raw)
        options = TopologyOptions()
        if raw["name"] in row["nodeHasNRT"]:
            topology = cpu_topology_for_test(*row["cpuTopologies"][raw["name"]])
            ratio = float(raw["cpuAmplificationRatio"])
            options = TopologyOptions(
                cpu_topology=topology,
                max_ref_count=1,
                numa_node_resources=tuple(
                    NUMANodeResource(
                        i,
                        {
                            "cpu": Fraction(amplify(topology.cpus_per_node(), ratio)),
                            "memory": Fraction(20 * 1024**3),
                        },
                    )
                    for i in range(topology.num_nodes)
                ),
            )
        on_node = [p for p in existing if p.node_name == raw["name"]]
        node = NodeState(
            name=raw["name"],
            options=options,
            allocation=node_allocation(on_node, options),
            annotations=annotations,
            allocatable=Resource.from_list(allocatable),
            requested=requested(on_node),
        )
        got.append({"name": raw["name"], "score": plugin.score(state, node, None)})
    assert got == row["wantScoreList"]
