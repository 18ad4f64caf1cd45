"""What every exporter of a fleet node shares: the node it scans, the clock, where it writes, and the rule
that a write of an unchanged object is no write.

An exporter writes the NRT object to the API server; the API server does not persist an update or patch
that changes nothing (no new ``resourceVersion``, no watch event), so the scheduler's informers see a write
only when the object differs from the last one. The NRTs published before the simulation starts (the
exporters have been running for a while) are written at time 0.
"""

from __future__ import annotations

from collections.abc import Callable

from kubeletemu.fleet.clock import Clock
from kubeletemu.fleet.exporters.listing import NodeConstants
from kubeletemu.fleet.kubelet import KubeletNode
from kubeletemu.fleet.spec import ExporterSpec
from kubeletemu.scheduler.objects import NodeResourceTopology

# The API server's side of a write that changed the object: (node, the new object).
Write = Callable[[KubeletNode, NodeResourceTopology], None]


class Exporter:
    def __init__(
        self, node: KubeletNode, clock: Clock, spec: ExporterSpec, phase: float, write: Write
    ) -> None:
        """``phase``: when this node's ticker first fires, in [0, period) (exporters start at different
        times; the ticker is fixed from then on)."""
        self.node = node
        self.clock = clock
        self.spec = spec
        self.phase = phase
        self._write = write
        self.written: NodeResourceTopology | None = None
        self.scans = 0
        self.writes = 0
        self._memo: tuple[int, object, NodeResourceTopology] | None = None
        self._constants: NodeConstants | None = None

    @property
    def constants(self) -> NodeConstants:
        if self._constants is None:
            self._constants = NodeConstants(self.node.emulator)
        return self._constants

    def start(self) -> None:
        """The object as published before the run, then the ticker."""
        self.scan()
        if self.spec.period_s > 0:
            self.clock.every(self.phase or self.spec.period_s, self.spec.period_s, self.tick)

    def tick(self) -> None:
        """The ticker fired."""
        raise NotImplementedError

    def container_started(self, guaranteed: bool) -> None:
        """A container of a pod on the node started (the runtime's poststart hooks run)."""
        return None

    def container_stopped(self, guaranteed: bool) -> None:
        """A container of a pod on the node stopped (the runtime's poststop hooks run)."""
        return None

    def state_files_written(self) -> None:
        """The kubelet wrote a resource manager's checkpoint (an exclusive allocation or its release)."""
        return None

    def build(self, variant: object) -> NodeResourceTopology:
        """The object a scan of the node now produces."""
        raise NotImplementedError

    def scan(self, variant: object = None) -> None:
        """Scan the node and write the object if it changed; a scan of an unchanged node reuses the last
        build (same state version, same variant)."""
        self.scans += 1
        memo = self._memo
        if memo is not None and memo[0] == self.node.state_version and memo[1] == variant:
            topology = memo[2]
        else:
            topology = self.build(variant)
            self._memo = (self.node.state_version, variant, topology)
        if topology == self.written:
            return
        self.written = topology
        self.writes += 1
        self._write(self.node, topology)
