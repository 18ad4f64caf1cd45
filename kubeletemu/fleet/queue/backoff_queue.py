"""backoffQ: pods waiting out their backoff before activeQ (``backend/queue/backoff_queue.go``, 1.33+;
up to 1.32 the ``podBackoffQ`` heap and backoff functions of ``scheduling_queue.go``).

Per version:

* 1.32: one heap ordered by backoff expiry, the expiry recomputed at each comparison:
  ``timestamp + initial·2^(attempts-1)`` capped at the max (no backoff before the first attempt); a pod
  is backing off while its expiry is after now.
* 1.33 (``backoff-queue-split``): pods that failed without a rejecting plugin go to a second heap
  (podErrorBackoffQ) that Pop never takes from; the expiry is cached on the pod until its next attempt;
  with ``SchedulerPopFromBackoffQ`` (``pop-from-backoffq``) expiries and "now" are truncated to whole
  seconds, a pod is backing off until the window after its expiry's, and podBackoffQ orders pods of one
  window as activeQ does.
* 1.34 (``backoff-counts``): the doubling counts unschedulable attempts, or consecutive errors when the
  last attempt was an error; ``podMaxBackoffSeconds`` 0 disables backoff; the duration is computed with
  shifts (an initial backoff above the max gives the max, where the loop gave the initial).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kubeletemu.fleet.queue.heap import Heap, SortKey
from kubeletemu.fleet.queue.podinfo import NS_PER_S, ZERO_TIME, QueuedPodInfo
from kubeletemu.fleet.queue.pods import pod_key
from kubeletemu.fleet.queue.versions import in_effect
from kubeletemu.pod import Pod

BACKOFF_ORDERING_WINDOW_NS = NS_PER_S  # backoffQOrderingWindowDuration
_DURATIONS_KEPT = 64

LessFn = Callable[[QueuedPodInfo, QueuedPodInfo], bool]


def _key(info: QueuedPodInfo) -> str:
    return info.key


class BackoffQueue:
    def __init__(
        self,
        now: Callable[[], int],
        initial_backoff_ns: int,
        max_backoff_ns: int,
        active_less: LessFn,
        pop_from_backoff_q: bool,
        version: str,
        on_move: Callable[[str, str, Pod], None] | None = None,
        active_sort_key: SortKey | None = None,
    ) -> None:
        """``active_sort_key``: ``active_less`` as a value, when it is one."""
        self.now = now
        self.on_move = on_move
        self.initial_backoff_ns = initial_backoff_ns
        self.max_backoff_ns = max_backoff_ns
        self.active_less = active_less
        self.pop_from_backoff_q = pop_from_backoff_q
        self.version = version
        self.split = in_effect("backoff-queue-split", version)
        self.counts = in_effect("backoff-counts", version)
        # A pod's expiry stays fixed while it is queued (its timestamp and counts change only at an
        # attempt), so both orders are values.
        less: LessFn = self._less
        sort_key: SortKey | None = self.backoff_time
        self._active_sort_key: SortKey | None = None  # what orders a window's pods, as a value
        if pop_from_backoff_q:
            less = self._less_with_priority
            sort_key = None if active_sort_key is None else self._with_priority_key(active_sort_key)
            self._active_sort_key = active_sort_key
        self.pod_backoff_q: Heap[QueuedPodInfo] = Heap(_key, less, sort_key)
        self.pod_error_backoff_q: Heap[QueuedPodInfo] = Heap(_key, self._less, self.backoff_time)
        # calculate_backoff_duration by count: the doubling reaches the max (or stays 0) well before the
        # last, which every higher count gives too (pods fail thousands of times).
        self._durations = tuple(self.calculate_backoff_duration(count) for count in range(_DURATIONS_KEPT))

    # ---- time ----

    def align_to_window(self, t: int) -> int:
        """``alignToWindow``: truncated to the whole second with ``SchedulerPopFromBackoffQ``."""
        if not self.pop_from_backoff_q or t == ZERO_TIME:
            return t
        return t - t % BACKOFF_ORDERING_WINDOW_NS

    def calculate_backoff_duration(self, count: int) -> int:
        """``calculateBackoffDuration`` for ``count`` attempts (1.34+: failures)."""
        if count == 0:
            return 0
        if self.counts:
            shift = count - 1
            if self.initial_backoff_ns > self.max_backoff_ns >> shift:
                return self.max_backoff_ns
            return self.initial_backoff_ns << shift
        duration = self.initial_backoff_ns
        for _ in range(1, count):
            if duration > self.max_backoff_ns - duration:
                return self.max_backoff_ns
            duration += duration
        return duration

    def backoff_time(self, info: QueuedPodInfo) -> int:
        """``getBackoffTime``: when the pod completes its backoff (:data:`ZERO_TIME`: no backoff)."""
        if not self.split:
            return info.timestamp + self.calculate_backoff_duration(info.attempts)
        if info.backoff_expiration != ZERO_TIME:
            # Cached (1.33+) only with a count and a backoff, which an attempt resets along with it.
            return info.backoff_expiration
        if self.counts:
            if self.max_backoff_ns == 0:
                return ZERO_TIME
            count = (
                info.consecutive_errors_count
                if info.consecutive_errors_count > 0
                else info.unschedulable_count
            )
        else:
            count = info.attempts
        if count == 0:
            return ZERO_TIME
        # alignToWindow(timestamp + duration), inline: a move computes this for every pod it looks at.
        expiry = info.timestamp + self._durations[count if count < _DURATIONS_KEPT else -1]
        if self.pop_from_backoff_q and expiry != ZERO_TIME:
            expiry -= expiry % BACKOFF_ORDERING_WINDOW_NS
        info.backoff_expiration = expiry
        return expiry

    def is_pod_backing_off(self, info: QueuedPodInfo) -> bool:
        """``isPodBackingoff``; from 1.33 a pod whose expiry is in the current window still backs off."""
        expiry = self.backoff_time(info)
        if not self.split:
            return expiry > self.now()
        return not expiry < self.align_to_window(self.now())

    def _less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.backoff_time(a) < self.backoff_time(b)

    def _with_priority_key(self, active_sort_key: SortKey) -> SortKey:
        def key(info: QueuedPodInfo) -> tuple[int, ...]:
            return (self.backoff_time(info), *active_sort_key(info))

        return key

    def _less_with_priority(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        first, second = self.backoff_time(a), self.backoff_time(b)
        if first != second:
            return first < second
        return self.active_less(a, b)

    # ---- the queue ----

    def _to_error_queue(self, info: QueuedPodInfo) -> bool:
        return self.split and not info.unschedulable_plugins and not info.pending_plugins

    def add(self, info: QueuedPodInfo, event: str | None = None) -> None:
        """``add``: into podErrorBackoffQ when no plugin rejected the pod (1.33+), else podBackoffQ; the
        pod leaves the other heap (upstream reports that as an error, and counts no move)."""
        if self._to_error_queue(info):
            target, other = self.pod_error_backoff_q, self.pod_backoff_q
        else:
            target, other = self.pod_backoff_q, self.pod_error_backoff_q
        key = info.key
        target.add_or_update(info, key)
        if not other.delete(info, key) and event is not None and self.on_move is not None:
            self.on_move("backoff", event, info.pod)

    def add_rejected(self, info: QueuedPodInfo, expiry: int, event: str) -> None:
        """:meth:`add` for a pod a plugin rejected (so bound for podBackoffQ), in neither heap, with its
        :meth:`backoff_time` known (one-step moves of many pods at once)."""
        by_priority = self._active_sort_key
        heap = self.pod_backoff_q
        key = info.key
        if by_priority is None or key in heap.items_by_key or key in self.pod_error_backoff_q.items_by_key:
            self.add(info, event)
            return
        heap.push(info, key, (expiry, *by_priority(info)))
        if self.on_move is not None:
            self.on_move("backoff", event, info.pod)

    def update(self, new_pod: Pod, old: Pod) -> QueuedPodInfo | None:
        for heap in (self.pod_backoff_q, self.pod_error_backoff_q):
            info = heap.get_by_key(pod_key(old))
            if info is not None:
                info.set_pod(new_pod)
                heap.add_or_update(info)
                return info
        return None

    def delete(self, info: QueuedPodInfo) -> bool:
        if self.pod_backoff_q.delete(info):
            return True
        return self.pod_error_backoff_q.delete(info)

    def get(self, pod: Pod) -> QueuedPodInfo | None:
        key = pod_key(pod)
        found = self.pod_backoff_q.get_by_key(key)
        return found if found is not None else self.pod_error_backoff_q.get_by_key(key)

    def has(self, pod: Pod) -> bool:
        return self.has_key(pod_key(pod))

    def has_key(self, key: str) -> bool:
        return self.pod_backoff_q.has_key(key) or self.pod_error_backoff_q.has_key(key)

    def pop_backoff(self) -> QueuedPodInfo | None:
        """``popBackoff``: podBackoffQ's head, backoff completed or not (never podErrorBackoffQ)."""
        return self.pod_backoff_q.pop()

    def len_backoff(self) -> int:
        return len(self.pod_backoff_q)

    def __len__(self) -> int:
        return len(self.pod_backoff_q) + len(self.pod_error_backoff_q)

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        yield from self.pod_backoff_q
        yield from self.pod_error_backoff_q

    def _pop_completed(self, heap: Heap[QueuedPodInfo]) -> list[QueuedPodInfo]:
        popped: list[QueuedPodInfo] = []
        while True:
            head = heap.peek()
            if head is None or self.is_pod_backing_off(head):
                break
            heap.pop()
            popped.append(head)
        return popped

    def pop_all_backoff_completed(self) -> list[QueuedPodInfo]:
        """Every pod whose backoff completed, podBackoffQ's first, each heap in its order."""
        return self._pop_completed(self.pod_backoff_q) + self._pop_completed(self.pod_error_backoff_q)

    def next_expiry(self) -> int | None:
        """The earliest backoff expiry among the queued pods (ZERO_TIME for one without backoff)."""
        heads = [h.peek() for h in (self.pod_backoff_q, self.pod_error_backoff_q)]
        times = [self.backoff_time(h) for h in heads if h is not None]
        return min(times) if times else None
