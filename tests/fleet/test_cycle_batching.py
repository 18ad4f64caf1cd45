"""OpportunisticBatching in the cycle (kube-scheduler 1.35+, ``framework/runtime/batch.go``): a pod of the
same signature right after one that filled its node takes the next kept node, filtered alone; not before
1.35, not after 500 ms, not when the last node still fits, not for profiles with a non-signing plugin."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from kubeletemu.fleet.cycle import CycleOutcome, Scheduler, sorted_node_scores
from kubeletemu.fleet.cycle.batch import MAX_BATCH_AGE_S
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.nrtmatch.model import NodeResourceTopologyMatch
from kubeletemu.scheduler.objects import Node
from kubeletemu.scheduler.profile import Profile, default_profile

# Five nodes of 4 CPUs and distinct memory (distinct scores): a 4-CPU pod fills one.
MEMORY_GIB = (8, 16, 10, 14, 12)


def nodes_with(bound: dict[str, list[Pod]]) -> list[NodeInfo]:
    out = []
    for i, gib in enumerate(MEMORY_GIB):
        name = f"n{i}"
        allocatable = {
            "cpu": Quantity.parse("4"),
            "memory": Quantity.parse(f"{gib}Gi"),
            "pods": Quantity.parse("110"),
        }
        out.append(
            NodeInfo(
                name, Node(name, allocatable=MappingProxyType(allocatable)), pods=tuple(bound.get(name, ()))
            )
        )
    return out


def pod(index: int, cpus: str = "4") -> Pod:
    limits = {"cpu": Quantity.parse(cpus), "memory": Quantity.parse("1Gi")}
    return Pod(f"p{index}", "default", f"uid-{index}", (Container("c", limits, limits),))


def two_pods(
    version: str, gap_s: float, second_cpus: str = "4"
) -> tuple[Scheduler, CycleOutcome, CycleOutcome, int, list[NodeInfo]]:
    scheduler = Scheduler(default_profile(), version=version)
    first = scheduler.schedule(pod(1), nodes_with({}), now=10.0)
    assert first.chosen is not None
    bound = {first.chosen.name: [replace(pod(1), node_name=first.chosen.name)]}
    nodes = nodes_with(bound)
    start = scheduler.next_start_node_index
    second = scheduler.schedule(pod(2, second_cpus), nodes, now=10.0 + gap_s)
    return scheduler, first, second, start, nodes


@pytest.mark.parametrize("version", ["1.35", "1.36"])
def test_the_next_pod_takes_the_next_kept_node(version: str) -> None:
    scheduler, first, second, start, nodes = two_pods(version, 0.1)
    # The kept heap's next node: the second the first cycle's sortedNodeScores would pop (ties go by
    # the heap's order, as upstream, which a fresh cycle over the changed nodes need not repeat).
    assert first.chosen is not None and second.chosen is not None
    popped = sorted_node_scores(first.scores)
    assert popped[0].name == first.chosen.name
    assert second.chosen.name == popped[1].name != first.chosen.name
    # Only the hinted node was filtered; the rotation did not move.
    assert (second.evaluated_nodes, second.feasible_nodes) == (1, 1)
    assert scheduler.next_start_node_index == start
    full = Scheduler(default_profile(), version=version).schedule(pod(2), nodes)
    assert full.evaluated_nodes == len(MEMORY_GIB)


def test_not_before_135() -> None:
    second = two_pods("1.34", 0.1)[2]
    assert second.evaluated_nodes == len(MEMORY_GIB)


@pytest.mark.parametrize(
    ("gap_s", "second_cpus"),
    [(MAX_BATCH_AGE_S + 0.1, "4"), (0.1, "2")],
    ids=["state-older-than-500ms", "other-signature"],
)
def test_no_hint(gap_s: float, second_cpus: str) -> None:
    second = two_pods("1.36", gap_s, second_cpus)[2]
    assert second.evaluated_nodes == len(MEMORY_GIB)


def test_no_hint_when_the_last_node_still_fits() -> None:
    scheduler = Scheduler(default_profile(), version="1.36")
    first = scheduler.schedule(pod(1, "1"), nodes_with({}), now=0.0)
    assert first.chosen is not None
    bound = {first.chosen.name: [replace(pod(1, "1"), node_name=first.chosen.name)]}
    second = scheduler.schedule(pod(2, "1"), nodes_with(bound), now=0.1)
    assert second.evaluated_nodes == len(MEMORY_GIB)


def test_a_non_signing_plugin_turns_batching_off() -> None:
    default = default_profile()
    with_nrt = Profile("nrt", (*default.filters, NodeResourceTopologyMatch()), default.scores)
    assert Scheduler(with_nrt, version="1.36")._batch is None
    assert Scheduler(default, version="1.36")._batch is not None
    assert Scheduler(default, version="1.34")._batch is None
