"""The two KEP-6007 tie-breakers on their own: the first draft's combine rules (none, one, agree, disagree)
and per-signal verdicts, the current draft's weighted score, and the decisions they record."""

from __future__ import annotations

import logging

import pytest

from kubeletemu.bitmask import BitMask
from kubeletemu.topologymanager import NUMAInfo, PolicyOptions, TopologyHint, new_policy
from kubeletemu.topologymanager.numa_scorer import (
    WEIGHTED_SCORE,
    AllocationStrategyTieBreaker,
    FixedSignal,
    PreferMostAllocatedTieBreaker,
    SignalScores,
    TieBreakDecision,
    combine_signals,
    compare_signal,
    new_tie_breaker,
    utilization,
)
from kubeletemu.topologymanager.policy_options import NUMAAllocationStrategy

N0, N1, N2 = BitMask.of(0), BitMask.of(1), BitMask.of(2)
MOST = NUMAAllocationStrategy.MOST_ALLOCATED
LEAST = NUMAAllocationStrategy.LEAST_ALLOCATED


# -- the combine rules ----------------------------------------------------------------------------------

# (cpu verdict, memory verdict) -> (combined, signals that carried it); True prefers the candidate.
COMBINE_CASES = {
    "neither decides": (None, None, None, ()),
    "cpu only, candidate": (True, None, True, ("cpu",)),
    "cpu only, current": (False, None, False, ("cpu",)),
    "memory only, candidate": (None, True, True, ("memory",)),
    "memory only, current": (None, False, False, ("memory",)),
    "agree on candidate": (True, True, True, ("cpu", "memory")),
    "agree on current": (False, False, False, ("cpu", "memory")),
    "disagree, cpu for candidate": (True, False, None, ()),
    "disagree, memory for candidate": (False, True, None, ()),
}


@pytest.mark.parametrize(("cpu", "memory", "pick", "signals"), COMBINE_CASES.values(), ids=COMBINE_CASES)
def test_combine_signals(
    cpu: bool | None, memory: bool | None, pick: bool | None, signals: tuple[str, ...]
) -> None:
    assert combine_signals(cpu, memory) == (pick, signals)


def _table(**nodes: tuple[int, int]) -> dict[int, tuple[int, int]]:
    return {int(k[1:]): v for k, v in nodes.items()}


# Each case: cpu table, memory table, expected winner between current N0 and candidate N1 (None: narrowest).
CHOOSE_CASES = {
    "no signal at all (both managers non-static)": (None, None, None),
    "equal utilisation everywhere": (_table(n0=(2, 8), n1=(2, 8)), _table(n0=(1, 4), n1=(1, 4)), None),
    "cpu decides alone, busier candidate": (_table(n0=(0, 8), n1=(2, 8)), None, N1),
    "cpu decides alone, busier current": (_table(n0=(3, 8), n1=(2, 8)), _table(n0=(1, 4), n1=(1, 4)), N0),
    "memory decides alone": (None, _table(n0=(1, 4), n1=(3, 4)), N1),
    "both agree": (_table(n0=(0, 8), n1=(4, 8)), _table(n0=(0, 4), n1=(1, 4)), N1),
    "they disagree": (_table(n0=(4, 8), n1=(0, 8)), _table(n0=(0, 4), n1=(1, 4)), None),
    # Equal raw counts, different allocatable (reserved CPUs): the ratio decides, not the count.
    "reserved CPUs make the same count busier": (_table(n0=(2, 8), n1=(2, 6)), None, N1),
    # A node without allocatable CPUs has no CPU score: undecided, memory decides.
    "a node without capacity gives no verdict": (
        _table(n0=(0, 0), n1=(2, 8)),
        _table(n0=(2, 4), n1=(0, 4)),
        N0,
    ),
}


@pytest.mark.parametrize(("cpu", "memory", "winner"), CHOOSE_CASES.values(), ids=CHOOSE_CASES)
def test_prefer_most_allocated_choose(
    cpu: dict[int, tuple[int, int]] | None, memory: dict[int, tuple[int, int]] | None, winner: BitMask | None
) -> None:
    breaker = PreferMostAllocatedTieBreaker(FixedSignal("cpu", cpu), FixedSignal("memory", memory))
    assert breaker.choose(N0, N1, both_preferred=True) == winner
    # Symmetric: the verdict does not depend on which mask the fold holds.
    assert breaker.choose(N1, N0, both_preferred=True) == winner
    assert len(breaker.drain()) == (0 if winner is None else 2)


