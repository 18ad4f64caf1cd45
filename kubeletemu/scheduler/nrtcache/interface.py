"""The NodeResourceTopologyMatch cache interface (``cache.Interface`` in scheduler-plugins
``pkg/noderesourcetopology/cache/cache.go`` at commit 903da7df82cb8794dda8f2d510ba1156111662dd) and how
the plugin consumes it.

The plugin calls the cache at these points:

* Filter and Score: ``GetCachedNRTCopy(node, pod)`` → (NRT or none, info). Not ``fresh``: Filter returns
  Unschedulable ``invalid node topology data`` and Score 0. Fresh and no NRT: Filter passes, Score 0.
* Filter, when its handler returned a failure outside a preemption flow: ``NodeMaybeOverReserved``.
* Reserve, Unreserve, PostBind: the methods of the same names.
* The foreign-pods detector: ``NodeHasForeignPods``.

``GetCachedNUMAPlacementInfo`` (preemption's eviction simulation) is not modelled.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import NodeInfo
from kubeletemu.scheduler.objects import NodeResourceTopology

# Filter's status message for data that is not fresh (Score answers 0 instead).
NOT_FRESH_REASON = "invalid node topology data"


@dataclass(frozen=True)
class CachedNRTInfo:
    """``CachedNRTInfo``: ``generation`` only grows when a resync flushes nodes (always 0 for caches without
    generations); ``fresh`` False means "wait for a refresh" (the node is not to be used now)."""

    generation: int = 0
    fresh: bool = False


class TopologyNotFresh(Exception):
    """Raised by a topology source (:meth:`Cache.topology`, the fleet's cycle view, any
    ``nrtmatch.TopologySource``) where ``GetCachedNRTCopy`` answers "not fresh"
    (``CachedNRTInfo.Fresh == false``): the plugin's Filter then returns Unschedulable ``invalid node
    topology data`` and its Score 0. A source that cannot say this through a plain "NRT or None" answer
    must not pretend the node has no NRT (which passes). The one class both the caches and the plugin
    model use."""

    def __init__(self, node_name: str = "", generation: int = 0) -> None:
        super().__init__(f"node {node_name!r}: {NOT_FRESH_REASON} (generation {generation})")
        self.node_name = node_name
        self.generation = generation


class Cache(ABC):
    """One of ``passthrough``, ``overreserve``, ``discardreserved``."""

    kind: str

    @abstractmethod
    def get_cached_nrt_copy(
        self, node_name: str, pod: Pod
    ) -> tuple[NodeResourceTopology | None, CachedNRTInfo]:
        """``GetCachedNRTCopy``; ``pod`` only for logging upstream."""

    def node_maybe_over_reserved(self, node_name: str, pod: Pod) -> None:
        """``NodeMaybeOverReserved``: Filter rejected ``pod`` on the node (a no-op unless overreserve)."""
        return None

    def each_node_maybe_over_reserved(self, node_names: Iterable[str], pod: Pod) -> None:
        """``NodeMaybeOverReserved`` for each name in turn (a cycle's kept rejections given again)."""
        for name in node_names:
            self.node_maybe_over_reserved(name, pod)

    def nodes_maybe_over_reserved(self, node_names: tuple[str, ...], pod: Pod, times: int = 1) -> None:
        """``NodeMaybeOverReserved`` for each name in turn, as a replayed scheduling cycle calls it; the
        whole ``times`` times (replays for several pods, ``pod`` the first)."""
        for _ in range(times):
            self.each_node_maybe_over_reserved(node_names, pod)

    def node_has_foreign_pods(self, node_name: str, pod: Pod) -> None:
        """``NodeHasForeignPods`` (a no-op unless overreserve)."""
        return None

    def reserve_node_resources(self, node_name: str, pod: Pod) -> None:
        """``ReserveNodeResources``, from the plugin's Reserve."""
        return None

    def unreserve_node_resources(self, node_name: str, pod: Pod) -> None:
        """``UnreserveNodeResources``, from the plugin's Unreserve."""
        return None

    def post_bind(self, node_name: str, pod: Pod) -> None:
        """``PostBind``, after a successful bind."""
        return None

    def tick(self, now: float) -> bool:
        """Advance the simulated clock to ``now`` (seconds); True when a resync ran. Only overreserve has
        a resync loop."""
        return False

    def topology(self, node: NodeInfo, pod: Pod) -> NodeResourceTopology | None:
        """The ``TopologySource`` protocol: the NRT Filter and Score see for ``node``, None when fresh and
        absent; raises :class:`TopologyNotFresh` where the plugin would see non-fresh data."""
        nrt, info = self.get_cached_nrt_copy(node.name, pod)
        if not info.fresh:
            raise TopologyNotFresh(node.name, info.generation)
        return nrt
