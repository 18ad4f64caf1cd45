"""Resources the overreserve cache assumes taken on a node (scheduler-plugins
``pkg/noderesourcetopology/cache/overreserve.go``, ``resourceStore``, at commit
903da7df82cb8794dda8f2d510ba1156111662dd).

Reserve records the pod's effective request (:func:`~.exclusive.effective_request`) under its
namespace/name; Unreserve drops it. Applied to an NRT, every recorded request is subtracted from the
``available`` of *every* zone that lists the resource (the zone the kubelet will pick cannot be known).
A zone with less available than the request drops to 0 rather than going negative; resources a zone does
not list are skipped. ``capacity`` and ``allocatable`` are untouched.
"""

from __future__ import annotations

from dataclasses import replace

from kubeletemu.pod import Pod
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.nrtcache.exclusive import effective_request
from kubeletemu.scheduler.objects import NodeResourceTopology, ResourceInfo


def pod_key(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


class ResourceStore:
    """``resourceStore``: namespace/name → effective request."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, Quantity]] = {}
        # The last NRT charged and its result, valid while the same NRT object comes with no change to
        # the recorded pods (a cache flush elsewhere asks again for every node).
        self._charged: tuple[NodeResourceTopology, NodeResourceTopology] | None = None

    def add_pod(self, pod: Pod) -> bool:
        """True when the pod was already recorded (its entry is replaced)."""
        key = pod_key(pod)
        existed = key in self.data
        self.data[key] = effective_request(pod)
        self._charged = None
        return existed

    def delete_pod(self, pod: Pod) -> bool:
        """True when the pod was recorded."""
        self._charged = None
        return self.data.pop(pod_key(pod), None) is not None

    def update_nrt(self, nrt: NodeResourceTopology) -> NodeResourceTopology:
        """``UpdateNRT``: ``nrt`` with every recorded request charged to all zones."""
        if not self.data:
            return nrt
        if self._charged is not None and self._charged[0] is nrt:
            return self._charged[1]
        charged = self._charge(nrt)
        self._charged = (nrt, charged)
        return charged

    def _charge(self, nrt: NodeResourceTopology) -> NodeResourceTopology:
        zones = []
        for zone in nrt.zones:
            resources = []
            for info in zone.resources:
                available = info.available
                for request in self.data.values():
                    qty = request.get(info.name)
                    if qty is None:
                        continue
                    # Too little left is "likely a bug elsewhere" upstream: clamp to zero, never negative.
                    available = Quantity(0) if available < qty else Quantity(available.amount - qty.amount)
                resources.append(info if available is info.available else _with_available(info, available))
            zones.append(replace(zone, resources=tuple(resources)))
        return replace(nrt, zones=tuple(zones))


def _with_available(info: ResourceInfo, available: Quantity) -> ResourceInfo:
    return replace(info, available=available)
