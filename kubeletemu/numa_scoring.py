"""KEP-6007's NUMA scorer wired to a container manager's resource managers.

The Topology Manager is built before the CPU, memory and device managers it would score (as in the
kubelet, where the container manager registers the scorer afterwards: ``SetNUMAScorer`` /
``SetPreferredSingleNUMATieBreaker``). ``NUMAScoring`` is therefore a holder: it can be handed to
``topologymanager.new_manager(tie_breaker=...)`` at once and ``bind()``-ed to the managers once they exist
(``ContainerManager`` does both). Until it is bound, and when no
KEP-6007 option is on, it has no opinion and the merge is the kubelet's.

Signals (each read at the moment of a comparison, so always the current state):

- ``cpu``: exclusive CPUs per node over allocatable CPUs (reserved excluded), static CPU manager only;
- ``memory`` and each ``hugepages-<size>``: bytes reserved for containers over allocatable bytes (the
  node's reserved memory excluded), static memory manager only;
- each device resource: allocated over healthy devices per node (a device on several nodes counts on each).

``numa-allocation-strategy`` scores only the resources the merge has hints for (the pod's or container's
request, as on the PR branch, where each provider scores its own hints): binding wraps the Topology
Manager's hint providers in pass-through taps that note which resources each merge's hints name.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Protocol

from kubeletemu.bitmask import BitMask
from kubeletemu.cpumanager import CPUManager
from kubeletemu.cpumanager.policy_static import StaticPolicy as StaticCPUPolicy
from kubeletemu.devicemanager import DeviceManager
from kubeletemu.memorymanager import POLICY_STATIC as MEMORY_POLICY_STATIC
from kubeletemu.memorymanager import MemoryManager
from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager import HintProvider, ProviderHints, TopologyManager
from kubeletemu.topologymanager.numa_scorer import (
    SIGNAL_CPU,
    SIGNAL_MEMORY,
    AllocationStrategyTieBreaker,
    NUMATieBreaker,
    NUMAUsage,
    TieBreakDecision,
    UsageSignal,
    new_tie_breaker,
    wants_tie_breaker,
)


class ContainerManagerLike(Protocol):
    """What the scorer reads of ``containermanager.ContainerManager`` (kept structural: no import cycle)."""

    topology: TopologyManager
    cpus: CPUManager
    memory: MemoryManager
    devices: DeviceManager


@dataclass(frozen=True)
class CPUSignal:
    cpus: CPUManager
    name: str = SIGNAL_CPU

    def usage(self) -> NUMAUsage | None:
        if not isinstance(self.cpus.policy, StaticCPUPolicy):
            return None
        exclusive = self.cpus.exclusive_cpus_per_numa()
        allocatable = self.cpus.allocatable_cpus_per_numa()
        return {node: (exclusive.get(node, 0), count) for node, count in allocatable.items()}


@dataclass(frozen=True)
class MemorySignal:
    memory: MemoryManager
    name: str = SIGNAL_MEMORY

    def usage(self) -> NUMAUsage | None:
        if self.memory.policy_name != MEMORY_POLICY_STATIC:
            return None
        return {
            node: (table[self.name].reserved, table[self.name].allocatable)
            for node, table in self.memory.memory_tables().items()
            if self.name in table
        }


@dataclass(frozen=True)
class DeviceSignal:
    devices: DeviceManager
    name: str

    def usage(self) -> NUMAUsage | None:
        allocated = self.devices.allocated_per_numa(self.name)
        allocatable = self.devices.allocatable_per_numa(self.name)
        return {node: (allocated.get(node, 0), count) for node, count in allocatable.items()}


def signals_of(cm: ContainerManagerLike) -> list[UsageSignal]:
    """The node's signals in a fixed order: cpu, memory, hugepages by name, devices by name."""
    signals: list[UsageSignal] = [CPUSignal(cm.cpus), MemorySignal(cm.memory)]
    if cm.memory.policy_name == MEMORY_POLICY_STATIC:
        hugepages = {r for table in cm.memory.memory_tables().values() for r in table if r != SIGNAL_MEMORY}
        signals += [MemorySignal(cm.memory, name) for name in sorted(hugepages)]
    signals += [DeviceSignal(cm.devices, name) for name in sorted(cm.devices.all_devices)]
    return signals


class NUMAScoring:
    """A ``MaskTieBreaker`` holder: no opinion until bound, then the tie-breaker the options ask for.

    ``decisions`` / ``drain()`` expose what the scores decided since the last drain, for the admission
    answer (``TieBreakDecision.to_dict()``) and the log. ``requested`` holds the resources the current
    merge has hints for (None until a tapped provider answered).
    """

    def __init__(self) -> None:
        self.breaker: NUMATieBreaker | None = None
        self.requested: set[str] | None = None

    @property
    def active(self) -> bool:
        return self.breaker is not None

    def bind(self, cm: ContainerManagerLike) -> None:
        """Read the Topology Manager's parsed options and policy; the managers are read lazily later."""
        options = cm.topology.options
        if options is None or not wants_tie_breaker(cm.topology.policy.name, options):
            self.breaker = None  # the none policy (no merge), or no KEP-6007 option: nothing to break
            return
        self.breaker = new_tie_breaker(cm.topology.policy.name, options, signals_of(cm), self._requested)
        if isinstance(self.breaker, AllocationStrategyTieBreaker):
            scope = cm.topology.scope
            scope.hint_providers = [
                p if isinstance(p, HintTap) else HintTap(p, self, first=index == 0)
                for index, p in enumerate(scope.hint_providers)
            ]

    def _requested(self) -> AbstractSet[str] | None:
        return self.requested

    def saw_hints(self, hints: ProviderHints, *, first: bool) -> None:
        """A provider answered for the next merge; the first provider starts a new merge."""
        if first or self.requested is None:
            self.requested = set()
        for resource, resource_hints in (hints or {}).items():
            if resource_hints and any(h.affinity is not None for h in resource_hints):
                self.requested.add(resource)

    def choose(self, current: BitMask, candidate: BitMask, *, both_preferred: bool) -> BitMask | None:
        if self.breaker is None:
            return None
        return self.breaker.choose(current, candidate, both_preferred=both_preferred)

    @property
    def decisions(self) -> Sequence[TieBreakDecision]:
        return () if self.breaker is None else tuple(self.breaker.decisions)

    def drain(self) -> list[TieBreakDecision]:
        return [] if self.breaker is None else self.breaker.drain()


class HintTap:
    """A hint provider passed through unchanged, telling the scorer which resources its hints name.

    Every other attribute (``allocate_pod`` of ``PodLevelAllocator`` included) is the wrapped provider's.
    """

    def __init__(self, provider: HintProvider, scoring: NUMAScoring, *, first: bool) -> None:
        self.provider = provider
        self.scoring = scoring
        self.first = first

    def get_topology_hints(self, pod: Pod, container: Container) -> ProviderHints:
        hints = self.provider.get_topology_hints(pod, container)
        self.scoring.saw_hints(hints, first=self.first)
        return hints

    def get_pod_topology_hints(self, pod: Pod) -> ProviderHints:
        hints = self.provider.get_pod_topology_hints(pod)
        self.scoring.saw_hints(hints, first=self.first)
        return hints

    def allocate(self, pod: Pod, container: Container) -> None:
        self.provider.allocate(pod, container)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.provider, name)
