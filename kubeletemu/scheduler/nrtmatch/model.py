"""NodeResourceTopologyMatch as a :class:`~kubeletemu.scheduler.framework.Model`.

Exact to kubernetes-sigs/scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``
(``pkg/noderesourcetopology``): Filter (:mod:`.filter`) and Score (:mod:`.score`) with the configured
scoring strategy (:mod:`.args`). The NRT of a node comes from a :class:`TopologySource`, the plugin's
``nrtcache.Interface``: :class:`PassthroughTopology` (``cache/passthrough.go``) returns the node's latest
NRT as published; caches that hold back or adjust NRTs (overreserve, discardreserved) plug in here.

The preemption flow (``filter.go``'s victim-pod NRT rewrite) is not modelled: with the default
``preemptionMode: Disabled`` it never runs.

Filter and Score are functions of the pod's resources, the Node object and the NRT the source returned
(``filter_pod``, ``score_pod``). Their answers are kept on that NRT object per pod shape
(:mod:`kubeletemu.scheduler.pod_shape`): NRT objects are never changed once built (a new NRT, or a cache's
adjusted copy, is a new object), so a kept answer is the one the plugin would compute again. What is not a
function of those — ``NodeMaybeOverReserved`` on a failing Filter — still runs on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Protocol, runtime_checkable

from kubeletemu.pod import Pod, QOSClass
from kubeletemu.scheduler.framework import UNSCHEDULABLE, NodeInfo, Status, memo
from kubeletemu.scheduler.nrtcache.interface import TopologyNotFresh
from kubeletemu.scheduler.nrtmatch.allocation import MAX_NODE_SCORE
from kubeletemu.scheduler.nrtmatch.args import NodeResourceTopologyMatchArgs
from kubeletemu.scheduler.nrtmatch.filter import INVALID_TOPOLOGY_DATA, OK, filter_pod
from kubeletemu.scheduler.nrtmatch.nodeconfig import topology_manager_config
from kubeletemu.scheduler.nrtmatch.resources import pod_requests
from kubeletemu.scheduler.nrtmatch.score import score_pod
from kubeletemu.scheduler.objects import Node, NodeResourceTopology
from kubeletemu.scheduler.pod_shape import pod_shape

NAME = "NodeResourceTopologyMatch"


class TopologySource(Protocol):
    """``GetCachedNRTCopy``: the NRT the plugin uses for ``node`` while scheduling ``pod`` (None: none)."""

    def topology(self, node: NodeInfo, pod: Pod) -> NodeResourceTopology | None: ...


@runtime_checkable
class FilterFailureListener(Protocol):
    """Optional on a source: ``NodeMaybeOverReserved``, which Filter calls for every node it does not
    pass (not in the preemption flow)."""

    def node_maybe_overreserved(self, node_name: str, pod: Pod) -> None: ...


class PassthroughTopology:
    """``cache/passthrough.go``: the node's latest NRT, always fresh."""

    def topology(self, node: NodeInfo, pod: Pod) -> NodeResourceTopology | None:
        return node.topology

    def version(self, node: NodeInfo) -> Hashable | None:
        return 0  # the NRT is the NodeInfo's own: nothing besides the NodeInfo object changes it


