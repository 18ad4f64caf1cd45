"""KEP-6007's tie-breakers: NUMA utilisation decides between masks the merge finds equally fit.

Neither draft is merged upstream; both plug into ``HintMerger.cmp_masks`` through ``MaskTieBreaker`` and
are only asked about masks of equal width (and, with prefer-closest, equal average distance), where the
kubelet would otherwise take the smaller integer.

- First draft, ``prefer-most-allocated-numa-node`` (closed kubernetes PR #138321, its
  ``preferredNUMATieBreakerAggregator``): single-numa-node only, two *preferred single-node* masks. The CPU
  signal and the memory signal each compare the two nodes' utilisation (``assigned·100 / allocatable``,
  integer division, reserved resources excluded from allocatable); a signal decides when both scores exist
  and differ, the busier node winning. Neither decides: narrowest. One decides: it. Both decide and agree:
  that node. They disagree: narrowest. A non-static manager gives no signal.
- Current draft, ``numa-allocation-strategy`` (open PR #142226): every policy, preferred and non-preferred
  comparisons alike. A mask's score is the weighted average of ``max(1, assigned·100 / allocatable)`` over
  the resources with capacity on it (``numa-score-weights``, default weight 1, weight 0 leaves a resource
  out; integer division, as ``aggregateHintScores``); most-allocated takes the higher score,
  least-allocated the lower, equal scores fall back to the normal order.

Emulator decisions, where the PR branch has each provider score its own hints and averages them per
permutation: a mask gets one score, from the node's state, over the resources the merge has hints for
(``requested``; every signal when that is unknown), so a preferred outcome scores as on the branch; and a
scored mask beats an unscored one (no capacity of any weighted resource on it) under both strategies,
which keeps the comparison a total order (the branch leaves such pairs to the normal order, which can make
its fold depend on permutation order).

Note that the first draft's pairwise rule is not transitive on three or more nodes (node 0 beats node 1 on
a disagreement, node 1 beats node 2 on a disagreement, node 2 beats node 0 on the one signal that decides):
there, as on the PR branch, the result depends on the order the merge meets the masks. Providers list
their hints in ascending mask order, which is the order our merge folds distinct outcomes in, so the
answers agree.

Each decision taken by a score is recorded (``decisions``, ``drain()``) and logged; a decision that
overrides the default choice is logged at INFO, the KEP's "log line whenever the scorer overrides".
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Protocol

from kubeletemu.bitmask import BitMask
from kubeletemu.topologymanager.policy_options import (
    DEFAULT_NUMA_SCORE_WEIGHT,
    NUMA_ALLOCATION_STRATEGY,
    PREFER_MOST_ALLOCATED_NUMA_NODE,
    NUMAAllocationStrategy,
    PolicyOptions,
)

log = logging.getLogger(__name__)

SIGNAL_CPU = "cpu"
SIGNAL_MEMORY = "memory"
# The pseudo-signal naming the weighted average in a strategy decision's scores.
WEIGHTED_SCORE = "weighted-score"
_SINGLE_NUMA_NODE = "single-numa-node"

# Per NUMA node: (assigned, allocatable) of one resource, in its unit (CPUs, bytes, devices).
NUMAUsage = Mapping[int, tuple[int, int]]


class UsageSignal(Protocol):
    """One resource's per-node accounting. ``usage()`` is read at each comparison (the state changes
    between admissions, never during a merge); None means no signal (a non-static manager)."""

    @property
    def name(self) -> str: ...

    def usage(self) -> NUMAUsage | None: ...


@dataclass(frozen=True)
class FixedSignal:
    """A signal with a fixed table: tests, and what-if questions about a hypothetical state."""

    name: str
    table: NUMAUsage | None

    def usage(self) -> NUMAUsage | None:
        return self.table


def utilization(usage: NUMAUsage, mask: BitMask) -> int | None:
    """``assigned·100 / allocatable`` over the mask's nodes (integer division, as the KEP's Go code);
    None when the mask has nothing allocatable."""
    assigned = allocatable = 0
    for node in mask.bits():
        node_assigned, node_allocatable = usage.get(node, (0, 0))
        assigned += node_assigned
        allocatable += node_allocatable
    if allocatable <= 0:
        return None
    return assigned * 100 // allocatable


@dataclass(frozen=True)
class SignalScores:
    """One signal's scores for the two masks; None where it had nothing to score."""

    signal: str
    chosen: int | None
    over: int | None


