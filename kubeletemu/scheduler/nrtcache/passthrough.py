"""The ``passthrough`` cache (scheduler-plugins ``pkg/noderesourcetopology/cache/passthrough.go`` at commit
903da7df82cb8794dda8f2d510ba1156111662dd): every lookup is the latest published NRT, always fresh (a node
without one is "fresh and absent", which Filter lets through); every other call is a no-op.

The plugin uses it when ``discardReservedNodes`` is false and ``cacheResyncPeriodSeconds`` <= 0.
"""

from __future__ import annotations

from kubeletemu.pod import Pod
from kubeletemu.scheduler.nrtcache.informers import InformerStore
from kubeletemu.scheduler.nrtcache.interface import Cache, CachedNRTInfo
from kubeletemu.scheduler.objects import NodeResourceTopology


class Passthrough(Cache):
    kind = "passthrough"

    def __init__(self, store: InformerStore) -> None:
        self.store = store

    def get_cached_nrt_copy(
        self, node_name: str, pod: Pod
    ) -> tuple[NodeResourceTopology | None, CachedNRTInfo]:
        return self.store.nrt(node_name), CachedNRTInfo(fresh=True)