def test_prefer_most_allocated_applies_only_to_preferred_single_nodes() -> None:
    cpu = FixedSignal("cpu", _table(n0=(0, 8), n1=(4, 8), n2=(8, 8)))
    breaker = PreferMostAllocatedTieBreaker(cpu, None)
    assert breaker.choose(N0, N1, both_preferred=False) is None
    assert breaker.choose(N0 | N1, N1 | N2, both_preferred=True) is None
    assert breaker.choose(N0, N2, both_preferred=True) == N2
    assert breaker.decisions == [
        TieBreakDecision(
            "prefer-most-allocated-numa-node",
            N2,
            N0,
            ("cpu",),
            (SignalScores("cpu", 100, 0), SignalScores("memory", None, None)),
        )
    ]


def test_compare_signal_scores_are_integer_ratios() -> None:
    usage = _table(n0=(1, 3), n1=(2, 7))  # 33 and 28
    assert compare_signal(usage, N0, N1) == (False, 33, 28)
    assert compare_signal(None, N0, N1) == (None, None, None)
    assert utilization(usage, N0 | N1) == 30  # 3·100 // 10
    assert utilization(usage, N2) is None


def test_first_draft_through_single_numa_node_merge() -> None:
    """The PR branch's TestSingleNumaPolicyPreferMostAllocatedTieBreak, with real signals: {0}, {1} and a
    non-preferred {0,1} from one provider, nothing from the other; the busier node 1 wins."""
    info = NUMAInfo([0, 1])
    options = PolicyOptions(prefer_most_allocated_numa_node=True)
    hints = [
        {
            "resource1": [
                TopologyHint(N0, True),
                TopologyHint(N1, True),
                TopologyHint(N0 | N1, False),
            ]
        },
        None,
    ]
    breaker = PreferMostAllocatedTieBreaker(FixedSignal("cpu", _table(n0=(0, 4), n1=(1, 4))), None)
    assert new_policy("single-numa-node", info, options, breaker).merge(hints) == (
        TopologyHint(N1, True),
        True,
    )
    # Without a tie-breaker (or without a signal) narrowest picks node 0.
    assert new_policy("single-numa-node", info, options).merge(hints) == (TopologyHint(N0, True), True)
    quiet = PreferMostAllocatedTieBreaker(None, None)
    assert new_policy("single-numa-node", info, options, quiet).merge(hints) == (TopologyHint(N0, True), True)


# -- the current draft ----------------------------------------------------------------------------------


def test_weighted_score() -> None:
    signals = [
        FixedSignal("cpu", _table(n0=(6, 8), n1=(2, 8))),  # 75, 25
        FixedSignal("memory", _table(n0=(0, 4), n1=(2, 4))),  # 0 -> max(1, 0) = 1, 50
        FixedSignal("example.com/gpu", _table(n1=(1, 2))),  # only on node 1: 50
        FixedSignal("hugepages-2Mi", None),  # no signal
    ]
    breaker = AllocationStrategyTieBreaker(MOST, signals)
    assert breaker.score(N0).score == (75 + 1) // 2
    assert breaker.score(N0).parts == (("cpu", 75), ("memory", 1))
    assert breaker.score(N1).score == (25 + 50 + 50) // 3
    assert breaker.score(N0 | N1).score == (50 + 25 + 50) // 3  # cpu 8/16, memory 2/8, gpu 1/2
    weighted = AllocationStrategyTieBreaker(MOST, signals, {"cpu": 3, "example.com/gpu": 0})
    assert weighted.score(N1).score == (25 * 3 + 50) // 4
    assert (
        AllocationStrategyTieBreaker(MOST, signals, {"cpu": 0, "memory": 0, "example.com/gpu": 0})
        .score(N0)
        .score
        is None
    )


