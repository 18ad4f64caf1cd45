"""kube-scheduler's ``PriorityQueue`` (``backend/queue/scheduling_queue.go``) on a simulated clock.

Three places hold a pending pod: activeQ (ready, in QueueSort order), backoffQ (waiting out its backoff)
and unschedulablePods (rejected; waiting for an event one of its rejecting plugins registered, or the
leftover flush). A failed attempt comes back through :meth:`PriorityQueue.add_unschedulable_if_not_present`:
with QueueingHints (on in every supported version) the rejecting plugins' hints are asked about the events
received while the pod was in flight, and the pod goes to activeQ (a Pending plugin said Queue), backoffQ
(a rejecting plugin said Queue, or no plugin rejected it: an error) or unschedulablePods; without them, to
backoffQ if any event arrived since its cycle began (``moveRequestCycle``), else unschedulablePods.
Cluster events (:meth:`PriorityQueue.move_all_to_active_or_backoff_queue`) move unschedulable pods whose
rejecting plugins' hints answer Queue.

No threads, no waiting: :meth:`PriorityQueue.pop` returns ``None`` where upstream blocks, and
``on_activated`` is called wherever upstream broadcasts to a blocked Pop (a pod entered activeQ, or with
``SchedulerPopFromBackoffQ`` backoffQ). The periodic flushes are methods the caller runs on their
schedule (:func:`backoff_flush_times`, :data:`UNSCHEDULABLE_FLUSH_PERIOD_S`).

Where upstream iterates a Go map (unschedulablePods, the hint map), the port takes insertion order; the
outcome differs only in the order of pods with equal priority and timestamp.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubeletemu.fleet.queue import events as ev
from kubeletemu.fleet.queue.active_queue import ActiveQueue, InFlightEvent, InFlightPodError
from kubeletemu.fleet.queue.backoff_queue import BackoffQueue
from kubeletemu.fleet.queue.events import ClusterEvent
from kubeletemu.fleet.queue.hints import (
    QUEUE,
    QUEUE_SKIP,
    QueueingHintError,
    QueueingHintFunction,
    QueueingHintMap,
    queue_always,
)
from kubeletemu.fleet.queue.nominator import NominatingInfo, Nominator, PodLister
from kubeletemu.fleet.queue.podinfo import NS_PER_S, ZERO_TIME, QueuedPodInfo, to_ns, to_s
from kubeletemu.fleet.queue.pods import (
    is_pod_updated,
    pod_key,
    required_affinity_terms,
)
from kubeletemu.fleet.queue.unschedulable_pods import UnschedulablePods
from kubeletemu.fleet.queue.versions import (
    DEFAULT_VERSION,
    SCHEDULER_POP_FROM_BACKOFF_Q,
    SCHEDULER_QUEUEING_HINTS,
    check_version,
    feature_gates,
    in_effect,
    step_at,
)
from kubeletemu.pod import Pod

DEFAULT_POD_INITIAL_BACKOFF_S = 1.0
DEFAULT_POD_MAX_BACKOFF_S = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_S = 300.0
BACKOFF_FLUSH_PERIOD_S = 1.0
UNSCHEDULABLE_FLUSH_PERIOD_S = 30.0

# Where a pod went (upstream's queue names).
ACTIVE_Q = "Active"
BACKOFF_Q = "Backoff"
UNSCHEDULABLE_Q = "Unschedulable"

PRIORITY_SORT = "PrioritySort"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"

# queueingStrategy
QUEUE_SKIP_STRATEGY = "queueSkip"
QUEUE_AFTER_BACKOFF = "queueAfterBackoff"
QUEUE_IMMEDIATELY = "queueImmediately"

LessFn = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
# For a pod and its shape number: a failed attempt's rejecting plugins (unschedulable, pending), or None: the
# pod needs a cycle. Frozen: the pods answered alike share them.
AttemptAnswer = Callable[[Pod, int], tuple[frozenset[str], frozenset[str]] | None]
PreEnqueueCheck = Callable[[Pod], bool]


def priority_sort(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """``PrioritySort.Less``: higher ``spec.priority`` first, then the earlier timestamp."""
    first, second = a.priority, b.priority  # the pods' priority(), kept on the infos
    return first > second or (first == second and a.timestamp < b.timestamp)


def priority_sort_key(info: QueuedPodInfo) -> tuple[int, int]:
    """:func:`priority_sort` as a value: ``priority_sort(a, b) == key(a) < key(b)``."""
    return -info.priority, info.timestamp  # the pod's priority(), kept on the info


# The QueueSort less functions the heaps may compare as values (see heap.Heap's sort_key).
SORT_KEYS: dict[LessFn, Callable[[QueuedPodInfo], tuple[int, ...]]] = {priority_sort: priority_sort_key}


class PreEnqueuePlugin(Protocol):
    """A PreEnqueue plugin: ``pre_enqueue`` answers whether the pod may enter activeQ (or backoffQ)."""

    @property
    def name(self) -> str: ...

    def pre_enqueue(self, pod: Pod) -> bool: ...


@dataclass(frozen=True)
class SchedulingGatesPlugin:
    """The in-tree ``SchedulingGates`` PreEnqueue plugin: a pod with ``spec.schedulingGates`` waits."""

    name: str = "SchedulingGates"

    def pre_enqueue(self, pod: Pod) -> bool:
        from kubeletemu.fleet.queue.pods import scheduling_gates

        return not scheduling_gates(pod)


class AlreadyQueuedError(ValueError):
    """``AddUnschedulableIfNotPresent`` for a pod already in one of the queues."""


def backoff_flush_times(
    run_at: float, version: str, pop_from_backoff_q: bool | None = None
) -> tuple[float, float]:
    """When the backoffQ flush first runs after ``Run`` at ``run_at`` seconds, and its period: 1.32 runs
    it at once and every second after (``wait.Until``); from 1.33 it waits for the next window
    (``waitUntilAlignedWithOrderingWindow``: the next whole second with ``SchedulerPopFromBackoffQ``, one
    second later without) and then ticks every second."""
    check_version(version)
    if not in_effect("pop-from-backoffq", version):
        return run_at, BACKOFF_FLUSH_PERIOD_S
    enabled = (
        feature_gates(version)[SCHEDULER_POP_FROM_BACKOFF_Q]
        if pop_from_backoff_q is None
        else pop_from_backoff_q
    )
    now = to_ns(run_at)
    later = now + NS_PER_S
    first = later - later % NS_PER_S if enabled else later
    return to_s(first), BACKOFF_FLUSH_PERIOD_S


class PriorityQueue:
    """The scheduling queue of kube-scheduler ``version`` (1.32 … 1.36, default 1.36).

    ``hints`` maps each profile (scheduler name) to its QueueingHint map (:mod:`.hints`); a single map
    may be given for the default scheduler. ``pre_enqueue`` lists each profile's PreEnqueue plugins in
    order. ``feature_gates`` overrides ``SchedulerQueueingHints`` / ``SchedulerPopFromBackoffQ`` where the
    version allows. ``now`` is the simulated clock in seconds; ``on_activated`` is called whenever a pod
    becomes poppable (upstream's broadcast). ``pod_lister`` answers the nominator's informer lookups.
    ``on_move(queue, event, pod)`` is called for each move upstream counts in
    ``scheduler_queue_incoming_pods_total`` (queue ``active``/``backoff``/``unschedulable``, the event label),
    the run's log of queue moves.
    """

    def __init__(
        self,
        now: Callable[[], float],
        *,
        version: str = DEFAULT_VERSION,
        hints: QueueingHintMap | Mapping[str, QueueingHintMap] | None = None,
        pre_enqueue: Mapping[str, Sequence[PreEnqueuePlugin]] | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        pod_initial_backoff_s: float = DEFAULT_POD_INITIAL_BACKOFF_S,
        pod_max_backoff_s: float = DEFAULT_POD_MAX_BACKOFF_S,
        pod_max_in_unschedulable_pods_s: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_S,
        less: LessFn = priority_sort,
        on_activated: Callable[[], None] | None = None,
        pod_lister: PodLister | None = None,
        emulated_version: str | None = None,
        on_move: Callable[[str, str, Pod], None] | None = None,
    ) -> None:
        self.version = check_version(version)
        gates = _feature_gates(version, feature_gates, emulated_version)
        self.queueing_hints_enabled = gates[SCHEDULER_QUEUEING_HINTS]
        self.pop_from_backoff_q_enabled = gates[SCHEDULER_POP_FROM_BACKOFF_Q]
        self._clock = now
        self.on_activated = on_activated
        self.pod_max_in_unschedulable_pods_ns = to_ns(pod_max_in_unschedulable_pods_s)
        self.queueing_hint_map = _per_profile(hints)
        self.pre_enqueue_plugins = {k: tuple(v) for k, v in (pre_enqueue or {}).items()}
        self.plugin_to_events = _plugin_to_events(self.queueing_hint_map)
        self._matched_functions: dict[tuple[str, ClusterEvent], tuple[QueueingHintFunction, ...] | None] = {}
        self._of_interest: dict[ClusterEvent, bool] = {}
        sort_key = SORT_KEYS.get(less)
        self.backoff_q = BackoffQueue(
            self._now,
            to_ns(pod_initial_backoff_s),
            to_ns(pod_max_backoff_s),
            less,
            self.pop_from_backoff_q_enabled,
            version,
            on_move,
            sort_key,
        )
        self.active_q = ActiveQueue(
            less,
            self.queueing_hints_enabled,
            self.backoff_q if self.pop_from_backoff_q_enabled else None,
            version,
            on_move,
            sort_key,
        )
        self.unschedulable_pods = UnschedulablePods(on_move)
        self.nominator = Nominator(pod_lister)
        self.move_request_cycle = -1
        # Version switches, each a behaviour of versions.py.
        self._split = in_effect("backoff-queue-split", version)
        self._gating_plugin = in_effect("gating-plugin", version)
        self._skip_preenqueue_step = step_at("preenqueue-from-backoffq", version)
        self._gated_entry_step = step_at("gated-requeue-entry", version)
        self._backoff_counts = in_effect("backoff-counts", version)
        self._clear_at_failure = in_effect("rejector-plugins-cleared", version)

    # ---- time ----

    def _now(self) -> int:
        return to_ns(self._clock())

    def _broadcast(self) -> None:
        if self.on_activated is not None:
            self.on_activated()

    # ---- PreEnqueue ----

    def _run_pre_enqueue_plugins(self, info: QueuedPodInfo) -> None:
        """``runPreEnqueuePlugins``: the first plugin that refuses gates the pod and is added to its
        unschedulable plugins (1.34+: and remembered with its events, and asked first next time)."""
        plugins = self.pre_enqueue_plugins and self.pre_enqueue_plugins.get(info.profile, ())
        if not plugins:  # what the loops below come to with no plugin
            if self._gating_plugin:
                info.gating_plugin = ""
            else:
                info.gated_flag = False
            return
        if not self._gating_plugin:
            for plugin in plugins:
                if plugin.pre_enqueue(info.pod):
                    continue
                info.unschedulable_plugins = info.unschedulable_plugins | {plugin.name}
                info.gated_flag = True
                return
            info.gated_flag = False
            return
        gating = info.gating_plugin
        by_name = {p.name: p for p in plugins}
        if gating and gating in by_name and not self._run_one(by_name[gating], info):
            return
        for plugin in plugins:
            if gating and plugin.name == gating:
                continue
            if not self._run_one(plugin, info):
                return
        info.gating_plugin = ""

    def _run_one(self, plugin: PreEnqueuePlugin, info: QueuedPodInfo) -> bool:
        if plugin.pre_enqueue(info.pod):
            return True
        info.unschedulable_plugins = info.unschedulable_plugins | {plugin.name}
        info.gating_plugin = plugin.name
        info.gating_plugin_events = tuple(self.plugin_to_events.get(plugin.name, ()))
        return False

    # ---- moving pods ----

    def _move_to_active_q(self, info: QueuedPodInfo, event: str, moves_from_backoff_q: bool = False) -> bool:
        """``moveToActiveQ``: PreEnqueue (skipped for a pod coming straight from backoffQ with
        SchedulerPopFromBackoffQ: 1.33-1.34 only for the flush), then activeQ, or unschedulablePods when
        gated."""
        gated_before = info.gated
        if self._skip_preenqueue_step == 0:
            skip = False
        elif self._skip_preenqueue_step == 1:
            skip = self.pop_from_backoff_q_enabled and event == ev.BACKOFF_COMPLETE
        else:
            skip = self.pop_from_backoff_q_enabled and moves_from_backoff_q
        if not skip:
            self._run_pre_enqueue_plugins(info)
        if info.gated:
            if self.active_q.has(info.pod) or self.backoff_q.has(info.pod):
                return False
            if self._gated_entry_step == 1 and self.unschedulable_pods.get(info.pod) is not None:
                return False
            # 1.32 counts no move for a gated pod here.
            self.unschedulable_pods.add_or_update(info, gated_before, event if self._split else None)
            return False
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self._now()
        self.unschedulable_pods.delete(info.pod, gated_before)
        self.backoff_q.delete(info)
        self.active_q.add(info, event)
        if event in (
            ev.EVENT_UNSCHEDULED_POD_ADD.label(self.version),
            ev.EVENT_UNSCHEDULED_POD_UPDATE.label(self.version),
        ):
            self.nominator.add_nominated_pod(info.pod)
        return True

    def _move_to_backoff_q(self, info: QueuedPodInfo, event: str) -> bool:
        """``moveToBackoffQ`` (1.33+; 1.32 adds to the heap directly): with SchedulerPopFromBackoffQ,
        PreEnqueue runs here and a gated pod goes to unschedulablePods instead."""
        gated_before = info.gated
        if self.pop_from_backoff_q_enabled:
            self._run_pre_enqueue_plugins(info)
            if info.gated:
                if self._gated_entry_step != 1 or self.unschedulable_pods.get(info.pod) is None:
                    self.unschedulable_pods.add_or_update(info, gated_before, event)
                return False
        self.unschedulable_pods.delete(info.pod, gated_before, info.key)
        self.backoff_q.add(info, event)
        return True

    def _requeue_with_strategy(self, info: QueuedPodInfo, strategy: str, event: str) -> str:
        """``requeuePodWithQueueingStrategy`` (``requeuePodViaQueueingHint`` up to 1.33)."""
        if strategy == QUEUE_SKIP_STRATEGY:
            self.unschedulable_pods.add_or_update(info, info.gated, event)
            return UNSCHEDULABLE_Q
        if strategy == QUEUE_AFTER_BACKOFF and self.backoff_q.is_pod_backing_off(info):
            if not self._split:
                self.backoff_q.add(info, event)
                return BACKOFF_Q
            return BACKOFF_Q if self._move_to_backoff_q(info, event) else UNSCHEDULABLE_Q
        if self._move_to_active_q(info, event):
            return ACTIVE_Q
        return UNSCHEDULABLE_Q

    def _wakes(self, queue: str) -> bool:
        return queue == ACTIVE_Q or (self.pop_from_backoff_q_enabled and queue == BACKOFF_Q)

    # ---- the API ----

    def add(self, pod: Pod) -> None:
        """``Add``: a new pending pod enters activeQ (or unschedulablePods if gated)."""
        info = self.new_queued_pod_info(pod)
        if self._move_to_active_q(info, ev.EVENT_UNSCHEDULED_POD_ADD.label(self.version)):
            self._broadcast()

    def new_queued_pod_info(self, pod: Pod, *plugins: str) -> QueuedPodInfo:
        """``newQueuedPodInfo``: stamped now, never attempted."""
        return QueuedPodInfo(pod=pod, timestamp=self._now(), unschedulable_plugins=frozenset(plugins))

    def activate(self, pods: Iterable[Pod]) -> None:
        """``Activate``: move the pods from unschedulablePods or backoffQ to activeQ; an in-flight pod gets
        the ``ForceActivate`` event (and the move request cycle) so it comes back when its attempt ends."""
        activated = False
        for pod in pods:
            if self._activate(pod):
                activated = True
                continue
            self.active_q.add_events_if_pod_in_flight(None, pod, [ev.EVENT_FORCE_ACTIVATE])
            self.move_request_cycle = self.active_q.sched_cycle
        if activated:
            self._broadcast()

    def _activate(self, pod: Pod) -> bool:
        info = self.unschedulable_pods.get(pod)
        from_backoff = False
        if info is None:
            info = self.backoff_q.get(pod)
            if info is None:
                return False
            if self._split:  # 1.33+: taken out of backoffQ first (moveToActiveQ would)
                self.backoff_q.delete(info)
            from_backoff = True
        return self._move_to_active_q(info, ev.FORCE_ACTIVATE, from_backoff)

    @property
    def scheduling_cycle(self) -> int:
        return self.active_q.sched_cycle

    def pop(self, answered: AttemptAnswer | None = None) -> QueuedPodInfo | None:
        """``Pop``: the next pod to schedule, now in flight; ``None`` when upstream would block.

        ``answered`` (QueueingHints on) is offered each popped pod while nothing else is in flight. A pod
        it answers, with the plugins that rejected it, had its attempt fail at this instant, with no
        cluster event in between (the caller's promise): its ``handleSchedulingFailure`` and ``Done``
        are done at once and the next pod is popped. Its in-flight entry would have recorded no event
        and been removed at ``Done``, so none is made. The first pod ``answered`` returns ``None`` for
        is returned, in flight."""
        active_q = self.active_q
        if answered is None or not self.queueing_hints_enabled or active_q.in_flight_pods:
            return active_q.pop()
        # A pod failing at once: ActiveQueue.take, its count_attempt, handleSchedulingFailure and Done, inline
        # (a burst of thousands of pods fails here after each node event). With a rejecting plugin that is
        # _add_unschedulable with no event received: the strategy is QueueSkip, to unschedulablePods.
        active_heap = active_q.queue
        held = active_heap.items_by_key  # activeQ's pods: an empty heap is not asked to pop
        popper = active_q.backoff_popper
        pop_backoff = popper.pod_backoff_q.pop if popper is not None else None
        on_move = active_q.on_move
        reset_expiration = active_q.reset_expiration_at_pop
        counts = self._backoff_counts
        pool = self.unschedulable_pods.pod_info_map
        pool_on_move = self.unschedulable_pods.on_move
        now: int | None = None  # the clock stands still within a call
        while True:
            info = active_heap.pop() if held else None
            if info is None:
                if pop_backoff is None:
                    return None
                info = pop_backoff()
                if info is None:
                    return None
                if on_move is not None:
                    on_move("active", ev.POP_FROM_BACKOFF_Q, info.pod)
            rejected = answered(info.pod, info.shape)
            if rejected is None:
                active_q.move_pod_to_in_flight(info)  # nothing in flight: it cannot be already
                return info
            if now is None:
                now = self._now()
            # count_attempt, then _record_failure: the rejecting plugins replace the last attempt's (cleared
            # at the pop up to 1.35, at the failure from 1.36), the gating plugin is forgotten either way.
            info.attempts += 1
            if reset_expiration:
                info.backoff_expiration = ZERO_TIME
            active_q.sched_cycle += 1
            info.gating_plugin = ""
            info.gating_plugin_events = ()
            # The kept outcome's own sets, shared by every pod it answers (the sets are only ever replaced).
            unschedulable, pending = rejected
            info.unschedulable_plugins = unschedulable
            info.pending_plugins = pending
            if not unschedulable and not pending:
                self._add_unschedulable(info, active_q.sched_cycle, ())  # an error: after backoff
                continue
            # _count_failure, then unschedulablePods (no queue holds the pod: it was just taken).
            info.timestamp = now
            if counts:
                info.unschedulable_count += 1
                info.consecutive_errors_count = 0
                info.backoff_expiration = ZERO_TIME
                info.was_flushed_from_unschedulable = False
            key = info.key
            if pool_on_move is not None and key not in pool:
                pool_on_move("unschedulable", ev.SCHEDULE_ATTEMPT_FAILURE, info.pod)
            pool[key] = info

    def can_pop(self) -> bool:
        return self.active_q.can_pop()

    def pop_specific_pod(self, pod: Pod) -> QueuedPodInfo | None:
        """``PopSpecificPod`` (1.36): activate the pod and take it out of activeQ as Pop would."""
        self._activate(pod)
        info = self.active_q.get(pod)
        if info is None or not self.active_q.delete(info):
            return None
        try:
            self.active_q.move_pod_to_in_flight(info)
        except InFlightPodError:
            return None
        return info

    def done(self, uid: str) -> None:
        """``Done``: the pod's attempt (scheduling and binding) is over."""
        if self.queueing_hints_enabled:
            self.active_q.done(uid)

    def in_flight_pods(self) -> list[Pod]:
        return self.active_q.list_in_flight_pods() if self.queueing_hints_enabled else []

    def handle_scheduling_failure(
        self,
        info: QueuedPodInfo,
        unschedulable_plugins: Iterable[str] = (),
        pending_plugins: Iterable[str] = (),
    ) -> None:
        """What ``handleSchedulingFailure`` does with the queue for a pod still pending in the informer:
        record the plugins that rejected it (none: an error) and put it back at the current cycle. From
        1.36 the previous attempt's plugins are cleared here (before, Pop cleared them)."""
        self._record_failure(info, unschedulable_plugins, pending_plugins)
        self.add_unschedulable_if_not_present(info, self.scheduling_cycle)

    def _record_failure(
        self, info: QueuedPodInfo, unschedulable_plugins: Iterable[str], pending_plugins: Iterable[str]
    ) -> None:
        if self._clear_at_failure:
            info.clear_rejector_plugins()
        info.unschedulable_plugins = frozenset(unschedulable_plugins)
        info.pending_plugins = frozenset(pending_plugins)

    def add_unschedulable_if_not_present(self, info: QueuedPodInfo, pod_scheduling_cycle: int) -> None:
        """``AddUnschedulableIfNotPresent``: a pod back from a failed attempt. Raises
        :class:`AlreadyQueuedError` if it is already queued (the pod is done either way)."""
        try:
            self._add_unschedulable(info, pod_scheduling_cycle)
        finally:
            self.done(info.pod.uid)

    def _add_unschedulable(
        self, info: QueuedPodInfo, pod_scheduling_cycle: int, received: Sequence[InFlightEvent] | None = None
    ) -> None:
        """``received``: the events received while the pod was in flight, when the caller knows them
        (None: the in-flight list's)."""
        pod = info.pod
        key = pod_key(pod)
        if key in self.unschedulable_pods.pod_info_map:
            raise AlreadyQueuedError(f"Pod {_kobj(pod)} is already present in unschedulable queue")
        if self.active_q.has_key(key):
            raise AlreadyQueuedError(f"Pod {_kobj(pod)} is already present in the active queue")
        if self.backoff_q.has_key(key):
            raise AlreadyQueuedError(f"Pod {_kobj(pod)} is already present in the backoff queue")
        self._count_failure(info, self._now())
        if not self.queueing_hints_enabled:
            self._add_unschedulable_without_hints(info, pod_scheduling_cycle)
            return
        strategy = self._hint_for_in_flight_pod(info, received)
        queue = self._requeue_with_strategy(info, strategy, ev.SCHEDULE_ATTEMPT_FAILURE)
        if self._wakes(queue):
            self._broadcast()

    def _count_failure(self, info: QueuedPodInfo, now: int) -> None:
        """What ``AddUnschedulableIfNotPresent`` records of a failed attempt: its time and (1.34+) the
        failure counts, the cached expiry dropped."""
        info.timestamp = now
        if self._backoff_counts:
            if not info.unschedulable_plugins and not info.pending_plugins:
                info.consecutive_errors_count += 1
            else:
                info.unschedulable_count += 1
                info.consecutive_errors_count = 0
            info.backoff_expiration = ZERO_TIME
            info.was_flushed_from_unschedulable = False

    def _add_unschedulable_without_hints(self, info: QueuedPodInfo, pod_scheduling_cycle: int) -> None:
        """``addUnschedulableWithoutQueueingHint``: to backoffQ if a move request came during the pod's
        cycle or no plugin rejected it, else unschedulablePods."""
        if self.move_request_cycle >= pod_scheduling_cycle or not info.rejector_plugins():
            if not self._split:
                self.backoff_q.add(info, ev.SCHEDULE_ATTEMPT_FAILURE)
            elif (
                self._move_to_backoff_q(info, ev.SCHEDULE_ATTEMPT_FAILURE) and self.pop_from_backoff_q_enabled
            ):
                self._broadcast()
        else:
            self.unschedulable_pods.add_or_update(info, False, ev.SCHEDULE_ATTEMPT_FAILURE)

    def _hint_for_in_flight_pod(self, info: QueuedPodInfo, received: Sequence[InFlightEvent] | None) -> str:
        """``determineSchedulingHintForInFlightPod``."""
        if not info.unschedulable_plugins and not info.pending_plugins:
            return QUEUE_AFTER_BACKOFF
        if received is None:
            received = self.active_q.cluster_events_for_pod(info)
            if received is None:
                return QUEUE_AFTER_BACKOFF
        strategy = QUEUE_SKIP_STRATEGY
        for record in received:
            found = self._is_pod_worth_requeuing(info, record.event, record.old, record.new)
            if found == QUEUE_IMMEDIATELY:
                return QUEUE_IMMEDIATELY
            if found == QUEUE_AFTER_BACKOFF:
                strategy = QUEUE_AFTER_BACKOFF
                if not info.pending_plugins:
                    return QUEUE_AFTER_BACKOFF
        return strategy

    def _is_pod_worth_requeuing(
        self,
        info: QueuedPodInfo,
        event: ClusterEvent,
        old: object,
        new: object,
        matched: dict[str, tuple[QueueingHintFunction, ...] | None] | None = None,
    ) -> str:
        """``isPodWorthRequeuing``: ask the hints of the plugins that rejected the pod; Queue from a
        Pending plugin requeues at once, from an Unschedulable one after backoff; a hint error is Queue.
        ``matched``: the hint functions ``event`` matches by profile, kept by a caller asking for many
        pods."""
        rejectors = info.rejector_plugins()
        if not rejectors:
            return QUEUE_AFTER_BACKOFF
        if event.is_wildcard:
            if new is not None and (not isinstance(new, Pod) or new.uid != info.pod.uid):
                return QUEUE_SKIP_STRATEGY
            return QUEUE_AFTER_BACKOFF
        profile = info.profile
        if matched is None:
            functions = self._hint_functions(profile, event)
        else:
            if profile not in matched:
                matched[profile] = self._hint_functions(profile, event)
            functions = matched[profile]
        if functions is None:
            return QUEUE_AFTER_BACKOFF
        strategy = QUEUE_SKIP_STRATEGY
        for function in functions:
            if function.plugin_name not in rejectors:
                continue
            try:
                hint = function.fn(info.pod, old, new)
            except QueueingHintError:
                hint = QUEUE
            if hint == QUEUE_SKIP:
                continue
            if function.plugin_name in info.pending_plugins:
                return QUEUE_IMMEDIATELY
            if not info.pending_plugins:
                return QUEUE_AFTER_BACKOFF
            strategy = QUEUE_AFTER_BACKOFF
        return strategy

    def _hint_functions(self, profile: str, event: ClusterEvent) -> tuple[QueueingHintFunction, ...] | None:
        """The hint functions of the registrations ``event`` matches in the profile's map, in the map's
        order (``None``: no map for the profile). The maps are fixed once built, so the matching is kept
        per (profile, event)."""
        key = (profile, event)
        if key in self._matched_functions:
            return self._matched_functions[key]
        hint_map = self.queueing_hint_map.get(profile)
        found = (
            None
            if hint_map is None
            else tuple(
                function
                for registered, functions in hint_map.items()
                if ev.match(registered, event, self.version)
                for function in functions
            )
        )
        self._matched_functions[key] = found
        return found

    def _plugins_by_hint(
        self,
        profile: str,
        event: ClusterEvent,
        matched: dict[str, tuple[QueueingHintFunction, ...] | None],
    ) -> tuple[frozenset[str], frozenset[str]] | None:
        """For a profile without PreEnqueue plugins, the plugins ``event`` matches a registration of
        without a hint function (always Queue) and those with one; ``None`` where the one-step move does
        not apply (PreEnqueue plugins, or no hint map: the general path answers)."""
        if self.pre_enqueue_plugins.get(profile):
            return None
        if profile not in matched:
            matched[profile] = self._hint_functions(profile, event)
        functions = matched[profile]
        if functions is None:
            return None
        always = frozenset(f.plugin_name for f in functions if f.fn is queue_always)
        hinted = frozenset(f.plugin_name for f in functions if f.fn is not queue_always)
        return always, hinted

    def _is_event_of_interest(self, event: ClusterEvent) -> bool:
        if event.is_wildcard:
            return True
        interesting = self._of_interest.get(event)
        if interesting is None:
            interesting = self._of_interest[event] = any(
                ev.match(registered, event, self.version)
                for hint_map in self.queueing_hint_map.values()
                for registered in hint_map
            )
        return interesting

    def flush_backoff_q_completed(self) -> None:
        """``flushBackoffQCompleted`` (every second): pods whose backoff completed go to activeQ."""
        activated = False
        for info in self.backoff_q.pop_all_backoff_completed():
            if self._move_to_active_q(info, ev.BACKOFF_COMPLETE, True):
                activated = True
        if activated:
            self._broadcast()

    def flush_unschedulable_pods_leftover(self) -> None:
        """``flushUnschedulablePodsLeftover`` (every 30 s): pods in unschedulablePods longer than
        ``podMaxInUnschedulablePodsDuration`` (5 min) move as on the ``UnschedulableTimeout`` event."""
        now = self._now()
        stale = [
            info
            for info in self.unschedulable_pods
            if now - info.timestamp > self.pod_max_in_unschedulable_pods_ns
        ]
        for info in stale:
            info.was_flushed_from_unschedulable = True
        if stale:
            self._move_pods(stale, ev.EVENT_UNSCHEDULABLE_TIMEOUT, None, None)

    def update(self, old: Pod | None, new: Pod) -> None:
        """``Update``: a pending pod changed (the informer's update of an unassigned pod)."""
        events: list[ClusterEvent] = []
        if self.queueing_hints_enabled:
            events = ev.pod_scheduling_properties_change(new, old if old is not None else new, self.version)
            if self.active_q.add_events_if_pod_in_flight(old, new, events):
                return
        if old is not None:
            info = self.active_q.update(new, old)
            if info is None:
                info = self.backoff_q.update(new, old)
            if info is not None:
                self.nominator.update_nominated_pod(old, new)
                return
        info = self.unschedulable_pods.get(new)
        if info is not None:
            info.set_pod(new)
            self.nominator.update_nominated_pod(old if old is not None else new, new)
            if self.queueing_hints_enabled:
                for event in events:
                    strategy = self._is_pod_worth_requeuing(info, event, old, new)
                    queue = self._requeue_with_strategy(info, strategy, event.label(self.version))
                    if queue != UNSCHEDULABLE_Q:
                        self.unschedulable_pods.delete(info.pod, info.gated)
                    if self._wakes(queue):
                        self._broadcast()
                        break
                return
            if old is not None and is_pod_updated(old, new):
                if self.backoff_q.is_pod_backing_off(info):
                    if not self._split:
                        self.backoff_q.add(info)
                        self.unschedulable_pods.delete(info.pod, info.gated)
                    else:
                        label = ev.EVENT_UNSCHEDULED_POD_UPDATE.label(self.version)
                        if self._move_to_backoff_q(info, label) and self.pop_from_backoff_q_enabled:
                            self._broadcast()
                    return
                # 1.32 labels this move BackoffComplete; from 1.33 UnschedulablePodUpdate.
                label = (
                    ev.BACKOFF_COMPLETE
                    if not self._split
                    else ev.EVENT_UNSCHEDULED_POD_UPDATE.label(self.version)
                )
                if self._move_to_active_q(info, label):
                    self._broadcast()
                return
            self.unschedulable_pods.add_or_update(
                info, info.gated, ev.EVENT_UNSCHEDULED_POD_UPDATE.label(self.version)
            )
            return
        fresh = self.new_queued_pod_info(new)
        if self._move_to_active_q(fresh, ev.EVENT_UNSCHEDULED_POD_UPDATE.label(self.version)):
            self._broadcast()

    def delete(self, pod: Pod) -> None:
        """``Delete``: the pending pod is gone (deleted, or bound by someone else)."""
        self.nominator.delete_nominated_pod_if_exists(pod)
        info = self.active_q.get(pod)
        if info is not None and self.active_q.delete(info):
            return
        found = self.backoff_q.get(pod)
        if found is not None and self.backoff_q.delete(found):
            return
        unschedulable = self.unschedulable_pods.get(pod)
        if unschedulable is not None:
            self.unschedulable_pods.delete(pod, unschedulable.gated)

    def assigned_pod_added(self, pod: Pod) -> None:
        """``AssignedPodAdded`` (the event handlers call it only while QueueingHints are off): moves the
        unschedulable pods with a cross-topology term the pod may satisfy."""
        self._move_pods(self._with_cross_topology_term(pod), ev.EVENT_ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(self, old: Pod, new: Pod, event: ClusterEvent) -> None:
        """``AssignedPodUpdated`` (QueueingHints off): a scale-down moves every unschedulable pod, any
        other update those with a cross-topology term."""
        if ev.match(ClusterEvent(ev.POD, ev.UPDATE_POD_SCALE_DOWN), event, self.version):
            self._move_all(event, old, new, None)
        else:
            self._move_pods(self._with_cross_topology_term(new), event, old, new)

    def _with_cross_topology_term(self, pod: Pod) -> list[QueuedPodInfo]:
        """``getUnschedulablePodsWithCrossTopologyTerm``: rejected by PodTopologySpread in the pod's
        namespace, or with a required affinity term the pod matches (namespace selectors are not
        modelled)."""
        return [
            info
            for info in self.unschedulable_pods
            if (POD_TOPOLOGY_SPREAD in info.unschedulable_plugins and info.pod.namespace == pod.namespace)
            or any(term.matches(pod) for term in required_affinity_terms(info.pod))
        ]

    def move_all_to_active_or_backoff_queue(
        self,
        event: ClusterEvent,
        old: object = None,
        new: object = None,
        pre_check: PreEnqueueCheck | None = None,
    ) -> None:
        """``MoveAllToActiveOrBackoffQueue``: a cluster event; each unschedulable pod (passing
        ``pre_check``) whose rejecting plugins' hints answer Queue moves to activeQ or backoffQ."""
        self._move_all(event, old, new, pre_check)

    def _move_all(
        self, event: ClusterEvent, old: object, new: object, pre_check: PreEnqueueCheck | None
    ) -> None:
        if not self._is_event_of_interest(event):
            return
        chosen = [info for info in self.unschedulable_pods if pre_check is None or pre_check(info.pod)]
        self._move_pods(chosen, event, old, new)

    def _move_pods(
        self, infos: Sequence[QueuedPodInfo], event: ClusterEvent, old: object, new: object
    ) -> None:
        """``movePodsToActiveOrBackoffQueue``."""
        if not self._is_event_of_interest(event):
            return
        activated = False
        label = event.label(self.version)
        matched: dict[str, tuple[QueueingHintFunction, ...] | None] = {}
        # The common case taken in one step (below): 1.33+ with SchedulerPopFromBackoffQ and QueueingHints,
        # a pod no PreEnqueue plugin can gate, rejected by plugins whose matching registrations have no
        # hint function (the answer then depends only on which plugins rejected it).
        direct = (
            self._split
            and self.pop_from_backoff_q_enabled
            and self.queueing_hints_enabled
            and not event.is_wildcard
        )
        window = self.backoff_q.align_to_window(self._now()) if direct else 0
        plugin_sets: dict[str, tuple[frozenset[str], frozenset[str]] | None] = {}
        backoff_time, to_backoff_q = self.backoff_q.backoff_time, self.backoff_q.add_rejected
        pool = self.unschedulable_pods.pod_info_map
        for info in infos:
            if info.gating_plugin or info.gated_flag:  # info.gated, inline
                if self._gating_plugin:
                    if not ev.match_any(event, info.gating_plugin_events, self.version):
                        continue
                elif "SchedulingGates" in info.unschedulable_plugins:
                    continue
            elif direct and not info.pending_plugins and info.unschedulable_plugins:
                profile = info.profile
                if profile not in plugin_sets:
                    plugin_sets[profile] = self._plugins_by_hint(profile, event, matched)
                sets = plugin_sets[profile]
                if sets is not None:
                    always, hinted = sets
                    rejectors = info.unschedulable_plugins
                    if hinted.isdisjoint(rejectors):
                        if always.isdisjoint(rejectors):
                            continue  # QueueSkip
                        expiry = backoff_time(info)
                        if not expiry < window:
                            # queueAfterBackoff while backing off: moveToBackoffQ. The profile has no
                            # PreEnqueue plugin, so its PreEnqueue step leaves the ungated pod as it is:
                            # the pod goes to backoffQ and wakes Pop.
                            pool.pop(info.key, None)
                            to_backoff_q(info, expiry, label)
                            activated = True
                            continue
            strategy = self._is_pod_worth_requeuing(info, event, old, new, matched)
            if strategy == QUEUE_SKIP_STRATEGY:
                continue
            self.unschedulable_pods.delete(info.pod, info.gated)
            queue = self._requeue_with_strategy(info, strategy, label)
            if self._wakes(queue):
                activated = True
        self.move_request_cycle = self.active_q.sched_cycle
        if self.queueing_hints_enabled:
            self.active_q.add_event_if_any_in_flight(old, new, event)
        if activated:
            self._broadcast()

    # ---- nominations ----

    def add_nominated_pod(self, pod: Pod, nominating: NominatingInfo | None = None) -> None:
        self.nominator.add_nominated_pod(pod, nominating)

    def nominated_pods_for_node(self, node: str) -> list[Pod]:
        """The pods nominated to ``node``, as the queue holds them."""
        out: list[Pod] = []
        for ref in self.nominator.nominated_pods_for_node(node):
            lookup = Pod(name=ref.name, namespace=ref.namespace, uid=ref.uid, containers=())
            info = (
                self.active_q.get(lookup) or self.unschedulable_pods.get(lookup) or self.backoff_q.get(lookup)
            )
            out.append(info.pod if info is not None else lookup)
        return out

    # ---- what is where ----

    def pods_in_active_q(self) -> list[Pod]:
        return [info.pod for info in self.active_q]

    def pods_in_backoff_q(self) -> list[Pod]:
        return [info.pod for info in self.backoff_q]

    def unschedulable(self) -> list[Pod]:
        return [info.pod for info in self.unschedulable_pods]

    def pending_pods(self) -> tuple[list[Pod], str]:
        """``PendingPods``: every queued pod and ``activeQ:N; backoffQ:N; unschedulablePods:N``."""
        active, backoff, unschedulable = (
            self.pods_in_active_q(),
            self.pods_in_backoff_q(),
            self.unschedulable(),
        )
        summary = f"activeQ:{len(active)}; backoffQ:{len(backoff)}; unschedulablePods:{len(unschedulable)}"
        return active + backoff + unschedulable, summary

    def get_pod(self, name: str, namespace: str) -> QueuedPodInfo | None:
        lookup = Pod(name=name, namespace=namespace, uid="", containers=())
        return self.backoff_q.get(lookup) or self.unschedulable_pods.get(lookup) or self.active_q.get(lookup)

    def next_backoff_expiry(self) -> float | None:
        """The earliest time (seconds) a backoffQ pod completes its backoff; ``None`` with backoffQ empty.
        The flush that moves it runs on the flush schedule, not at this instant."""
        expiry = self.backoff_q.next_expiry()
        if expiry is None:
            return None
        return to_s(self._now()) if expiry == ZERO_TIME else to_s(expiry)

    def in_flight_events(self) -> list[Pod | InFlightEvent]:
        return self.active_q.list_in_flight_events()

    def close(self) -> None:
        self.active_q.close()
        self._broadcast()


def _kobj(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}" if pod.namespace else pod.name


def _feature_gates(
    version: str, overrides: Mapping[str, bool] | None, emulated_version: str | None
) -> dict[str, bool]:
    return feature_gates(version, overrides, emulated_version)


def _per_profile(hints: QueueingHintMap | Mapping[str, QueueingHintMap] | None) -> dict[str, QueueingHintMap]:
    from kubeletemu.fleet.queue.pods import DEFAULT_SCHEDULER_NAME

    if not hints:
        return {DEFAULT_SCHEDULER_NAME: {}}
    first = next(iter(hints))
    if isinstance(first, ClusterEvent):
        return {DEFAULT_SCHEDULER_NAME: hints}  # type: ignore[dict-item]
    return {str(k): v for k, v in hints.items()}  # type: ignore[misc]


def _plugin_to_events(hint_maps: Mapping[str, QueueingHintMap]) -> dict[str, list[ClusterEvent]]:
    """``buildEventMap``: each plugin's registered events over every profile."""
    out: dict[str, list[ClusterEvent]] = {}
    for hint_map in hint_maps.values():
        for event, functions in hint_map.items():
            for function in functions:
                out.setdefault(function.plugin_name, []).append(event)
    return out
