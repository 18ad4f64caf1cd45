"""The ``None`` policy (``policy_none.go``): no hints, no allocation."""

from __future__ import annotations

from kubeletemu.memorymanager.state.state import Block, State
from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager.hint import ProviderHints

POLICY_NONE = "None"


class NonePolicy:
    def name(self) -> str:
        return POLICY_NONE

    def start(self, state: State) -> None:
        return None

    def allocate(self, state: State, pod: Pod, container: Container) -> None:
        return None

    def allocate_pod(self, state: State, pod: Pod) -> None:
        return None

    def remove_container(self, state: State, pod_uid: str, container_name: str) -> None:
        return None

    def get_topology_hints(self, state: State, pod: Pod, container: Container) -> ProviderHints:
        return None

    def get_pod_topology_hints(self, state: State, pod: Pod) -> ProviderHints:
        return None

    def get_allocatable_memory(self, state: State) -> list[Block]:
        return []