@pytest.mark.parametrize(("strategy", "winner"), [(MOST, N0), (LEAST, N1)], ids=["most", "least"])
def test_strategy_choose(strategy: NUMAAllocationStrategy, winner: BitMask) -> None:
    signals = [FixedSignal("cpu", _table(n0=(6, 8), n1=(2, 8)))]
    breaker = AllocationStrategyTieBreaker(strategy, signals)
    assert breaker.choose(N0, N1, both_preferred=False) == winner
    assert breaker.choose(N1, N0, both_preferred=True) == winner
    decision = breaker.drain()[0]
    assert decision.option == f"numa-allocation-strategy={strategy.value}"
    assert decision.decided_by == ("cpu",)
    assert decision.scores[-1] == SignalScores(
        WEIGHTED_SCORE, 75 if strategy is MOST else 25, 25 if strategy is MOST else 75
    )
    assert decision.overrode_default is (winner == N1)
    assert breaker.drain() == []


def test_equal_scores_leave_the_normal_order() -> None:
    breaker = AllocationStrategyTieBreaker(LEAST, [FixedSignal("cpu", _table(n0=(2, 8), n1=(1, 4)))])
    assert breaker.choose(N0, N1, both_preferred=True) is None
    assert breaker.decisions == []


def test_strategy_with_prefer_closest_breaks_only_equal_distances() -> None:
    """best-effort with prefer-closest on 3 nodes: {0,2} is farther than {0,1} and {1,2} whatever the
    score; only the two pairs with equal average distance reach the tie-breaker."""
    rows = {0: [10, 11, 21], 1: [11, 10, 11], 2: [21, 11, 10]}
    info = NUMAInfo([0, 1, 2], rows)
    busy_2 = [FixedSignal("cpu", _table(n0=(0, 4), n1=(0, 4), n2=(4, 4)))]
    options = PolicyOptions(prefer_closest_numa=True, numa_allocation_strategy=MOST)
    hints = [{"cpu": [TopologyHint(N0 | N1, True), TopologyHint(N1 | N2, True), TopologyHint(N0 | N2, True)]}]
    breaker = AllocationStrategyTieBreaker(MOST, busy_2)
    best, _ = new_policy("best-effort", info, options, breaker).merge(hints)
    # avg{0,1} = avg{1,2} = 10.5 < avg{0,2} = 15.5: the score decides between the two closest.
    assert best == TopologyHint(N1 | N2, True)
    assert [(d.chosen, d.over) for d in breaker.drain()] == [(N1 | N2, N0 | N1)]


def test_new_tie_breaker() -> None:
    signals = [FixedSignal("cpu", None), FixedSignal("memory", None)]
    assert new_tie_breaker("best-effort", PolicyOptions(), signals) is None
    first = new_tie_breaker("single-numa-node", PolicyOptions(prefer_most_allocated_numa_node=True), signals)
    assert isinstance(first, PreferMostAllocatedTieBreaker)
    assert first.cpu is signals[0] and first.memory is signals[1]
    current = new_tie_breaker("restricted", PolicyOptions(numa_allocation_strategy=LEAST), signals)
    assert isinstance(current, AllocationStrategyTieBreaker) and current.strategy is LEAST
    with pytest.raises(ValueError, match="none strategy"):
        AllocationStrategyTieBreaker(NUMAAllocationStrategy.NONE, signals)


def test_overriding_decisions_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    breaker = PreferMostAllocatedTieBreaker(FixedSignal("cpu", _table(n0=(0, 8), n1=(2, 8))), None)
    with caplog.at_level(logging.INFO, logger="kubeletemu.topologymanager.numa_scorer"):
        breaker.choose(N0, N1, both_preferred=True)
    assert [r.getMessage() for r in caplog.records] == [
        "NUMA scorer overrode the default choice: prefer-most-allocated-numa-node: NUMA [1] over [0] "
        "(decided by cpu; cpu 25 vs 0, memory - vs -)"
    ]
    assert breaker.decisions[0].to_dict() == {
        "option": "prefer-most-allocated-numa-node",
        "chosen": [1],
        "over": [0],
        "decided_by": ["cpu"],
        "overrode_default": True,
        "scores": [
            {"signal": "cpu", "chosen": 25, "over": 0},
            {"signal": "memory", "chosen": None, "over": None},
        ],
    }
