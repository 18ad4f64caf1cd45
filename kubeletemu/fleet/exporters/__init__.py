"""The exporters a fleet node runs, exact to their shipped event loops: resource-topology-exporter
(:mod:`.rte`), nfd-topology-updater (:mod:`.nfd`) and koordlet (:mod:`.koordlet`); what they read from the
kubelet per version (:mod:`.listing`); RTE's rate limiter (:mod:`.ratelimit`)."""

from __future__ import annotations

from kubeletemu.fleet.clock import Clock
from kubeletemu.fleet.exporters.base import Exporter, Write
from kubeletemu.fleet.exporters.koordlet import Koordlet
from kubeletemu.fleet.exporters.nfd import NFDTopologyUpdater
from kubeletemu.fleet.exporters.rte import ResourceTopologyExporter
from kubeletemu.fleet.kubelet import KubeletNode
from kubeletemu.fleet.spec import KOORDLET, NFD, RTE, ExporterSpec

_KINDS: dict[str, type[Exporter]] = {
    RTE: ResourceTopologyExporter,
    NFD: NFDTopologyUpdater,
    KOORDLET: Koordlet,
}


def make_exporter(
    node: KubeletNode, clock: Clock, spec: ExporterSpec, phase: float, write: Write
) -> Exporter:
    return _KINDS[spec.type](node, clock, spec, phase, write)


__all__ = ["Exporter", "Koordlet", "NFDTopologyUpdater", "ResourceTopologyExporter", "Write", "make_exporter"]
