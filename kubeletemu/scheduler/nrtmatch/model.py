"""NodeResourceTopologyMatch as a :class:`~kubeletemu.scheduler.framework.Model`.

Exact to kubernetes-sigs/scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``
(``pkg/noderesourcetopology``): Filter (:mod:`.filter`) and Score (:mod:`.score`) with the configured
scoring strategy (:mod:`.args`). The NRT of a node comes from a :class:`TopologySource`, the plugin's
``nrtcache.Interface``: :class:`PassthroughTopology` (``cache/passthrough.go``) returns the node's latest
NRT as published; caches that hold back or adjust NRTs (overreserve, discardreserved) plug in here.

The preemption flow (``filter.go``'s victim-pod NRT rewrite) is not modelled: with the default
``preemptionMode: Disabled`` it never runs.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kubeletemu.pod import Pod, QOSClass
from kubeletemu.scheduler.framework import UNSCHEDULABLE, NodeInfo, Status
from kubeletemu.scheduler.nrtcache.interface import TopologyNotFresh
from kubeletemu.scheduler.nrtmatch.allocation import MAX_NODE_SCORE
from kubeletemu.scheduler.nrtmatch.args import NodeResourceTopologyMatchArgs
from kubeletemu.scheduler.nrtmatch.filter import INVALID_TOPOLOGY_DATA, OK, filter_pod
from kubeletemu.scheduler.nrtmatch.nodeconfig import topology_manager_config
from kubeletemu.scheduler.nrtmatch.resources import pod_requests
from kubeletemu.scheduler.nrtmatch.score import score_pod
from kubeletemu.scheduler.objects import NodeResourceTopology

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


class NodeResourceTopologyMatch:
    """The plugin's Filter and Score for one pod on one node; ``policy`` is the node's Topology Manager
    policy as the plugin reads it from the NRT ("" without one), whatever the pod."""

    name = NAME

    def __init__(
        self, args: NodeResourceTopologyMatchArgs | None = None, source: TopologySource | None = None
    ) -> None:
        self.args = args if args is not None else NodeResourceTopologyMatchArgs()
        self.source: TopologySource = source if source is not None else PassthroughTopology()
        self._weights = self.args.scoring_strategy.weights()

    def filter(self, pod: Pod, node: NodeInfo) -> Status:
        # BestEffort pods pass before the cache is asked.
        requests = pod_requests(pod)
        if requests.qos is QOSClass.BEST_EFFORT and not requests.include_non_native:
            return OK
        try:
            topology = self.source.topology(node, pod)
        except TopologyNotFresh:
            return Status(UNSCHEDULABLE, (INVALID_TOPOLOGY_DATA,))
        status = filter_pod(pod, node.node, topology)
        if not status.ok and isinstance(self.source, FilterFailureListener):
            self.source.node_maybe_overreserved(node.name, pod)
        return status

    def score(self, pod: Pod, node: NodeInfo) -> int:
        # Non-Guaranteed pods score 100 before the cache is asked.
        if pod_requests(pod).qos is not QOSClass.GUARANTEED:
            return MAX_NODE_SCORE
        try:
            topology = self.source.topology(node, pod)
        except TopologyNotFresh:
            return 0
        return score_pod(pod, topology, self.args.scoring_strategy.type, self._weights)

    def policy(self, pod: Pod, node: NodeInfo) -> str:
        # The plugin reads the policy from the NRT alone; nothing of the pod changes it.
        if node.topology is None:
            return ""
        return topology_manager_config(node.topology).policy
