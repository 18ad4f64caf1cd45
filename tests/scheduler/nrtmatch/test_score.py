"""Score edge cases, the crash, and the spec's worked example (score.go, least_numa.go, the allocation
strategies at scheduler-plugins 903da7d)."""

from __future__ import annotations

import pytest

from kubeletemu.scheduler.framework import PluginPanic
from kubeletemu.scheduler.nrtmatch.score import score_pod
from kubeletemu.scheduler.objects import NodeResourceTopology
from tests.scheduler.nrtmatch.build import COSTS_2, SINGLE_CONTAINER, SINGLE_POD, container, nrt, pod, zone

SMALL_BIG = (
    {"cpu": 4, "memory": "4Gi"},
    {"cpu": 8, "memory": "8Gi"},
)


def two(first: dict[str, str | int], second: dict[str, str | int], **attrs: str) -> NodeResourceTopology:
    return nrt(zone("node-0", first, COSTS_2[0]), zone("node-1", second, COSTS_2[1]), attributes=attrs)


SMALL = pod(container("c", {"cpu": 2, "memory": "2Gi"}))


@pytest.mark.parametrize(
    ("strategy", "score"),
    [
        # node-0: 50 per resource; node-1: 75 (least) / 25 (most); the minimum non-zero zone score.
        ("LeastAllocated", 50),
        ("MostAllocated", 25),
        ("BalancedAllocation", 100),
    ],
)
def test_allocation_strategies(strategy: str, score: int) -> None:
    assert score_pod(SMALL, two(*SMALL_BIG, **SINGLE_CONTAINER), strategy, {}) == score


def test_minimum_skips_zones_scoring_zero() -> None:
    tiny, big = {"cpu": 1, "memory": "1Gi"}, SMALL_BIG[1]
    assert score_pod(SMALL, two(tiny, big, **SINGLE_CONTAINER), "MostAllocated", {}) == 25
    assert score_pod(SMALL, two(big, tiny, **SINGLE_CONTAINER), "MostAllocated", {}) == 25
    assert score_pod(SMALL, two(tiny, tiny, **SINGLE_CONTAINER), "MostAllocated", {}) == 0


def test_weights_and_rounding() -> None:
    topology = two({"cpu": 4, "memory": "8Gi"}, {"cpu": 4, "memory": "8Gi"}, **SINGLE_CONTAINER)
    # cpu (4-2)*100/4 = 50, memory (8-2)*100/8 = 75.
    assert score_pod(SMALL, topology, "LeastAllocated", {}) == 62
    assert score_pod(SMALL, topology, "LeastAllocated", {"cpu": 3}) == (50 * 3 + 75) // 4
    # Weights below 1 count as 1.
    assert score_pod(SMALL, topology, "LeastAllocated", {"cpu": -5, "memory": 0}) == 62
    # Quantity.Value() rounds up: 500m of 1500m is 1 of 2.
    milli = two({"cpu": "1500m", "memory": "8Gi"}, {"cpu": "1500m", "memory": "8Gi"}, **SINGLE_CONTAINER)
    half = pod(container("c", {"cpu": "500m", "memory": "8Gi"}))
    assert score_pod(half, milli, "MostAllocated", {}) == (50 + 100) // 2


def test_balanced_allocation_missing_resource_is_a_full_fraction() -> None:
    topology = two({"cpu": 4}, {"cpu": 4}, **SINGLE_CONTAINER)
    # fractions 0.5 and 1: sample variance 0.125, (1 - 0.125) * 100 = 87.5.
    assert score_pod(SMALL, topology, "BalancedAllocation", {}) == 87


def test_container_scope_truncated_mean_without_subtraction() -> None:
    topology = two({"cpu": 4, "memory": "8Gi"}, {"cpu": 4, "memory": "8Gi"}, **SINGLE_CONTAINER)
    workload = pod(container("a", {"cpu": 2, "memory": "2Gi"}), container("b", {"cpu": 1, "memory": "2Gi"}))
    # a: (50 + 75) / 2 = 62; b: (75 + 75) / 2 = 75; both against the full zones; mean 68.5.
    assert score_pod(workload, topology, "LeastAllocated", {}) == 68
    # Pod scope: cpu 3, memory 4Gi: (25 + 50) / 2.
    pod_scope = two({"cpu": 4, "memory": "8Gi"}, {"cpu": 4, "memory": "8Gi"}, **SINGLE_POD)
    assert score_pod(workload, pod_scope, "LeastAllocated", {}) == 37


