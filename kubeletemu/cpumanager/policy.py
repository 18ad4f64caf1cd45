"""``cpumanager.Policy``: what the CPU manager delegates to its ``none`` or ``static`` policy."""

from __future__ import annotations

from typing import Protocol

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.state.state import State
from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager import ProviderHints


class Policy(Protocol):
    @property
    def name(self) -> str: ...

    def start(self, state: State) -> None:
        """Validate (or initialise) the state; raises ``StateError`` with the kubelet's text."""
        ...

    def allocate(self, state: State, pod: Pod, container: Container) -> None:
        """Assign exclusive CPUs if the container qualifies; raises to refuse admission."""
        ...

    def allocate_pod(self, state: State, pod: Pod) -> None:
        """``AllocatePod`` of ``PodLevelResourceManagers``."""
        ...

    def remove_container(self, state: State, pod_uid: str, container_name: str) -> None: ...

    def get_topology_hints(self, state: State, pod: Pod, container: Container) -> ProviderHints: ...

    def get_pod_topology_hints(self, state: State, pod: Pod) -> ProviderHints: ...

    def get_allocatable_cpus(self, state: State) -> CPUSet:
        """The CPUs exclusive allocations may ever use (all minus reserved; none for ``none``)."""
        ...
