"""The memory manager policy interface (``memorymanager/policy.go``)."""

from __future__ import annotations

from typing import Protocol

from kubeletemu.memorymanager.state.state import Block, State
from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager.hint import ProviderHints


class Policy(Protocol):
    def name(self) -> str: ...

    def start(self, state: State) -> None: ...

    def allocate(self, state: State, pod: Pod, container: Container) -> None: ...

    def allocate_pod(self, state: State, pod: Pod) -> None:
        """``AllocatePod`` of ``PodLevelResourceManagers``."""
        ...

    def remove_container(self, state: State, pod_uid: str, container_name: str) -> None: ...

    def get_topology_hints(self, state: State, pod: Pod, container: Container) -> ProviderHints: ...

    def get_pod_topology_hints(self, state: State, pod: Pod) -> ProviderHints: ...

    def get_allocatable_memory(self, state: State) -> list[Block]: ...
