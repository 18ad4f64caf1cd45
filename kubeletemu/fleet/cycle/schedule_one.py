"""One scheduling cycle of a pod over the fleet's nodes, as kube-scheduler's ``schedule_one.go`` runs it
(``schedulePod``, ``findNodesThatFitPod``, ``findNodesThatPassFilters``, ``numFeasibleNodesToFind``,
``prioritizeNodes``, ``selectHost`` / ``sortedNodeScores``; the framework's ``RunFilterPlugins`` and
``RunScorePlugins``), per version as :mod:`.versions` records.

What is modelled, and how the sequential port stands to the parallel original:

* No PreFilter, nominated nodes or PostFilter (preemption): the profiles the fleet runs have none, so
  ``findNodesThatFitPod`` reduces to ``findNodesThatPassFilters`` over all nodes, then the extender's
  Filter on the feasible nodes when there is one (``findNodesThatPassExtenders``, the ``extender`` setup:
  :mod:`.extender`), whose score joins ``prioritizeNodes``'. A scheduler with an extender keeps no cycle
  and no node answer across cycles: the extender's answers move with its ledger and mirrors.
* ``findNodesThatPassFilters`` checks nodes from ``nextStartNodeIndex`` round the list until it holds
  ``numFeasibleNodesToFind`` feasible nodes (1 when the profile has no score plugin). Upstream runs the
  checks on ``parallelism`` goroutines (16 by default) and cancels when a check finds one feasible node
  too many; this port is that code with ``parallelism: 1`` — nodes checked in order, the node past the
  last one kept is checked and dropped (not counted), rejected nodes before it are counted. The index
  then moves on by the nodes counted (feasible + rejected), so the next cycle starts at the dropped one.
* A Filter status other than Success or a rejection (Unschedulable, UnschedulableAndUnresolvable,
  Pending) ends the cycle with an error (``running "P" filter plugin: …``); the pod is not unschedulable
  then, and the cycle names no rejecting plugin. Each rejection is recorded with its plugin
  (``UnschedulablePlugins``; Pending also in ``PendingPlugins``): the scheduling queue reads them.
* One feasible node is taken without scoring. Otherwise every score plugin scores every feasible node;
  a plugin with a ``normalize_scores`` (its ``ScoreExtensions``) rescales its column; a score outside
  [0, 100] after that is an error; totals are ``Σ score × weight``; no score plugin: every node 1.
* A model raising :class:`~kubeletemu.scheduler.framework.PluginPanic` (where the shipped plugin would
  panic and take the scheduler down, ``scheduler-side.md`` §4) makes that node unschedulable for the pod:
  in Filter it is a rejection by that plugin (reason ``panic: …``), in Score the node is left out; each
  is counted in ``crashes``.

Answers of the resource plugins (:data:`PURE_MODELS`, functions of the pod's shape and the ``NodeInfo``
object) are kept on the ``NodeInfo`` per pod shape: the fleet replaces a node's ``NodeInfo`` whenever it
changes, so a kept answer is never stale, and the cycle costs a dictionary lookup on unchanged nodes.
A model whose answers also depend on a source outside the NodeInfo (NodeResourceTopologyMatch over the
scheduler's NRT cache: :class:`VersionedAnswers`) has them kept the same way for the version its source
gives the node, only the current version's; a kept Filter rejection replays ``NodeMaybeOverReserved``.
When every score plugin is kept and none normalizes, a node's weighted scores are kept whole.

A cycle that found no feasible node is kept whole per pod shape when the caller passes ``state`` (a value
that changes whenever anything a Filter reads changes: the fleet's node list and its NRT cache): while the
state is the same, the next pod of that shape gets the same statuses without a node being checked. Every
node was counted, so ``nextStartNodeIndex`` did not move; a model's side effects on rejection (the NRT
cache's ``NodeMaybeOverReserved``) are recorded the first time and replayed on the node names recorded.
Only profiles whose every Filter is a kept resource plugin or records its side effects
(:class:`SideEffects`), and that do not batch, keep cycles.
Once the state has moved on, a cycle still takes each node whose NodeInfo object and versions are those of
the shape's last answer on it from that answer (:mod:`.kept_nodes`), side effects given in the order the
nodes are checked, and checks only the others.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol, cast, runtime_checkable

from kubeletemu.fleet.cycle import versions
from kubeletemu.fleet.cycle.batch import SIGNING_MODELS, OpportunisticBatch
from kubeletemu.fleet.cycle.diagnosis import (
    ERR_NO_NODES_AVAILABLE,
    REJECTED,
    Diagnosis,
    NodeStatus,
    fit_error_message,
)
from kubeletemu.fleet.cycle.extender import EXTENDER, FleetExtender
from kubeletemu.fleet.cycle.kept_nodes import KeptRun, NodeEffects, ShapeAnswers, rotate
from kubeletemu.fleet.cycle.select import (
    HIGHEST_SCORED_NODES_TO_REPORT,
    NodeScore,
    pop_best,
    select_host,
    sorted_heap,
)
from kubeletemu.fleet.queue.hints import EXTENDER as EXTENDER_NAME
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import SUCCESS, UNSCHEDULABLE, NodeInfo, PluginPanic, Status
from kubeletemu.scheduler.noderesourcesfit import NodeResourcesBalancedAllocation, NodeResourcesFit
from kubeletemu.scheduler.pod_shape import pod_shape
from kubeletemu.scheduler.profile import Profile

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
# schedulerapi.DefaultPercentageOfNodesToScore: 0, adaptive.
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0
BASE_PERCENTAGE = 50
ADAPTIVE_NODES_PER_PERCENT = 125
MIN_NODE_SCORE, MAX_NODE_SCORE = 0, 100
# Models whose Filter and Score depend on nothing but the pod's shape and the NodeInfo object.
PURE_MODELS: tuple[type, ...] = (NodeResourcesFit, NodeResourcesBalancedAllocation)
_MEMO = "cycle_answers"
_WEIGHTED_ROWS_KEPT = 4096
_PASSED = NodeStatus("Success", (), "")
_NODE_STATUS = "_cycle_node_status"
# How a Filter plugin's answers are kept (compared by identity).
_ASK, _PURE, _VERSIONED = "ask", "pure", "versioned"


@runtime_checkable
class SideEffects(Protocol):
    """A Filter model whose rejections have effects outside its answer: recorded while a cycle is kept,
    replayed for the next pod of the shape."""

    def record_side_effects(self) -> None: ...

    def recorded_side_effects(self) -> tuple[str, ...]: ...

    def replay_side_effects(self, pod: Pod, recorded: tuple[str, ...], times: int = 1) -> None:
        """The recorded effects given again ``times`` times in a row (for pods of one shape, ``pod`` the
        first: the effects must not depend on which pod)."""
        ...

    def effects_again(self, pod: Pod, node_names: Sequence[str]) -> None:
        """The effects of kept rejections of ``node_names``, in order, as each node's own evaluation has
        them (recorded too while recording)."""
        ...


@runtime_checkable
class VersionedAnswers(Protocol):
    """A model whose answers depend on the pod's shape, the NodeInfo object and a version its source gives
    per node (NodeResourceTopologyMatch over a cache): they are kept per version, and a kept Filter
    rejection replays what the Filter does besides answering."""

    def answer_version(self, node: NodeInfo) -> Hashable | None: ...

    def answer_versions(self, nodes: Sequence[NodeInfo]) -> list[Hashable | None]: ...

    def rejected_again(self, pod: Pod, node: NodeInfo, status: Status) -> None: ...


@dataclass(frozen=True)
class _KeptCycle:
    state: Hashable
    outcome: CycleOutcome
    effects: tuple[tuple[SideEffects, tuple[str, ...]], ...]
    rejected: tuple[frozenset[str], frozenset[str]]  # the outcome's unschedulable and pending plugins


class KeptRejections(NamedTuple):
    """:meth:`Scheduler.kept_rejections`: ``answer`` a pod, given with its shape number (None: a cycle must
    run), then ``finish``."""

    answer: Callable[[Pod, int], tuple[frozenset[str], frozenset[str]] | None]
    finish: Callable[[], None]


class PluginError(Exception):
    """A Score or NormalizeScore returned an Error status (the message is the status's)."""


def num_feasible_nodes_to_find(
    percentage_of_nodes_to_score: int, num_all_nodes: int, profile_percentage: int | None = None
) -> int:
    """``numFeasibleNodesToFind``: every node below 100; else the profile's percentage if set, else the
    global one, 0 meaning adaptive (``50 - nodes/125``, at least 5); at least 100 nodes."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = profile_percentage if profile_percentage is not None else percentage_of_nodes_to_score
    if percentage == 0:
        percentage = max(
            BASE_PERCENTAGE - num_all_nodes // ADAPTIVE_NODES_PER_PERCENT,
            MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND,
        )
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(frozen=True)
class CycleOutcome:
    """What ``schedulePod`` returned: the suggested host, or why there is none.

    ``unschedulable_plugins``/``pending_plugins`` are the Diagnosis's (what the queue keys requeueing on);
    ``error`` is set when the cycle failed with an error rather than a FitError (the pod then carries no
    rejecting plugin); ``reason`` is one line for logs (the FitError's text, the error, or "");
    ``evaluated_nodes``/``feasible_nodes`` are ``ScheduleResult``'s."""

    chosen: NodeInfo | None
    crashes: int = 0
    reason: str = ""
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    unschedulable_plugins: frozenset[str] = frozenset()
    pending_plugins: frozenset[str] = frozenset()
    error: str | None = None
    node_statuses: MappingProxyType[str, NodeStatus] = field(default_factory=lambda: MappingProxyType({}))
    scores: tuple[NodeScore, ...] = ()


@dataclass
class Scheduler:
    """A profile scheduling pods one at a time over ``nodes`` (kept in a fixed order by the caller, as
    the scheduler's node snapshot is), remembering ``next_start_node_index`` across cycles.

    ``version``: the kube-scheduler minor emulated (:mod:`.versions`). ``rng``: the random source of
    ``selectHost`` (1.32 – 1.34); None draws nothing and takes the top node first evaluated.
    ``memo=False`` asks every model every time (for tests proving the kept answers change nothing)."""

    profile: Profile
    percentage_of_nodes_to_score: int = DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
    next_start_node_index: int = 0
    version: str = versions.DEFAULT_VERSION
    rng: random.Random | None = None
    memo: bool = True
    profile_percentage: int | None = None
    # parallelism > 1: the order the goroutines found the feasible nodes in (see _parallel_order).
    order_rng: random.Random | None = None
    # The extender the scheduler asks after its Filter plugins, and whose scores it adds (None: none).
    extender: FleetExtender | None = None

    def __post_init__(self) -> None:
        versions.check_version(self.version)
        self._reservoir = versions.reservoir_sampling(self.version)
        self._cycle = 0  # the scheduling cycles run (the queue's SchedulingCycle)
        # OpportunisticBatching (1.35+, beta, on): only for profiles whose every plugin signs pods.
        signs = all(isinstance(m, SIGNING_MODELS) for m in self.profile.models)
        self._batch = (
            OpportunisticBatch() if versions.opportunistic_batching(self.version) and signs else None
        )
        self._pure = (
            {id(m) for m in self.profile.models if isinstance(m, PURE_MODELS)} if self.memo else set()
        )
        self._versioned = (
            {id(m) for m in self.profile.models if isinstance(m, VersionedAnswers)} if self.memo else set()
        )
        # Per Filter plugin: how its answers are kept (asked every time, pure, or per its source's version).
        self._filter_plan: tuple[tuple[Any, int, str, Callable[[NodeInfo], Hashable] | None], ...] = tuple(
            (
                m,
                id(m),
                _PURE if id(m) in self._pure else _VERSIONED if id(m) in self._versioned else _ASK,
                cast(VersionedAnswers, m).answer_version if id(m) in self._versioned else None,
            )
            for m in self.profile.filters
        )
        self._effects = tuple(m for m in self.profile.filters if isinstance(m, SideEffects))
        self._keeps_cycles = (
            self.memo
            and self._batch is None
            and self.extender is None
            and all(id(m) in self._pure or isinstance(m, SideEffects) for m in self.profile.filters)
        )
        self._kept_cycles: dict[Hashable, _KeptCycle] = {}
        self._node_answers: dict[Hashable, ShapeAnswers] = {}
        self._run: KeptRun | None = None  # the running cycle's walk over them, its fresh answers kept after
        # Each node's last answer per pod shape serves the shape's next cycles while the node is unchanged
        # when every Filter's answer is kept (pure or versioned) and at most one Filter has side effects,
        # which then name the node rejected (NodeMaybeOverReserved).
        self._node_versions = tuple(
            cast(VersionedAnswers, model).answer_versions
            for model, _, kind, _ in self._filter_plan
            if kind is _VERSIONED
        )
        self._reuses_nodes = (
            self._keeps_cycles
            and all(kind is not _ASK for _, _, kind, _ in self._filter_plan)
            and len(self._effects) <= 1
        )
        self.cycles_kept = 0  # cycles answered from a kept one
        self.crashes_kept = 0  # the plugin crashes those kept cycles count
        self.nodes_answered_kept = 0  # nodes a cycle answered from the shape's kept node answers
        self._weighted_rows: dict[tuple[int, ...], tuple[int, tuple[tuple[str, int], ...]]] = {}
        self._kept_scores = all(
            (id(m) in self._pure or id(m) in self._versioned) and getattr(m, "normalize_scores", None) is None
            for m, _ in self.profile.scores
        )
        # The versioned score plugins' version per node, in plugin order.
        self._score_versions = tuple(
            cast(VersionedAnswers, m).answer_version
            for m, _ in self.profile.scores
            if id(m) in self._versioned
        )

    # ---- schedulePod ----------------------------------------------------------------------------------

    def schedule(
        self, pod: Pod, nodes: Sequence[NodeInfo], now: float | None = None, state: Hashable | None = None
    ) -> CycleOutcome:
        """``schedulePod`` for ``pod`` over ``nodes``; ``now`` (simulated seconds) lets 1.35+ batch
        (:mod:`.batch`; None: no batching); ``state`` lets a cycle that found no node be kept (see the
        module's note; None: never kept)."""
        answer = self.kept_failures(nodes, state)
        kept_outcome = answer(pod) if answer is not None else None
        if kept_outcome is not None:
            return kept_outcome
        self._cycle += 1
        count = len(nodes)
        if count == 0:
            return CycleOutcome(None, reason=ERR_NO_NODES_AVAILABLE, error=ERR_NO_NODES_AVAILABLE)
        shape = pod_shape(pod)
        if state is None or not self._keeps_cycles:
            return self._schedule(pod, shape, nodes, now)
        answers = self._shape_answers(shape, count) if self._reuses_nodes else None
        for model in self._effects:
            model.record_side_effects()
        outcome = self._schedule(pod, shape, nodes, now, answers)
        effects = tuple((model, model.recorded_side_effects()) for model in self._effects)
        run, self._run = self._run, None
        if run is not None:
            self.nodes_answered_kept += run.answered
            if not run.keep(effects[0][1] if effects else None):
                del self._node_answers[shape]
        if outcome.chosen is None and outcome.error is None and outcome.feasible_nodes == 0:
            assert outcome.evaluated_nodes == count  # every node rejected: the start index did not move
            self._kept_cycles[shape] = _KeptCycle(
                state, outcome, effects, (outcome.unschedulable_plugins, outcome.pending_plugins)
            )
        else:
            self._kept_cycles.pop(shape, None)
        return outcome

    def _shape_answers(self, shape: Hashable, count: int) -> ShapeAnswers:
        answers = self._node_answers.get(shape)
        if answers is None or len(answers) != count:
            answers = self._node_answers[shape] = ShapeAnswers(count)
        return answers

    def kept_failures(
        self, nodes: Sequence[NodeInfo], state: Hashable | None
    ) -> Callable[[Pod], CycleOutcome | None] | None:
        """What :meth:`schedule` answers from kept cycles (failures) while ``nodes`` and ``state`` stay as
        they are: for a pod, the kept outcome, its cycle counted and side effects replayed, or None when
        a cycle must run. None when no cycle is answered so."""
        kept = self.kept_rejections(nodes, state)
        if kept is None:
            return None
        kept_cycles = self._kept_cycles

        def outcome(pod: Pod) -> CycleOutcome | None:
            shape = pod_shape(pod)
            answered = kept.answer(pod, shape) is not None
            kept.finish()
            return kept_cycles[shape].outcome if answered else None

        return outcome

    def kept_rejections(self, nodes: Sequence[NodeInfo], state: Hashable | None) -> KeptRejections | None:
        """:meth:`kept_failures` for many pods in a row, giving only what the queue needs of a kept
        outcome: the plugins that rejected the pod (unschedulable, pending). The cycles are counted (their
        crashes in :attr:`crashes_kept`) and their side effects replayed at ``finish``, which the caller
        calls before anything else happens. None when no cycle is answered so."""
        if state is None or not self._keeps_cycles or not nodes:
            return None
        # Kept cycles change only when a cycle runs, which ends the caller's use of the answers: the ones
        # that hold for ``state`` are picked once.
        valid = {shape: kept for shape, kept in self._kept_cycles.items() if kept.state == state}
        get = valid.get
        # Per shape answered, in the order first answered: the first pod and how many.
        used: dict[Hashable, list[Any]] = {}

        def answer(pod: Pod, shape: int) -> tuple[frozenset[str], frozenset[str]] | None:
            kept = get(shape)
            if kept is None:
                return None
            tally = used.get(shape)
            if tally is None:
                used[shape] = [pod, 1]
            else:
                tally[1] += 1
            return kept.rejected

        def finish() -> None:
            # The replays of one shape's cycles given at once, the shapes in the order first answered:
            # NodeMaybeOverReserved's marks do not depend on the pod, and a repeat of a replay only adds
            # to counts, so this is what replaying each in turn leaves.
            for shape, (pod, times) in used.items():
                kept = valid[shape]
                for model, recorded in kept.effects:
                    model.replay_side_effects(pod, recorded, times)
                self._cycle += times
                self.cycles_kept += times
                self.crashes_kept += kept.outcome.crashes * times
            used.clear()

        return KeptRejections(answer, finish)

    def _schedule(
        self,
        pod: Pod,
        shape: Hashable,
        nodes: Sequence[NodeInfo],
        now: float | None,
        answers: ShapeAnswers | None = None,
    ) -> CycleOutcome:
        count = len(nodes)
        diagnosis = Diagnosis()
        batch = self._batch if now is not None else None
        hint = None
        if batch is not None:
            assert now is not None
            hint = batch.node_hint(
                shape, self._cycle, now, nodes, lambda node: self._run_filter_plugins(pod, shape, node)[0]
            )
        if hint is not None:
            # evaluateNominatedNode: the hinted node alone; passing, it is the host (no Score, no rotation).
            status, crashed = self._run_filter_plugins(pod, shape, hint)
            if status is _PASSED and self.extender is not None:
                # evaluateNominatedNode asks the extenders about the hinted node too.
                passed, failed = self.extender.filter(pod, [hint])
                if not passed:
                    status = failed[hint.name]
            if status is _PASSED:
                batch_store = self._batch
                assert batch_store is not None and now is not None
                batch_store.store(shape, hint.name, hint.name, None, self._cycle, now)
                return CycleOutcome(hint, crashed, evaluated_nodes=1, feasible_nodes=1)
            if status.rejected:
                diagnosis.add(hint.name, status)
        feasible, crashes, error = self._find_nodes_that_pass_filters(pod, shape, nodes, diagnosis, answers)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if self.extender is not None and feasible and error is None:
            feasible, failed = self.extender.filter(pod, feasible)
            for name, node_status in failed.items():
                diagnosis.add(name, node_status)
            if failed:  # findNodesThatFitPod: the extender joins the rejectors (kubernetes#122019)
                diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        statuses = MappingProxyType(diagnosis.node_to_status)
        common: dict[str, Any] = {
            "crashes": crashes,
            "evaluated_nodes": evaluated,
            "unschedulable_plugins": frozenset(diagnosis.unschedulable_plugins),
            "pending_plugins": frozenset(diagnosis.pending_plugins),
            "node_statuses": statuses,
        }
        if error is not None:
            return CycleOutcome(None, reason=error, error=error, **common)
        if not feasible:
            return CycleOutcome(None, reason=fit_error_message(count, statuses), **common)
        hinted = hint.name if hint is not None else ""
        if self.order_rng is not None:
            feasible = self._parallel_order(feasible)
        if len(feasible) == 1:
            if batch is not None and now is not None:
                batch.store(shape, hinted, feasible[0].name, None, self._cycle, now)
            return CycleOutcome(feasible[0], feasible_nodes=1, **common)
        try:
            scores, score_crashes = self._prioritize_nodes(pod, shape, feasible)
        except PluginError as err:
            return CycleOutcome(None, reason=str(err), error=str(err), feasible_nodes=len(feasible), **common)
        if self.extender is not None:
            # Asked about every feasible node; its weighted score joins each scored node's total.
            added = self.extender.prioritize(pod, feasible)
            scores = [
                s._replace(
                    total=s.total + added.get(s.name, 0), scores=(*s.scores, (EXTENDER, added.get(s.name, 0)))
                )
                for s in scores
            ]
        common["crashes"] = crashes + score_crashes
        if not scores:
            reason = "every feasible node crashed in Score"
            return CycleOutcome(None, reason=reason, feasible_nodes=len(feasible), **common)
        by_name = {node.name: node for node in feasible}
        host, rest = self._select(scores)
        if batch is not None and now is not None:
            batch.store(shape, hinted, host, rest, self._cycle, now)
        return CycleOutcome(by_name[host], feasible_nodes=len(feasible), scores=tuple(scores), **common)

    def _parallel_order(self, feasible: list[NodeInfo]) -> list[NodeInfo]:
        """``findNodesThatPassFilters`` with ``parallelism`` > 1 (kube-scheduler v1.36.3 ``schedule_one.go``):
        each goroutine that finds a node feasible takes the next slot (``atomic.AddInt32
        (&feasibleNodesLen, 1)``), so the feasible list is in the order the checks finished, not the node
        list's; scores keep that order, and so do ties (``selectHost``'s reservoir, the 1.35+ heap). Which
        nodes are checked stays upstream's: from ``nextStartNodeIndex`` until ``numFeasibleNodesToFind``
        pass. The finishing order is drawn from the run's seeded stream over the nodes in name order, so
        it changes with the seed and not with the node list's order."""
        rng = self.order_rng
        assert rng is not None
        ordered = sorted(feasible, key=lambda node: node.name)
        rng.shuffle(ordered)
        return ordered

    def _select(self, scores: list[NodeScore]) -> tuple[str, list[NodeScore] | None]:
        """The host, and from 1.35 the ``sortedNodeScores`` heap left after popping it."""
        if self._reservoir:
            if len(scores) == 1:
                return scores[0].name, None
            return select_host(scores, HIGHEST_SCORED_NODES_TO_REPORT, self.rng)[0], None
        heap = sorted_heap(scores)
        return pop_best(heap).name, heap

    # ---- findNodesThatPassFilters ---------------------------------------------------------------------

    def _find_nodes_that_pass_filters(
        self,
        pod: Pod,
        shape: Hashable,
        nodes: Sequence[NodeInfo],
        diagnosis: Diagnosis,
        answers: ShapeAnswers | None = None,
    ) -> tuple[list[NodeInfo], int, str | None]:
        count = len(nodes)
        to_find = (
            num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, count, self.profile_percentage)
            if self.profile.scores
            else 1
        )
        start = self.next_start_node_index
        feasible: list[NodeInfo] = []
        crashes = 0
        error: str | None = None
        if not self.profile.filters:
            feasible = [nodes[(start + i) % count] for i in range(to_find)]
        else:
            rotated = rotate(nodes, start)  # position p: the node checked p-th
            run = None
            fresh: Iterable[int] = range(count)
            if answers is not None:
                versions_of = self._bulk_versions if self._node_versions else None
                run = self._run = KeptRun(answers, pod, rotated, start, _PASSED, versions_of)
                fresh = run.positions_to_check()
            effects = cast(NodeEffects, self._effects[0]) if self._effects else None
            done = 0  # the positions before this one are answered
            for position in fresh:
                if run is not None and run.answer(done, position, diagnosis, feasible, to_find, effects):
                    break
                done = position + 1
                node = rotated[position]
                status, crashed = self._run_filter_plugins(pod, shape, node)
                if run is not None:
                    run.checked(position, status, crashed)
                crashes += crashed
                if status is _PASSED:
                    if len(feasible) == to_find:
                        break  # one too many: upstream cancels and drops it, uncounted
                    feasible.append(node)
                elif status.rejected:
                    diagnosis.add(node.name, status)
                else:
                    error = f"running {_quote(status.plugin)} filter plugin: {status.message}"
                    break
            else:
                if run is not None:
                    run.answer(done, count, diagnosis, feasible, to_find, effects)
        processed = len(feasible) + len(diagnosis.node_to_status)
        self.next_start_node_index = (start + processed) % count
        return feasible, crashes, error

    def _bulk_versions(self, nodes: Sequence[NodeInfo]) -> list[Hashable | None]:
        """The versioned Filter plugins' versions for each node (one plugin's own, or a tuple of several);
        None for a node one of them keeps nothing for (asked every time), which no kept answer matches."""
        fns = self._node_versions
        if len(fns) == 1:
            return fns[0](nodes)
        columns = [fn(nodes) for fn in fns]
        return [None if None in row else row for row in zip(*columns, strict=True)]

    def _run_filter_plugins(self, pod: Pod, shape: Hashable, node: NodeInfo) -> tuple[NodeStatus, int]:
        """``RunFilterPlugins``: the first plugin not answering Success decides, its name attached."""
        answers: dict[Hashable, Any] | None = None
        for model, ident, kind, version_of in self._filter_plan:
            try:
                status: Status | None
                if kind is _ASK:
                    status = model.filter(pod, node)
                else:
                    if answers is None:
                        answers = _answers(node)
                    if kind is _PURE:
                        key = (ident, shape)
                        status = answers.get(key)
                        if status is None:
                            status = answers[key] = model.filter(pod, node)
                    else:
                        assert version_of is not None
                        version = version_of(node)
                        if version is None:
                            status = model.filter(pod, node)
                        else:
                            held = _held(answers, ident, version)
                            status = held.get(shape)
                            if status is None:
                                status = held[shape] = model.filter(pod, node)
                            elif status.code != SUCCESS:
                                model.rejected_again(pod, node, status)
            except PluginPanic as panic:
                return NodeStatus(UNSCHEDULABLE, (f"panic: {panic.crash}",), model.name), 1
            if status.code != SUCCESS:
                return _node_status(status, model.name), 0
        return _PASSED, 0

    # ---- prioritizeNodes ------------------------------------------------------------------------------

    def _prioritize_nodes(
        self, pod: Pod, shape: Hashable, nodes: list[NodeInfo]
    ) -> tuple[list[NodeScore], int]:
        """``prioritizeNodes`` / ``RunScorePlugins``: (the scored nodes in evaluation order, crashes)."""
        plugins = self.profile.scores
        if not plugins:
            return [NodeScore(n.name, 1, order=i) for i, n in enumerate(nodes)], 0
        if self._kept_scores:
            return self._prioritize_kept(pod, shape, nodes)
        # Per plugin: the key its kept answers go by (None: asked every time, or kept per version).
        keys = [(id(m), "score", shape) if id(m) in self._pure else None for m, _ in plugins]
        versioned = [id(m) in self._versioned for m, _ in plugins]
        score_key = ("score", shape)
        rows: list[list[int]] = []
        kept: list[NodeInfo] = []
        crashes = 0
        for node in nodes:
            answers = _answers(node)
            row: list[int] = []
            try:
                for (model, _), key, by_version in zip(plugins, keys, versioned, strict=True):
                    if key is None:
                        version = cast(VersionedAnswers, model).answer_version(node) if by_version else None
                        if version is None:
                            row.append(model.score(pod, node))
                            continue
                        held = _held(answers, id(model), version)
                        score: int | None = held.get(score_key)
                        if score is None:
                            score = held[score_key] = model.score(pod, node)
                        row.append(score)
                        continue
                    value: int | None = answers.get(key)
                    if value is None:
                        value = answers[key] = model.score(pod, node)
                    row.append(value)
            except PluginPanic:
                crashes += 1
                continue
            except PluginError as err:
                raise PluginError(
                    f"running Score plugins: plugin {_quote(model.name)} failed with: {err}"
                ) from None
            kept.append(node)
            rows.append(row)
        if not kept:
            return [], crashes
        names = [node.name for node in kept]
        for index, (model, _) in enumerate(plugins):
            normalize = getattr(model, "normalize_scores", None)
            if normalize is None:
                continue
            try:
                column = list(normalize(pod, names, [row[index] for row in rows]))
            except PluginError as err:
                raise PluginError(
                    f"running Normalize on Score plugins: plugin {_quote(model.name)} failed with: {err}"
                ) from None
            for row, value in zip(rows, column, strict=True):
                row[index] = value
        out = []
        # The weighted row is a function of the scores alone, which take few distinct values.
        seen = self._weighted_rows
        for position, (name, row) in enumerate(zip(names, rows, strict=True)):
            scores = tuple(row)
            entry = seen.get(scores)
            if entry is None:
                if len(seen) >= _WEIGHTED_ROWS_KEPT:
                    seen.clear()
                entry = seen[scores] = _weighted(plugins, row)
            out.append(NodeScore(name, entry[0], entry[1], 0, position))
        return out, crashes

    def _prioritize_kept(
        self, pod: Pod, shape: Hashable, nodes: list[NodeInfo]
    ) -> tuple[list[NodeScore], int]:
        """Every score plugin kept (pure, or versioned by its source) and without NormalizeScore: a node's
        weighted scores depend on the pod's shape, the NodeInfo and the versioned plugins' versions alone,
        so they are kept on the NodeInfo whole, for the current versions only."""
        plugins = self.profile.scores
        versions_of = self._score_versions
        slot_key = (id(self), "scores")
        out: list[NodeScore] = []
        crashes = 0
        for node in nodes:
            versions = tuple(version_of(node) for version_of in versions_of) if versions_of else ()
            held = _held(_answers(node), slot_key, versions) if None not in versions else None
            entry: tuple[int, tuple[tuple[str, int], ...]] | None = (
                held.get(shape) if held is not None else None
            )
            if entry is None:
                row: list[int] = []
                try:
                    for model, _ in plugins:
                        row.append(model.score(pod, node))
                except PluginPanic:
                    crashes += 1
                    continue
                except PluginError as err:
                    raise PluginError(
                        f"running Score plugins: plugin {_quote(model.name)} failed with: {err}"
                    ) from None
                entry = _weighted(plugins, row)
                if held is not None:
                    held[shape] = entry
            out.append(NodeScore(node.name, entry[0], entry[1], 0, len(out)))
        return out, crashes


def _weighted(plugins: Sequence[tuple[Any, int]], row: list[int]) -> tuple[int, tuple[tuple[str, int], ...]]:
    """Range-checked weighted scores of one node and their total (``RunScorePlugins``' last step)."""
    weighted = []
    for (model, weight), score in zip(plugins, row, strict=True):
        if not MIN_NODE_SCORE <= score <= MAX_NODE_SCORE:
            raise PluginError(
                f"applying score defaultWeights on Score plugins: plugin {_quote(model.name)} returns an "
                f"invalid score {score}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] "
                "after normalizing"
            )
        weighted.append((model.name, score * weight))
    return sum(w for _, w in weighted), tuple(weighted)


def _node_status(status: Status, plugin: str) -> NodeStatus:
    """``status`` with its plugin attached, kept on the (frozen) Status as memo keeps values: a kept answer
    is the same Status object at every cycle."""
    store = status.__dict__
    node_status: NodeStatus | None = store.get(_NODE_STATUS)
    if node_status is None or node_status.plugin != plugin:
        node_status = store[_NODE_STATUS] = NodeStatus(status.code, status.reasons, plugin)
    return node_status


def _answers(node: NodeInfo) -> dict[Hashable, Any]:
    store = node.__dict__
    answers: dict[Hashable, Any] | None = store.get(_MEMO)
    if answers is None:
        answers = store[_MEMO] = {}
    return answers


def _held(answers: dict[Hashable, Any], key: Hashable, version: Hashable) -> dict[Hashable, Any]:
    """The answers kept under ``key`` in a node's ``answers`` for ``version``; those of an older version are
    dropped."""
    slot: tuple[Hashable, dict[Hashable, Any]] | None = answers.get(key)
    if slot is None or slot[0] != version:
        slot = answers[key] = (version, {})
    return slot[1]


def _quote(name: str) -> str:
    return f'"{name}"'


__all__ = [
    "REJECTED",
    "CycleOutcome",
    "PluginError",
    "Scheduler",
    "num_feasible_nodes_to_find",
]
