"""The overreserve cache's own copy of the NRTs and of the resource names they list (scheduler-plugins
``pkg/noderesourcetopology/cache/store.go``, ``nrtStore`` and ``nrtResourcesStore``, at commit
903da7df82cb8794dda8f2d510ba1156111662dd).

The copy is filled once from the NRTs listed when the cache is built and then changes only when a resync
flushes a node. NRT objects here are immutable, so the upstream deep copies on the way in and out are not
needed. The per-pod data kept for preemption's NUMA-placement decoding is not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubeletemu.scheduler.objects import NodeResourceTopology


def resource_names_from_nrt(nrt: NodeResourceTopology | None) -> frozenset[str] | None:
    """``ResourceNamesFromNRT``: every resource name any zone lists; None for no NRT."""
    if nrt is None:
        return None
    return frozenset(r.name for zone in nrt.zones for r in zone.resources)


class NRTStore:
    """``nrtStore``: NRT by node name."""

    def __init__(self, nrts: Iterable[NodeResourceTopology] = ()) -> None:
        self._data = {nrt.name: nrt for nrt in nrts}

    def contains(self, node_name: str) -> bool:
        return node_name in self._data

    def get(self, node_name: str) -> NodeResourceTopology | None:
        return self._data.get(node_name)

    def update(self, nrt: NodeResourceTopology) -> None:
        self._data[nrt.name] = nrt


class NRTResourcesStore:
    """``nrtResourcesStore``: the resource names of each node's NRT, what decides whether a device request
    is exclusive (resync's pod categorisation, foreign-pod detection)."""

    def __init__(self, nrts: Iterable[NodeResourceTopology] = ()) -> None:
        self._data: dict[str, frozenset[str] | None] = {n.name: resource_names_from_nrt(n) for n in nrts}

    def get(self, node_name: str) -> frozenset[str] | None:
        return self._data.get(node_name)

    def update(self, nrt: NodeResourceTopology) -> None:
        self._data[nrt.name] = resource_names_from_nrt(nrt)

    def delete(self, node_name: str) -> None:
        self._data.pop(node_name, None)
