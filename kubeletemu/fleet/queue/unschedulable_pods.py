"""``unschedulablePods``: the pods that were tried and found unschedulable, or gated, by key
(``backend/queue/unschedulable_pods.go``; in ``scheduling_queue.go`` up to 1.33). Its metrics are not
modelled; ``gated_before`` is kept in the signature as upstream's for that accounting."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kubeletemu.fleet.queue.podinfo import QueuedPodInfo
from kubeletemu.fleet.queue.pods import pod_key
from kubeletemu.pod import Pod

MoveHook = Callable[[str, str, Pod], None]


class UnschedulablePods:
    def __init__(self, on_move: MoveHook | None = None) -> None:
        # Insertion order stands in for Go's random map order wherever upstream iterates the map.
        self.pod_info_map: dict[str, QueuedPodInfo] = {}
        self.on_move = on_move

    def __len__(self) -> int:
        return len(self.pod_info_map)

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(list(self.pod_info_map.values()))

    def add_or_update(
        self,
        info: QueuedPodInfo,
        gated_before: bool = False,
        event: str | None = None,
    ) -> None:
        """Add or replace the pod's entry; a new entry counts as a move into the pool under ``event``
        (``scheduler_queue_incoming_pods_total``), unless ``event`` is None."""
        key = info.key
        if key not in self.pod_info_map and event is not None and self.on_move is not None:
            self.on_move("unschedulable", event, info.pod)
        self.pod_info_map[key] = info

    def delete(self, pod: Pod, gated: bool = False, key: str | None = None) -> None:
        self.pod_info_map.pop(pod_key(pod) if key is None else key, None)

    def get(self, pod: Pod) -> QueuedPodInfo | None:
        return self.pod_info_map.get(pod_key(pod))

    def clear(self) -> None:
        self.pod_info_map = {}
