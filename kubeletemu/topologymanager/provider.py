"""The interfaces between the topology manager and the resource managers (``topology_manager.go``)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager.hint import ProviderHints, TopologyHint
from kubeletemu.topologymanager.policy import Policy


class HintProvider(Protocol):
    """Implemented by the CPU, memory and device managers.

    ``allocate`` is called after the merged affinity is stored, so a provider reads it back through the
    Store. It raises to refuse: an ``AdmissionError`` keeps its reason, anything else is unexpected.
    """

    def get_topology_hints(self, pod: Pod, container: Container) -> ProviderHints: ...

    def get_pod_topology_hints(self, pod: Pod) -> ProviderHints: ...

    def allocate(self, pod: Pod, container: Container) -> None: ...


@runtime_checkable
class PodLevelAllocator(Protocol):
    """``AllocatePod`` of the ``PodLevelResourceManagers`` gate (alpha)."""

    def allocate_pod(self, pod: Pod) -> None: ...


class Store(Protocol):
    """What providers read: the stored affinity per pod UID and container name, and the policy."""

    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint: ...

    def get_policy(self) -> Policy: ...