@dataclass(frozen=True)
class TieBreakDecision:
    """A choice between two equally fit masks taken by a utilisation score.

    ``decided_by`` names the signals that decided (first draft: ``cpu``, ``memory`` or both; current draft:
    the resources whose scores entered the weighted average). Without the score the merge would have taken
    the smaller integer of the two, so ``overrode_default`` says whether the score changed the choice.
    """

    option: str
    chosen: BitMask
    over: BitMask
    decided_by: tuple[str, ...]
    scores: tuple[SignalScores, ...]

    @property
    def overrode_default(self) -> bool:
        return self.over.is_less_than(self.chosen)

    def to_dict(self) -> dict[str, Any]:
        return {
            "option": self.option,
            "chosen": self.chosen.bits(),
            "over": self.over.bits(),
            "decided_by": list(self.decided_by),
            "overrode_default": self.overrode_default,
            "scores": [{"signal": s.signal, "chosen": s.chosen, "over": s.over} for s in self.scores],
        }

    def __str__(self) -> str:
        scores = ", ".join(f"{s.signal} {_fmt(s.chosen)} vs {_fmt(s.over)}" for s in self.scores)
        return (
            f"{self.option}: NUMA {self.chosen.bits()} over {self.over.bits()} "
            f"(decided by {'+'.join(self.decided_by)}; {scores})"
        )


def _fmt(score: int | None) -> str:
    return "-" if score is None else str(score)


class _Recorder:
    """The decision log shared by both tie-breakers."""

    option = ""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.decisions: list[TieBreakDecision] = []

    def drain(self) -> list[TieBreakDecision]:
        """The decisions since the last drain, oldest first; the log is emptied."""
        with self._lock:
            taken, self.decisions = self.decisions, []
        return taken

    def _record(self, decision: TieBreakDecision) -> None:
        with self._lock:
            self.decisions.append(decision)
        if decision.overrode_default:
            log.info("NUMA scorer overrode the default choice: %s", decision)
        else:
            log.debug("NUMA scorer confirmed the default choice: %s", decision)


# -- first draft: prefer-most-allocated-numa-node ---------------------------------------------------------


def compare_signal(
    usage: NUMAUsage | None, current: BitMask, candidate: BitMask
) -> tuple[bool | None, int | None, int | None]:
    """One signal's verdict (``ComparePreferredSingleNUMAForTopology`` of a manager): True prefers the
    candidate, False the current mask, None is undecided (no signal, a node without capacity, equal
    scores). Also returns the two scores (current, candidate)."""
    if usage is None:
        return None, None, None
    cur, cand = utilization(usage, current), utilization(usage, candidate)
    if cur is None or cand is None or cur == cand:
        return None, cur, cand
    return cand > cur, cur, cand


def combine_signals(cpu: bool | None, memory: bool | None) -> tuple[bool | None, tuple[str, ...]]:
    """The aggregator's rule: neither decides -> None (narrowest); one decides -> it; both agree -> it;
    they disagree -> None (narrowest). Returns the verdict and the signals that carried it."""
    if cpu is None and memory is None:
        return None, ()
    if memory is None:
        return cpu, (SIGNAL_CPU,)
    if cpu is None:
        return memory, (SIGNAL_MEMORY,)
    if cpu == memory:
        return cpu, (SIGNAL_CPU, SIGNAL_MEMORY)
    return None, ()


class PreferMostAllocatedTieBreaker(_Recorder):
    """``prefer-most-allocated-numa-node``: between two preferred single-node masks, the busier node."""

    option = PREFER_MOST_ALLOCATED_NUMA_NODE

    def __init__(self, cpu: UsageSignal | None, memory: UsageSignal | None) -> None:
        super().__init__()
        self.cpu = cpu
        self.memory = memory

    def choose(self, current: BitMask, candidate: BitMask, *, both_preferred: bool) -> BitMask | None:
        if not both_preferred or current.count() != 1 or candidate.count() != 1:
            return None
        cpu_pick, cpu_cur, cpu_cand = compare_signal(
            self.cpu.usage() if self.cpu else None, current, candidate
        )
        mem_pick, mem_cur, mem_cand = compare_signal(
            self.memory.usage() if self.memory else None, current, candidate
        )
        pick, decided_by = combine_signals(cpu_pick, mem_pick)
        if pick is None:
            if cpu_pick is not None and mem_pick is not None:
                log.debug(
                    "NUMA scorer: cpu and memory disagree between %s and %s, narrowest decides",
                    current.bits(),
                    candidate.bits(),
                )
            return None
        chosen, over = (candidate, current) if pick else (current, candidate)
        cpu_scores = (cpu_cand, cpu_cur) if pick else (cpu_cur, cpu_cand)
        mem_scores = (mem_cand, mem_cur) if pick else (mem_cur, mem_cand)
        self._record(
            TieBreakDecision(
                self.option,
                chosen,
                over,
                decided_by,
                (SignalScores(SIGNAL_CPU, *cpu_scores), SignalScores(SIGNAL_MEMORY, *mem_scores)),
            )
        )
        return chosen


# -- current draft: numa-allocation-strategy ------------------------------------------------------------


