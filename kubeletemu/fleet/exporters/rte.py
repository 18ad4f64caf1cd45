"""resource-topology-exporter at ef567ef3f9fb8059ea474ef91fbff37674c44a68 (``pkg/notification``,
``pkg/ratelimiter``, ``pkg/resourcetopologyexporter``, ``pkg/nrtupdater``), as one node's event loop:

* a fixed ticker every ``--sleep-interval`` (``time.NewTicker``; 0: none) — a *periodic* scan;
* with ``--notify-file``, a *reactive* scan each time the file is touched: an OCI hook the runtime runs at
  container poststart and poststop, for Guaranteed pods only, touches it (the hook numaresources-operator
  installs next to RTE);
* both go through the rate limiter (``--max-events-per-second``, 1 by default, per second; :mod:`.ratelimit`),
  the scan happening when the limiter lets the event through;
* the scan (``Scan``: podresources ``List`` and ``GetAllocatableResources``) builds the object, annotated
  ``rte-update: periodic|reactive`` after the trigger; the updater patches it (patch mode, the default
  since this commit): an unchanged object is no write.
"""

from __future__ import annotations

from kubeletemu.fleet.clock import Clock
from kubeletemu.fleet.exporters.base import Exporter, Write
from kubeletemu.fleet.exporters.listing import rte_topology
from kubeletemu.fleet.exporters.ratelimit import LeakyBucket, RateLimitedEvents
from kubeletemu.fleet.kubelet import KubeletNode
from kubeletemu.fleet.spec import ExporterSpec
from kubeletemu.podresources.nrt import RTE_UPDATE_PERIODIC, RTE_UPDATE_REACTIVE
from kubeletemu.scheduler.objects import NodeResourceTopology


class ResourceTopologyExporter(Exporter):
    def __init__(
        self, node: KubeletNode, clock: Clock, spec: ExporterSpec, phase: float, write: Write
    ) -> None:
        super().__init__(node, clock, spec, phase, write)
        self.events = (
            RateLimitedEvents(clock, LeakyBucket(spec.max_events_per_second), self._emitted)
            if spec.max_events_per_second > 0
            else None
        )

    def start(self) -> None:
        # The object written before the run came from a tick.
        self.scan(RTE_UPDATE_PERIODIC)
        if self.spec.period_s > 0:
            self.clock.every(self.phase or self.spec.period_s, self.spec.period_s, self.tick)

    def _event(self, timer: bool) -> None:
        if self.events is None:
            self._emitted(timer)
        else:
            self.events.push(timer)

    def _emitted(self, timer: bool) -> None:
        self.scan(RTE_UPDATE_PERIODIC if timer else RTE_UPDATE_REACTIVE)

    def tick(self) -> None:
        self._event(True)

    def _hook(self, guaranteed: bool) -> None:
        if self.spec.notify_file and guaranteed:
            self._event(False)

    def container_started(self, guaranteed: bool) -> None:
        self._hook(guaranteed)

    def container_stopped(self, guaranteed: bool) -> None:
        self._hook(guaranteed)

    def build(self, variant: object) -> NodeResourceTopology:
        return rte_topology(
            self.node.emulator,
            self.node.terminal_pods(),
            self.spec.fingerprint_method,
            str(variant),
            self.constants,
        )

    @property
    def dropped(self) -> int:
        return self.events.dropped if self.events is not None else 0