def test_when_score_answers_without_looking() -> None:
    topology = two(*SMALL_BIG, **SINGLE_CONTAINER)
    burstable = pod(container("c", {"cpu": 2}, guaranteed=False))
    assert score_pod(burstable, topology, "LeastAllocated", {}) == 100
    assert score_pod(burstable, None, "LeastNUMANodes", {}) == 100
    assert score_pod(SMALL, None, "LeastAllocated", {}) == 0
    best_effort_policy = two(*SMALL_BIG, topologyManagerPolicy="best-effort")
    assert score_pod(SMALL, best_effort_policy, "LeastAllocated", {}) == 0
    # LeastNUMANodes scores under every policy.
    assert score_pod(SMALL, best_effort_policy, "LeastNUMANodes", {}) == 94
    assert score_pod(SMALL, two(*SMALL_BIG), "LeastNUMANodes", {}) == 94


def test_worked_example() -> None:
    """scheduler-side.md §1: 2 zones, costs 10/20, two 3-CPU containers, container scope, maxNUMA 8."""
    workload = pod(container("c1", {"cpu": 3, "memory": "1Gi"}), container("c2", {"cpu": 3, "memory": "1Gi"}))
    busy = two({"cpu": 2, "memory": "8Gi"}, {"cpu": 4, "memory": "8Gi"}, **SINGLE_CONTAINER)
    idle = two({"cpu": 8, "memory": "8Gi"}, {"cpu": 8, "memory": "8Gi"}, **SINGLE_CONTAINER)
    assert score_pod(workload, busy, "LeastNUMANodes", {}) == 82
    assert score_pod(workload, idle, "LeastNUMANodes", {}) == 94
    # maxNUMA 4 from the attribute: step 25.
    four = two({"cpu": 8, "memory": "8Gi"}, {"cpu": 8, "memory": "8Gi"}, topologyManagerMaxNUMANodes="4")
    assert score_pod(workload, four, "LeastNUMANodes", {}) == 100 - 25 + 12


def test_least_numa_ephemeral_storage_scores_zero() -> None:
    with_storage = pod(container("c", {"cpu": 1, "memory": "1Gi", "ephemeral-storage": "1Gi"}))
    assert score_pod(with_storage, two(*SMALL_BIG), "LeastNUMANodes", {}) == 0
    assert score_pod(with_storage, two(*SMALL_BIG, **SINGLE_POD), "LeastNUMANodes", {}) == 0


def _gapped(**attrs: str) -> NodeResourceTopology:
    costs = {0: {0: 10, 2: 20}, 2: {0: 20, 2: 10}}
    return nrt(
        zone("node-0", {"cpu": 4, "memory": "8Gi"}, costs[0]),
        zone("node-2", {"cpu": 8, "memory": "8Gi"}, costs[2]),
        attributes=attrs,
    )


def test_non_contiguous_ids_panic_in_score_for_each_numa_node() -> None:
    with pytest.raises(PluginPanic) as info:
        score_pod(SMALL, _gapped(**SINGLE_CONTAINER), "LeastAllocated", {})
    assert (info.value.crash.what, info.value.crash.where) == (
        "index out of range [2] with length 2",
        "noderesourcetopology.scoreForEachNUMANode",
    )


def test_non_contiguous_ids_panic_in_least_numa_subtraction_only_when_reached() -> None:
    # 2 CPUs fit node-0, subtracted from index 0: no panic.
    assert score_pod(SMALL, _gapped(), "LeastNUMANodes", {}) == 94
    # 6 CPUs fit only node-2: subtractFromNUMAs indexes the 2-zone list at 2.
    six = pod(container("c", {"cpu": 6, "memory": "1Gi"}))
    with pytest.raises(PluginPanic) as info:
        score_pod(six, _gapped(), "LeastNUMANodes", {})
    assert str(info.value) == "noderesourcetopology.subtractFromNUMAs: index out of range [2] with length 2"
    # Pod scope subtracts nothing.
    assert score_pod(six, _gapped(topologyManagerScope="pod"), "LeastNUMANodes", {}) == 94


def test_zones_out_of_id_order_subtract_from_the_wrong_zone() -> None:
    # node-1 listed first: NUMA id 1 is list index 0, but the subtraction takes from index 1 (node-0).
    topology = nrt(
        zone("node-1", {"cpu": 8, "memory": "8Gi"}, COSTS_2[1]),
        zone("node-0", {"cpu": 2, "memory": "8Gi"}, COSTS_2[0]),
    )
    workload = pod(container("a", {"cpu": 6, "memory": "1Gi"}), container("b", {"cpu": 6, "memory": "1Gi"}))
    # Both containers find node-1 with 8 CPUs: one NUMA node, minimal distance. Subtracting from the
    # right zone would have left b no fit at all (0).
    assert score_pod(workload, topology, "LeastNUMANodes", {}) == 94
