"""The ``discardreserved`` cache (scheduler-plugins ``pkg/noderesourcetopology/cache/discardreserved.go`` at
commit 903da7df82cb8794dda8f2d510ba1156111662dd).

A node with a reservation in flight (Reserve called, neither Unreserve nor PostBind yet) answers "no NRT,
not fresh", so Filter rejects every pod there with ``invalid node topology data`` and Score gives 0; other
nodes read the latest published NRT, as passthrough. Reservations are keyed by pod UID per node; removing
the last one leaves an empty entry, which counts as no reservation. There is no resync and no foreign-pod
handling: once PostBind has run the node is usable again even if its NRT does not reflect the pod yet.

The plugin uses it whenever ``discardReservedNodes`` is true, whatever ``cacheResyncPeriodSeconds`` says.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubeletemu.pod import Pod
from kubeletemu.scheduler.nrtcache.informers import InformerStore
from kubeletemu.scheduler.nrtcache.interface import Cache, CachedNRTInfo
from kubeletemu.scheduler.objects import NodeResourceTopology


class DiscardReserved(Cache):
    kind = "discardreserved"

    def __init__(self, store: InformerStore | None) -> None:
        # No store: every node without a reservation reads as "fresh, no NRT" (upstream's client.Get error).
        self.store = store
        self._reservations: dict[str, dict[str, bool]] = {}

    @property
    def reservation_map(self) -> Mapping[str, Mapping[str, bool]]:
        """``reservationMap``: node name → pod UID → reserved (a copy)."""
        return {node: dict(pods) for node, pods in self._reservations.items()}

    def get_cached_nrt_copy(
        self, node_name: str, pod: Pod
    ) -> tuple[NodeResourceTopology | None, CachedNRTInfo]:
        if self._reservations.get(node_name):
            return None, CachedNRTInfo()
        nrt = self.store.nrt(node_name) if self.store is not None else None
        return nrt, CachedNRTInfo(fresh=True)

    def reserve_node_resources(self, node_name: str, pod: Pod) -> None:
        self._reservations.setdefault(node_name, {})[pod.uid] = True

    def unreserve_node_resources(self, node_name: str, pod: Pod) -> None:
        self.remove_reservation_for_node(node_name, pod)

    def post_bind(self, node_name: str, pod: Pod) -> None:
        self.remove_reservation_for_node(node_name, pod)

    def remove_reservation_for_node(self, node_name: str, pod: Pod) -> None:
        pods = self._reservations.get(node_name)
        if pods is not None:
            pods.pop(pod.uid, None)
