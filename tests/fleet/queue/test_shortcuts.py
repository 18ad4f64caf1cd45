"""The queue's shortcuts take the same steps as the general code they stand for: the heaps' kept sort keys
order as the less functions do (ties included, as Go's heap breaks them), and the one-step move of
``movePodsToActiveOrBackoffQueue`` leaves every queue as the general per-pod path does."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from kubeletemu.fleet.queue import SUPPORTED, PriorityQueue, QueuedPodInfo, SchedulingPod
from kubeletemu.fleet.queue import events as ev
from kubeletemu.fleet.queue.backoff_queue import BackoffQueue
from kubeletemu.fleet.queue.heap import Heap
from kubeletemu.fleet.queue.hints import QUEUE, QUEUE_SKIP, QueueingHintFunction, queue_always
from kubeletemu.fleet.queue.podinfo import ZERO_TIME
from kubeletemu.fleet.queue.pods import pod_key
from kubeletemu.fleet.queue.scheduling_queue import priority_sort, priority_sort_key
from kubeletemu.pod import Pod


def pod(name: str, priority: int = 0) -> SchedulingPod:
    return SchedulingPod(name=name, namespace="ns", uid=f"uid-{name}", containers=(), priority=priority)


def info_key(info: QueuedPodInfo) -> str:
    return pod_key(info.pod)


def heap_run(heap: Heap[QueuedPodInfo], seed: int) -> list[str]:
    """A random mix of adds, updates, deletes and pops over few priorities and timestamps (many ties);
    what left the heap, in order."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(600):
        roll = rng.random()
        name = f"p{rng.randrange(40)}"
        if roll < 0.55:
            heap.add_or_update(QueuedPodInfo(pod(name, rng.randrange(3)), timestamp=rng.randrange(4)))
        elif roll < 0.65:
            out.append(f"deleted {name}: {heap.delete(QueuedPodInfo(pod(name)))}")
        else:
            popped = heap.pop()
            out.append("empty" if popped is None else popped.pod.name)
    while (popped := heap.pop()) is not None:
        out.append(popped.pod.name)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_kept_priority_sort_keys_order_as_priority_sort(seed: int) -> None:
    by_less = heap_run(Heap(info_key, priority_sort), seed)
    by_key = heap_run(Heap(info_key, priority_sort, priority_sort_key), seed)
    assert by_key == by_less
    assert len(set(by_less)) > 40  # pods left, and deletes both found and missed


@pytest.mark.parametrize("seed", range(5))
def test_kept_backoff_keys_order_as_the_backoff_less_functions(seed: int) -> None:
    """podBackoffQ's order with SchedulerPopFromBackoffQ (expiry, then activeQ's order) and without."""
    now = 5_000_000_000
    backoff = BackoffQueue(lambda: now, 1_000_000_000, 10_000_000_000, priority_sort, True, "1.36")
    by_less = heap_run(Heap(info_key, backoff._less_with_priority), seed)
    by_key = heap_run(
        Heap(info_key, backoff._less_with_priority, backoff._with_priority_key(priority_sort_key)), seed
    )
    assert by_key == by_less
    assert heap_run(Heap(info_key, backoff._less, backoff.backoff_time), seed) == heap_run(
        Heap(info_key, backoff._less), seed
    )


@pytest.mark.parametrize("version", SUPPORTED)
@pytest.mark.parametrize(
    ("initial", "maximum"), [(1_000_000_000, 10_000_000_000), (1, 2**62), (3, 0), (0, 10), (7, 5)]
)
def test_tabled_backoff_durations_equal_the_computed_ones(version: str, initial: int, maximum: int) -> None:
    """A pod's expiry from the kept table of durations is ``getBackoffTime``'s for any count, far beyond
    the table too (a pod fails thousands of times)."""
    for pop_from_backoff_q in (True, False):
        backoff = BackoffQueue(lambda: 0, initial, maximum, priority_sort, pop_from_backoff_q, version)
        for count in [*range(80), 500, 5_000]:
            info = QueuedPodInfo(pod("p"), timestamp=123_456_789_012, attempts=count)
            info.unschedulable_count = count
            expected = info.timestamp + backoff.calculate_backoff_duration(count)
            if not backoff.split:
                pass  # 1.32: no cache, no window
            elif count == 0 or (backoff.counts and maximum == 0):
                expected = ZERO_TIME
            else:
                expected = backoff.align_to_window(expected)
            assert backoff.backoff_time(info) == expected, (count, pop_from_backoff_q)