class NodeResourceTopologyMatch:
    """The plugin's Filter and Score for one pod on one node; ``policy`` is the node's Topology Manager
    policy as the plugin reads it from the NRT ("" without one), whatever the pod."""

    name = NAME

    def __init__(
        self,
        args: NodeResourceTopologyMatchArgs | None = None,
        source: TopologySource | None = None,
        *,
        keep_answers: bool = True,
    ) -> None:
        self.args = args if args is not None else NodeResourceTopologyMatchArgs()
        self.source: TopologySource = source if source is not None else PassthroughTopology()
        # Resolved once: a runtime Protocol check costs more than the Filter it guards.
        self._listener = source if isinstance(source, FilterFailureListener) else None
        # A listener that takes a replayed cycle's marks at once (the fleet's cache source) gets them so.
        self._replay_listener: Callable[[tuple[str, ...], Pod, int], None] | None = getattr(
            self._listener, "nodes_maybe_overreserved", None
        )
        self._weights = self.args.scoring_strategy.weights()
        # What a kept Score is valid for besides the pod and the NRT: this strategy and its weights.
        self._score_key = (self.args.scoring_strategy.type, tuple(sorted(self._weights.items())))
        self._keep = keep_answers  # False: compute every answer (what the kept ones are tested against)
        # A source that can say when its answer for a node changes lets a caller keep this model's answers.
        version = getattr(source, "version", None) if keep_answers else None
        self._version: Callable[[NodeInfo], Hashable | None] | None = version
        self._versions: Callable[[Sequence[NodeInfo]], list[Hashable | None]] | None = (
            getattr(source, "versions", None) if version is not None else None
        )
        self._each_listener: Callable[[Sequence[str], Pod], None] | None = getattr(
            self._listener, "each_node_maybe_overreserved", None
        )
        self._recorded: list[str] | None = None  # nodes told NodeMaybeOverReserved, while recording

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        # BestEffort pods pass before the cache is asked.
        requests = pod_requests(pod)
        if requests.qos is QOSClass.BEST_EFFORT and not requests.include_non_native:
            return OK
        try:
            topology = self.source.topology(node, pod)
        except TopologyNotFresh:
            return _NOT_FRESH
        status = (_kept_filter if self._keep else filter_pod)(pod, node.node, topology)
        if not status.ok:
            self._rejected(pod, node.name)
        return status

    def _rejected(self, pod: Pod, node_name: str) -> None:
        if self._listener is not None:
            self._listener.node_maybe_overreserved(node_name, pod)
            if self._recorded is not None:
                self._recorded.append(node_name)

    # A caller keeping answers (the fleet's scheduling cycle) asks what they depend on besides the pod's
    # shape and the NodeInfo object, and replays what a rejection does besides answering.
    def answer_version(self, node: NodeInfo) -> Hashable | None:
        """The source's version of its answer for ``node`` (None: keep nothing)."""
        return self._version(node) if self._version is not None else None

    def answer_versions(self, nodes: Sequence[NodeInfo]) -> list[Hashable | None]:
        """:meth:`answer_version` of each node."""
        if self._versions is not None:
            return self._versions(nodes)
        return [self.answer_version(node) for node in nodes]

    def rejected_again(self, pod: Pod, node: NodeInfo, status: Status) -> None:
        """A kept Filter rejection given once more: ``NodeMaybeOverReserved`` as the Filter would call it
        (not for a stale NRT, where Filter returns before asking)."""
        if status is not _NOT_FRESH:
            self._rejected(pod, node.name)

    # A scheduler that keeps a whole failed cycle replays what Filter did besides answering.
    def record_side_effects(self) -> None:
        self._recorded = []

    def recorded_side_effects(self) -> tuple[str, ...]:
        recorded, self._recorded = tuple(self._recorded or ()), None
        return recorded

    def effects_again(self, pod: Pod, node_names: Sequence[str]) -> None:
        """Kept rejections of ``node_names`` given once more, in order: what :meth:`rejected_again` does
        for each (none of them is a stale NRT's, which has no effect)."""
        if self._listener is None:
            return
        if self._each_listener is not None:
            self._each_listener(node_names, pod)
        else:
            for node_name in node_names:
                self._listener.node_maybe_overreserved(node_name, pod)
        if self._recorded is not None:
            self._recorded.extend(node_names)

    def replay_side_effects(self, pod: Pod, recorded: tuple[str, ...], times: int = 1) -> None:
        if self._replay_listener is not None:
            self._replay_listener(recorded, pod, times)  # the same tuple each replay: it may count repeats
        elif self._listener is not None:
            for _ in range(times):
                for node_name in recorded:
                    self._listener.node_maybe_overreserved(node_name, pod)

    def score(self, pod: Pod, node: NodeInfo) -> int:
        # Non-Guaranteed pods score 100 before the cache is asked.
        if pod_requests(pod).qos is not QOSClass.GUARANTEED:
            return MAX_NODE_SCORE
        try:
            topology = self.source.topology(node, pod)
        except TopologyNotFresh:
            return 0
        if topology is None or not self._keep:
            return score_pod(pod, topology, self.args.scoring_strategy.type, self._weights)
        kept: dict[tuple[int, object], int] = memo(topology, "_nrtmatch_scores", dict)
        key = (pod_shape(pod), self._score_key)
        score = kept.get(key)
        if score is None:
            score = kept[key] = score_pod(pod, topology, self.args.scoring_strategy.type, self._weights)
        return score

    def policy(self, pod: Pod, node: NodeInfo) -> str:
        # The plugin reads the policy from the NRT alone; nothing of the pod changes it.
        if node.topology is None:
            return ""
        return topology_manager_config(node.topology).policy


_NOT_FRESH = Status(UNSCHEDULABLE, (INVALID_TOPOLOGY_DATA,))


def _kept_filter(pod: Pod, node: Node | None, topology: NodeResourceTopology | None) -> Status:
    """``filter_pod``, kept on the NRT object per (pod shape, Node object); the Node is compared by
    identity (its allocatable names are what Filter reads of it)."""
    if topology is None:
        return filter_pod(pod, node, topology)
    kept: dict[tuple[int, int], tuple[Node | None, Status]] = memo(topology, "_nrtmatch_filters", dict)
    key = (pod_shape(pod), id(node))
    answer = kept.get(key)
    if answer is None or answer[0] is not node:
        answer = kept[key] = (node, filter_pod(pod, node, topology))
    return answer[1]