@dataclass(frozen=True)
class MaskScore:
    """A mask's weighted score (None: unscored) and each contributing resource's ``max(1, util)``."""

    score: int | None
    parts: tuple[tuple[str, int], ...]


class AllocationStrategyTieBreaker(_Recorder):
    """``numa-allocation-strategy``: the higher (most-allocated) or lower (least-allocated) weighted score."""

    def __init__(
        self,
        strategy: NUMAAllocationStrategy,
        signals: Sequence[UsageSignal],
        weights: Mapping[str, int] | None = None,
        requested: Callable[[], AbstractSet[str] | None] | None = None,
    ) -> None:
        """``requested`` names the resources of the merge being decided (None: score every signal)."""
        if strategy is NUMAAllocationStrategy.NONE:
            raise ValueError("the none strategy breaks no ties: build no tie-breaker for it")
        super().__init__()
        self.strategy = strategy
        self.signals = tuple(signals)
        self.weights = dict(weights or {})
        self.requested = requested
        self.option = f"{NUMA_ALLOCATION_STRATEGY}={strategy.value}"

    def usages(self) -> list[tuple[str, NUMAUsage | None]]:
        """The signals that take part in this merge, read now."""
        wanted = self.requested() if self.requested is not None else None
        return [(s.name, s.usage()) for s in self.signals if wanted is None or s.name in wanted]

    def score(self, mask: BitMask, usages: Sequence[tuple[str, NUMAUsage | None]] | None = None) -> MaskScore:
        """``aggregateHintScores`` for one mask: ``Σ w·s / Σ w`` (integer) over the taking-part signals."""
        if usages is None:
            usages = self.usages()
        weighted = total = 0
        parts: list[tuple[str, int]] = []
        for name, usage in usages:
            weight = self.weights.get(name, DEFAULT_NUMA_SCORE_WEIGHT)
            if weight == 0 or usage is None:
                continue
            util = utilization(usage, mask)
            if util is None:
                continue
            value = max(1, util)
            parts.append((name, value))
            weighted += value * weight
            total += weight
        return MaskScore(weighted // total if total else None, tuple(parts))

    def choose(self, current: BitMask, candidate: BitMask, *, both_preferred: bool) -> BitMask | None:
        usages = self.usages()
        cur, cand = self.score(current, usages), self.score(candidate, usages)
        if cur.score == cand.score:
            return None
        if cur.score is None or cand.score is None:
            take_candidate = cur.score is None
        elif self.strategy is NUMAAllocationStrategy.MOST_ALLOCATED:
            take_candidate = cand.score > cur.score
        else:
            take_candidate = cand.score < cur.score
        chosen, over = (candidate, current) if take_candidate else (current, candidate)
        won, lost = (cand, cur) if take_candidate else (cur, cand)
        won_parts, lost_parts = dict(won.parts), dict(lost.parts)
        names = [s.name for s in self.signals if s.name in won_parts or s.name in lost_parts]
        scores = tuple(SignalScores(n, won_parts.get(n), lost_parts.get(n)) for n in names)
        self._record(
            TieBreakDecision(
                self.option,
                chosen,
                over,
                tuple(names),
                (*scores, SignalScores(WEIGHTED_SCORE, won.score, lost.score)),
            )
        )
        return chosen


NUMATieBreaker = PreferMostAllocatedTieBreaker | AllocationStrategyTieBreaker


def wants_tie_breaker(policy_name: str, options: PolicyOptions) -> bool:
    """Whether :func:`new_tie_breaker` would return one (so its signals need not be gathered otherwise)."""
    return (
        options.prefer_most_allocated_numa_node and policy_name == _SINGLE_NUMA_NODE
    ) or options.numa_allocation_strategy is not NUMAAllocationStrategy.NONE


def new_tie_breaker(
    policy_name: str,
    options: PolicyOptions,
    signals: Sequence[UsageSignal],
    requested: Callable[[], AbstractSet[str] | None] | None = None,
) -> NUMATieBreaker | None:
    """The tie-breaker the options ask for, None when neither KEP-6007 option is on.

    The first draft needs single-numa-node (``validate_policy_options`` refuses anything else at start);
    it reads the ``cpu`` and ``memory`` signals only, whatever the pod requests (as the PR's managers do).
    """
    if options.prefer_most_allocated_numa_node and policy_name == _SINGLE_NUMA_NODE:
        by_name = {s.name: s for s in signals}
        return PreferMostAllocatedTieBreaker(by_name.get(SIGNAL_CPU), by_name.get(SIGNAL_MEMORY))
    if options.numa_allocation_strategy is not NUMAAllocationStrategy.NONE:
        return AllocationStrategyTieBreaker(
            options.numa_allocation_strategy, signals, options.numa_score_weights, requested
        )
    return None
