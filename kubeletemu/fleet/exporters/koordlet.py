"""koordlet's NodeResourceTopology reporter (koordinator a7a1b76bbf81abd26f9c377de1f31a60dd965f6e,
``pkg/koordlet/statesinformer/impl/states_noderesourcetopology.go``: ``wait.Until(reportNodeTopology,
NodeTopologySyncInterval)``, 3 s by default; the Fleet file's ``exporter.period`` sets it): a report every
period, no reactive trigger; an unchanged object is not updated."""

from __future__ import annotations

from kubeletemu.fleet.exporters.base import Exporter
from kubeletemu.scheduler.koordinator.koordlet import koordlet_node_resource_topology
from kubeletemu.scheduler.objects import NodeResourceTopology


class Koordlet(Exporter):
    def tick(self) -> None:
        self.scan()

    def build(self, variant: object) -> NodeResourceTopology:
        return koordlet_node_resource_topology(self.node.emulator)
