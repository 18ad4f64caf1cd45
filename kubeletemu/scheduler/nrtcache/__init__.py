"""scheduler-plugins' NodeResourceTopologyMatch caches, exact to
kubernetes-sigs/scheduler-plugins 903da7df82cb8794dda8f2d510ba1156111662dd
(``pkg/noderesourcetopology/cache``): passthrough, overreserve (the reserve cache) and discardreserved,
the plugin args that pick and tune them (read by the plugin's one parser, :mod:`.nrtmatch.args`), and
an :class:`InformerStore` the caller feeds with published NRTs and pod events instead of informers. Time
is simulated: :meth:`Cache.tick` runs the resync loop.

A Filter/Score model reads a node through :meth:`Cache.topology` (the ``TopologySource`` protocol) or,
to tell "not fresh" from "no NRT", :meth:`Cache.get_cached_nrt_copy`; it calls
:meth:`Cache.node_maybe_over_reserved` when its Filter rejects a pod, and the scheduling cycle calls
``reserve_node_resources`` / ``unreserve_node_resources`` / ``post_bind``.
"""

from kubeletemu.scheduler.nrtcache.discardreserved import DiscardReserved
from kubeletemu.scheduler.nrtcache.factory import cache_from_args, cache_from_cache_args, parse_cache_args
from kubeletemu.scheduler.nrtcache.foreignpods import ForeignPodsDetector, is_foreign_pod
from kubeletemu.scheduler.nrtcache.informers import (
    DEFAULT_SCHEDULER_NAME,
    InformerMode,
    InformerStore,
    PodInformer,
    PodObject,
    WatchEvent,
)
from kubeletemu.scheduler.nrtcache.interface import NOT_FRESH_REASON, Cache, CachedNRTInfo, TopologyNotFresh
from kubeletemu.scheduler.nrtcache.overreserve import DesyncedNodes, NRTUpdate, OverReserve
from kubeletemu.scheduler.nrtcache.passthrough import Passthrough
from kubeletemu.scheduler.nrtmatch.args import CacheConfig

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "NOT_FRESH_REASON",
    "Cache",
    "CacheConfig",
    "CachedNRTInfo",
    "DesyncedNodes",
    "DiscardReserved",
    "ForeignPodsDetector",
    "InformerMode",
    "InformerStore",
    "NRTUpdate",
    "OverReserve",
    "Passthrough",
    "PodInformer",
    "PodObject",
    "TopologyNotFresh",
    "WatchEvent",
    "cache_from_args",
    "cache_from_cache_args",
    "is_foreign_pod",
    "parse_cache_args",
]