class GeneralMoves(PriorityQueue):
    """The queue with the one-step move turned off: every pod takes the general path."""

    def _plugins_by_hint(self, profile, event, matched):  # type: ignore[no-untyped-def]
        return None


def hint_on_name(pod: Pod, old: object, new: object) -> str:
    return QUEUE if pod.name.endswith(("1", "4", "7")) else QUEUE_SKIP


HINTS = {
    ev.EVENT_NODE_ADD: [
        QueueingHintFunction("always", queue_always),
        QueueingHintFunction("hinted", hint_on_name),
    ],
    ev.ClusterEvent(ev.NODE, ev.UPDATE_NODE_ALLOCATABLE): [QueueingHintFunction("always", queue_always)],
}
PLUGINS = ("always", "hinted", "unregistered")


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def state(queue: PriorityQueue) -> tuple[object, ...]:
    def fields(infos: object) -> list[tuple[object, ...]]:
        return [
            (i.pod.name, i.attempts, i.timestamp, i.backoff_expiration, sorted(i.unschedulable_plugins))
            for i in infos  # type: ignore[attr-defined]
        ]

    return (
        fields(queue.active_q),
        fields(queue.backoff_q),
        fields(queue.unschedulable_pods),
        queue.move_request_cycle,
        queue.scheduling_cycle,
    )


def fail_one(queue: PriorityQueue, rng: random.Random) -> None:
    """A pod popped and rejected by random plugins."""
    info = queue.pop()
    if info is not None:
        rejectors = {p for p in PLUGINS if rng.random() < 0.5}
        queue.handle_scheduling_failure(info, rejectors)


def drive(
    queue: PriorityQueue,
    clock: Clock,
    seed: int,
    attempt: Callable[[PriorityQueue, random.Random], None] = fail_one,
    observe: Callable[[PriorityQueue], object] = state,
) -> list[object]:
    """Pods added, popped and rejected (``attempt``), node events moving them, time passing and the
    flushes running; the queue's whole state after each step."""
    rng = random.Random(seed)
    log: list[object] = []
    for n in range(30):
        queue.add(pod(f"pod{n}", rng.randrange(2)))
    for _ in range(400):
        roll = rng.random()
        if roll < 0.45:
            attempt(queue, rng)
        else:
            between_attempts(queue, clock, rng, roll)
        log.append(observe(queue))
    return log


def between_attempts(queue: PriorityQueue, clock: Clock, rng: random.Random, roll: float) -> None:
    """For ``roll`` in [0.45, 1): node events, time passing with the backoffQ flush, a new pod, or the
    leftover flush."""
    if roll < 0.65:
        queue.move_all_to_active_or_backoff_queue(ev.EVENT_NODE_ADD)
    elif roll < 0.75:
        queue.move_all_to_active_or_backoff_queue(ev.ClusterEvent(ev.NODE, ev.UPDATE_NODE_ALLOCATABLE))
    elif roll < 0.88:
        clock.t += rng.choice((0.1, 0.5, 1.0, 3.0))
        queue.flush_backoff_q_completed()
    elif roll < 0.95:
        queue.add(pod(f"late{rng.randrange(1000)}", rng.randrange(2)))
    else:
        clock.t += 40.0
        queue.flush_unschedulable_pods_leftover()


