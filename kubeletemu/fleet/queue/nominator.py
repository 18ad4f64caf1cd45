"""The nominator: pods nominated to nodes (``status.nominatedNodeName``, or a nomination the scheduler
made), per node in nomination order (``backend/queue/nominator.go``, the same in 1.32 … 1.36).

The fleet does not preempt, so nothing is nominated there; the queue keeps the nominator because adding
and updating pods feeds it as upstream does. ``lister`` stands in for the pod informer the nominator
checks: a pod it does not know, or one already bound, is not nominated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubeletemu.fleet.queue.pods import nominated_node_name
from kubeletemu.pod import Pod

PodLister = Callable[[str, str], Pod | None]


@dataclass(frozen=True)
class PodRef:
    name: str
    namespace: str
    uid: str


@dataclass(frozen=True)
class NominatingInfo:
    """``NominatingInfo`` with ``ModeOverride`` (a nil one is ``ModeNoop``: the pod's own field)."""

    nominated_node_name: str


class Nominator:
    def __init__(self, lister: PodLister | None = None) -> None:
        self.lister = lister
        self.nominated_pods: dict[str, list[PodRef]] = {}
        self.nominated_pod_to_node: dict[str, str] = {}

    def add_nominated_pod(self, pod: Pod, nominating: NominatingInfo | None = None) -> None:
        self._delete(pod)
        if nominating is not None:
            node = nominating.nominated_node_name
        else:
            node = nominated_node_name(pod)
            if not node:
                return
        if self.lister is not None:
            current = self.lister(pod.namespace, pod.name)
            if current is None or current.node_name:
                return
        self.nominated_pod_to_node[pod.uid] = node
        refs = self.nominated_pods.setdefault(node, [])
        if any(ref.uid == pod.uid for ref in refs):
            return
        refs.append(PodRef(pod.name, pod.namespace, pod.uid))

    def update_nominated_pod(self, old: Pod, new: Pod) -> None:
        """``UpdateNominatedPod``: an update that clears no nomination keeps the scheduler's own one."""
        nominating = None
        if not nominated_node_name(old) and not nominated_node_name(new):
            kept = self.nominated_pod_to_node.get(old.uid)
            if kept is not None:
                nominating = NominatingInfo(kept)
        self._delete(old)
        self.add_nominated_pod(new, nominating)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        self._delete(pod)

    def _delete(self, pod: Pod) -> None:
        node = self.nominated_pod_to_node.pop(pod.uid, None)
        if node is None:
            return
        refs = self.nominated_pods.get(node, [])
        for index, ref in enumerate(refs):
            if ref.uid == pod.uid:
                del refs[index]
                if not refs:
                    del self.nominated_pods[node]
                break

    def nominated_pods_for_node(self, node: str) -> list[PodRef]:
        return list(self.nominated_pods.get(node, []))
