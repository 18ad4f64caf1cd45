"""activeQ and the in-flight bookkeeping (``backend/queue/active_queue.go``).

activeQ is a heap in the profile's QueueSort order (PrioritySort: higher priority first, then the earlier
timestamp). Popping a pod makes it in flight until ``done``: while QueueingHints are on, the pod and every
event of interest received meanwhile are appended to one list (``inFlightEvents``), so that when the pod
comes back unschedulable the queue can ask the rejecting plugins' hints about exactly the events that
happened during its attempt; ``done`` removes the pod and prunes events no in-flight pod still needs.

Pop never waits here: it returns ``None`` where upstream would block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from kubeletemu.fleet.queue.backoff_queue import BackoffQueue
from kubeletemu.fleet.queue.events import POP_FROM_BACKOFF_Q, ClusterEvent
from kubeletemu.fleet.queue.heap import Heap, SortKey
from kubeletemu.fleet.queue.podinfo import ZERO_TIME, QueuedPodInfo
from kubeletemu.fleet.queue.pods import pod_key
from kubeletemu.fleet.queue.versions import in_effect
from kubeletemu.pod import Pod


@dataclass(frozen=True, eq=False)
class InFlightEvent:
    """``clusterEvent``: an event received while pods were in flight, with its objects."""

    event: ClusterEvent
    old: object
    new: object


class _Entry:
    __slots__ = ("next", "prev", "value")

    def __init__(self, value: Pod | InFlightEvent) -> None:
        self.value = value
        self.prev: _Entry | None = None
        self.next: _Entry | None = None


class _List:
    """``container/list``: a doubly linked list (entries removed from the middle in O(1))."""

    def __init__(self) -> None:
        self.front: _Entry | None = None
        self.back: _Entry | None = None
        self.size = 0

    def push_back(self, value: Pod | InFlightEvent) -> _Entry:
        entry = _Entry(value)
        entry.prev = self.back
        if self.back is not None:
            self.back.next = entry
        else:
            self.front = entry
        self.back = entry
        self.size += 1
        return entry

    def remove(self, entry: _Entry) -> None:
        if entry.prev is not None:
            entry.prev.next = entry.next
        else:
            self.front = entry.next
        if entry.next is not None:
            entry.next.prev = entry.prev
        else:
            self.back = entry.prev
        entry.prev = entry.next = None
        self.size -= 1

    def __iter__(self) -> Iterator[Pod | InFlightEvent]:
        entry = self.front
        while entry is not None:
            yield entry.value
            entry = entry.next


class InFlightPodError(Exception):
    """The same pod is in flight twice (upstream logs it and discards the popped pod)."""


class ActiveQueue:
    def __init__(
        self,
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool],
        queueing_hints: bool,
        backoff_popper: BackoffQueue | None,
        version: str,
        on_move: Callable[[str, str, Pod], None] | None = None,
        sort_key: SortKey | None = None,
    ) -> None:
        """``sort_key``: ``less`` as a value, when it is one (the heap then compares values)."""
        self.on_move = on_move
        self.queue: Heap[QueuedPodInfo] = Heap(lambda info: info.key, less, sort_key)
        self.queueing_hints = queueing_hints
        self.backoff_popper = backoff_popper
        self.in_flight_pods: dict[str, _Entry] = {}
        self.in_flight_events = _List()
        self.sched_cycle = 0
        self.closed = False
        self.reset_expiration_at_pop = in_effect("backoff-queue-split", version) and not in_effect(
            "backoff-counts", version
        )
        self._clear_at_pop = not in_effect("rejector-plugins-cleared", version)

    def __len__(self) -> int:
        return len(self.queue)

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(self.queue)

    def add(self, info: QueuedPodInfo, event: str | None = None) -> None:
        self.queue.add_or_update(info)
        if event is not None and self.on_move is not None:
            self.on_move("active", event, info.pod)

    def update(self, new_pod: Pod, old: Pod) -> QueuedPodInfo | None:
        info = self.queue.get_by_key(pod_key(old))
        if info is None:
            return None
        info.set_pod(new_pod)
        self.queue.add_or_update(info)
        return info

    def get(self, pod: Pod) -> QueuedPodInfo | None:
        return self.queue.get_by_key(pod_key(pod))

    def has(self, pod: Pod) -> bool:
        return self.has_key(pod_key(pod))

    def has_key(self, key: str) -> bool:
        return self.queue.has_key(key)

    def delete(self, info: QueuedPodInfo) -> bool:
        return self.queue.delete(info)

    def can_pop(self) -> bool:
        """Whether ``pop`` would return a pod now (upstream: whether Pop would not block)."""
        return len(self.queue) > 0 or (
            self.backoff_popper is not None and self.backoff_popper.len_backoff() > 0
        )

    def pop(self) -> QueuedPodInfo | None:
        """``pop``: activeQ's head, else (``SchedulerPopFromBackoffQ``) podBackoffQ's; ``None`` when
        upstream would block. The pod goes in flight."""
        while True:
            info = self.take()
            if info is None:
                return None
            try:
                self.move_pod_to_in_flight(info)
            except InFlightPodError:
                continue  # discarded, as upstream does; try the next pod
            return info

    def take(self) -> QueuedPodInfo | None:
        """The pod ``pop`` pops next, taken out of its heap but not yet in flight."""
        info = self.queue.pop()
        if info is None and self.backoff_popper is not None:
            info = self.backoff_popper.pop_backoff()
            if info is not None and self.on_move is not None:
                self.on_move("active", POP_FROM_BACKOFF_Q, info.pod)
        return info

    def move_pod_to_in_flight(self, info: QueuedPodInfo) -> None:
        """What popping does to a pod: in flight (with QueueingHints) and :meth:`count_attempt`. A pod
        already in flight has its attempt counted (upstream counts before it looks) and is refused."""
        if self.queueing_hints:
            if info.pod.uid in self.in_flight_pods:
                info.attempts += 1
                if self.reset_expiration_at_pop:
                    info.backoff_expiration = ZERO_TIME
                raise InFlightPodError(
                    f"the same pod is tracked in multiple places in the scheduler: {info.pod.name}"
                )
            self.in_flight_pods[info.pod.uid] = self.in_flight_events.push_back(info.pod)
        self.count_attempt(info)

    def count_attempt(self, info: QueuedPodInfo) -> None:
        """Popping's count: one more attempt, the scheduling cycle counted; up to 1.35 the pod's rejecting
        plugins are forgotten here, in 1.33 its cached expiry. Alone (without the in-flight list) for an
        attempt no event can overlap, where the list would record nothing and be undone at ``done``."""
        info.attempts += 1
        if self.reset_expiration_at_pop:
            info.backoff_expiration = ZERO_TIME
        self.sched_cycle += 1
        if self._clear_at_pop:
            info.unschedulable_plugins = info.pending_plugins = frozenset()
            info.gating_plugin = ""
            info.gating_plugin_events = ()

    def list_in_flight_pods(self) -> list[Pod]:
        return [entry.value for entry in self.in_flight_pods.values() if isinstance(entry.value, Pod)]

    def list_in_flight_events(self) -> list[Pod | InFlightEvent]:
        return list(self.in_flight_events)

    def cluster_events_for_pod(self, info: QueuedPodInfo) -> list[InFlightEvent] | None:
        """The events received since the pod was popped; ``None`` when it is not in flight (upstream: an
        error, and the pod is requeued after backoff)."""
        entry = self.in_flight_pods.get(info.pod.uid)
        if entry is None:
            return None
        found: list[InFlightEvent] = []
        cursor = entry.next
        while cursor is not None:
            if isinstance(cursor.value, InFlightEvent):
                found.append(cursor.value)
            cursor = cursor.next
        return found

    def add_events_if_pod_in_flight(self, old: Pod | None, new: Pod, events: Iterable[ClusterEvent]) -> bool:
        if new.uid not in self.in_flight_pods:
            return False
        for event in events:
            self.in_flight_events.push_back(InFlightEvent(event, old, new))
        return True

    def add_event_if_any_in_flight(self, old: object, new: object, event: ClusterEvent) -> bool:
        if not self.in_flight_pods:
            return False
        self.in_flight_events.push_back(InFlightEvent(event, old, new))
        return True

    def done(self, uid: str) -> None:
        """``done``: the pod leaves flight; events before the first remaining in-flight pod go."""
        entry = self.in_flight_pods.pop(uid, None)
        if entry is None:
            return
        self.in_flight_events.remove(entry)
        while self.in_flight_events.front is not None and isinstance(
            self.in_flight_events.front.value, InFlightEvent
        ):
            self.in_flight_events.remove(self.in_flight_events.front)

    def close(self) -> None:
        for uid in list(self.in_flight_pods):
            self.done(uid)
        self.closed = True