@pytest.mark.parametrize("version", SUPPORTED)
@pytest.mark.parametrize("seed", range(3))
def test_one_step_moves_equal_the_general_path(version: str, seed: int) -> None:
    clocks = Clock(), Clock()
    fast = PriorityQueue(clocks[0], version=version, hints=HINTS)
    general = GeneralMoves(clocks[1], version=version, hints=HINTS)
    fast_log, general_log = drive(fast, clocks[0], seed), drive(general, clocks[1], seed)
    assert fast_log == general_log
    # The scenario moved pods into backoffQ by node events (the one-step path) and left some unschedulable.
    assert any(entry[1] for entry in fast_log) and any(entry[2] for entry in fast_log)  # type: ignore[index]


def drive_pops(queue: PriorityQueue, clock: Clock, seed: int, fused: bool) -> list[object]:
    """``drive`` with the scheduler's side of the engine: each attempt either fails the popped pods at once
    through ``pop(answered)`` (``fused``) or pops and fails them one by one; the same pods get the same
    answers in the same order (a pod answered None is scheduled: it leaves the queue). The moves counted,
    and the state with the pods' failure counts after each step."""
    answers = random.Random(seed + 100)
    moves: list[tuple[str, str, str]] = []
    queue.unschedulable_pods.on_move = queue.active_q.on_move = queue.backoff_q.on_move = (
        lambda where, event, p: moves.append((where, event, p.name))
    )

    def answered(_: Pod, __: int) -> tuple[frozenset[str], frozenset[str]] | None:
        roll = answers.random()
        if roll < 0.1:
            return None  # a cycle runs: this pod binds
        if roll < 0.15:
            return frozenset(), frozenset()  # an error: no plugin rejected it
        return frozenset({p for p in PLUGINS if answers.random() < 0.6} or {"always"}), frozenset()

    def attempt(queue: PriorityQueue, rng: random.Random) -> None:
        if fused:
            info = queue.pop(answered)
        else:
            while (info := queue.pop()) is not None:
                rejected = answered(info.pod, info.shape)
                if rejected is None:
                    break
                queue.handle_scheduling_failure(info, *rejected)
        if info is not None:
            queue.done(info.pod.uid)

    def observe(queue: PriorityQueue) -> object:
        counts = [
            (i.pod.name, i.unschedulable_count, i.consecutive_errors_count, i.was_flushed_from_unschedulable)
            for where in (queue.active_q, queue.backoff_q, queue.unschedulable_pods)
            for i in where
        ]
        return state(queue), counts

    return [*drive(queue, clock, seed, attempt, observe), moves]


@pytest.mark.parametrize("version", SUPPORTED)
@pytest.mark.parametrize("seed", range(3))
def test_pop_failing_at_once_equals_popping_and_failing_one_by_one(version: str, seed: int) -> None:
    clocks = Clock(), Clock()
    fused = drive_pops(PriorityQueue(clocks[0], version=version, hints=HINTS), clocks[0], seed, True)
    one_by_one = drive_pops(PriorityQueue(clocks[1], version=version, hints=HINTS), clocks[1], seed, False)
    assert fused == one_by_one
    moves = fused[-1]
    assert isinstance(moves, list)
    # Pods were failed into unschedulablePods and (errors) backoffQ, and popped from backoffQ (1.33+).
    events = {event for _, event, _ in moves}
    assert ev.SCHEDULE_ATTEMPT_FAILURE in events
    assert {where for where, event, _ in moves if event == ev.SCHEDULE_ATTEMPT_FAILURE} >= {"unschedulable"}


def test_pop_without_queueing_hints_takes_the_general_path() -> None:
    """With QueueingHints off (1.32/1.33's gate) ``answered`` is not asked: the pod is returned in flight."""
    gates = {"SchedulerQueueingHints": False}
    queue = PriorityQueue(Clock(), version="1.33", hints=HINTS, feature_gates=gates)
    queue.add(pod("a"))
    asked: list[str] = []
    info = queue.pop(lambda p: asked.append(p.name) or ({"always"}, set()))  # type: ignore[func-returns-value]
    assert info is not None and info.pod.name == "a" and asked == []
