"""Memory manager state types (``memorymanager/state/state.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class MemoryTable:
    """Bytes of one resource on one NUMA node (checkpoint keys: total, systemReserved, ...)."""

    total: int = 0
    system_reserved: int = 0
    allocatable: int = 0
    reserved: int = 0
    free: int = 0

    def clone(self) -> MemoryTable:
        return MemoryTable(self.total, self.system_reserved, self.allocatable, self.reserved, self.free)


@dataclass
class NUMANodeState:
    """``cells`` is the node's group: ``[id]`` unless it takes part in a cross-NUMA allocation."""

    number_of_assignments: int = 0
    memory_map: dict[str, MemoryTable] = field(default_factory=dict)
    cells: list[int] = field(default_factory=list)

    def clone(self) -> NUMANodeState:
        return NUMANodeState(
            self.number_of_assignments,
            {name: table.clone() for name, table in self.memory_map.items()},
            list(self.cells),
        )


NUMANodeMap = dict[int, NUMANodeState]


def clone_machine_state(machine_state: Mapping[int, NUMANodeState]) -> NUMANodeMap:
    return {node: s.clone() for node, s in machine_state.items()}


@dataclass(frozen=True)
class Block:
    """A memory block of a container: ``size`` bytes of ``type`` over the ``numa_affinity`` nodes."""

    numa_affinity: tuple[int, ...]
    type: str
    size: int


# pod UID -> container name -> blocks
ContainerMemoryAssignments = dict[str, dict[str, list[Block]]]
# pod UID -> the pod's own blocks (``PodMemoryAssignments`` of PodLevelResourceManagers: what the pod holds
# on the node; its containers' blocks are slices of it, not charged again).
PodMemoryAssignments = dict[str, list[Block]]


def clone_assignments(assignments: Mapping[str, Mapping[str, list[Block]]]) -> ContainerMemoryAssignments:
    return {pod: {name: list(blocks) for name, blocks in ctrs.items()} for pod, ctrs in assignments.items()}


def clone_pod_assignments(assignments: Mapping[str, list[Block]]) -> PodMemoryAssignments:
    return {pod: list(blocks) for pod, blocks in assignments.items()}


class State(Protocol):
    """``state.State``: readers return copies, writers store copies (and persist, when file-backed)."""

    def get_machine_state(self) -> NUMANodeMap: ...

    def read_machine_state(self) -> NUMANodeMap:
        """The machine state itself, not a copy, for readers that change nothing (hint generation): the
        kubelet's reader clones, which only costs time where nothing is written."""
        ...

    def get_memory_blocks(self, pod_uid: str, container_name: str) -> list[Block] | None: ...

    def get_memory_assignments(self) -> ContainerMemoryAssignments: ...

    def set_machine_state(self, machine_state: NUMANodeMap) -> None: ...

    def set_memory_blocks(self, pod_uid: str, container_name: str, blocks: list[Block]) -> None: ...

    def set_memory_assignments(self, assignments: ContainerMemoryAssignments) -> None: ...

    def delete(self, pod_uid: str, container_name: str) -> None: ...

    def get_pod_memory_blocks(self, pod_uid: str) -> list[Block] | None: ...

    def get_pod_memory_assignments(self) -> PodMemoryAssignments: ...

    def set_pod_memory_blocks(self, pod_uid: str, blocks: list[Block]) -> None: ...

    def set_pod_memory_assignments(self, assignments: PodMemoryAssignments) -> None: ...

    def delete_pod(self, pod_uid: str) -> None:
        """``DeletePod``: the pod's pod-level blocks and any container blocks left."""
        ...

    def clear_state(self) -> None: ...
