"""The NRT attribute watcher of ``resyncScope: All`` (scheduler-plugins
``pkg/noderesourcetopology/cache/attr_watch.go`` at commit 903da7df82cb8794dda8f2d510ba1156111662dd).

Only Modified events count, and only for nodes the cache already holds: when the Topology Manager
configuration (policy, scope, max NUMA nodes) the new object declares differs from the one of the cache's
copy, the node is recorded as "config changed", and the next resync replaces its copy without any
fingerprint check. Resource or fingerprint changes alone do not count.
"""

from __future__ import annotations

from kubeletemu.scheduler.nrtcache.informers import WatchEvent
from kubeletemu.scheduler.nrtcache.nrtstore import NRTStore
from kubeletemu.scheduler.nrtmatch.nodeconfig import topology_manager_config
from kubeletemu.scheduler.objects import NodeResourceTopology


class AttrWatcher:
    """``Watcher``: ``nodes`` is the cache's config-changed counter (shared, not copied)."""

    def __init__(self, nrts: NRTStore, nodes: dict[str, int]) -> None:
        self.nrts = nrts
        self.nodes = nodes

    def process_event(self, event: WatchEvent, nrt: NodeResourceTopology) -> bool:
        """``ProcessEvent``: True when the node was marked."""
        if event is not WatchEvent.MODIFIED:
            return False
        current = self.nrts.get(nrt.name)
        if current is None:
            return False
        if topology_manager_config(current) == topology_manager_config(nrt):
            return False
        self.nodes[nrt.name] = self.nodes.get(nrt.name, 0) + 1
        return True
