"""In-memory state (``state_mem.go``)."""

from __future__ import annotations

import threading

from kubeletemu.memorymanager.state.state import (
    Block,
    ContainerMemoryAssignments,
    NUMANodeMap,
    PodMemoryAssignments,
    clone_assignments,
    clone_machine_state,
    clone_pod_assignments,
)


class MemoryState:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        # Never changed in place, only replaced (``copy`` shares it).
        self._machine_state: NUMANodeMap = {}
        self._assignments: ContainerMemoryAssignments = {}
        self._pod_assignments: PodMemoryAssignments = {}

    def get_machine_state(self) -> NUMANodeMap:
        with self._lock:
            return clone_machine_state(self._machine_state)

    def read_machine_state(self) -> NUMANodeMap:
        with self._lock:
            return self._machine_state  # replaced on write, never changed in place

    def get_memory_blocks(self, pod_uid: str, container_name: str) -> list[Block] | None:
        with self._lock:
            blocks = self._assignments.get(pod_uid, {}).get(container_name)
            return None if blocks is None else list(blocks)

    def get_memory_assignments(self) -> ContainerMemoryAssignments:
        with self._lock:
            return clone_assignments(self._assignments)

    def set_machine_state(self, machine_state: NUMANodeMap) -> None:
        with self._lock:
            self._machine_state = clone_machine_state(machine_state)

    def set_memory_blocks(self, pod_uid: str, container_name: str, blocks: list[Block]) -> None:
        with self._lock:
            self._assignments.setdefault(pod_uid, {})[container_name] = list(blocks)

    def set_memory_assignments(self, assignments: ContainerMemoryAssignments) -> None:
        with self._lock:
            self._assignments = clone_assignments(assignments)

    def delete(self, pod_uid: str, container_name: str) -> None:
        with self._lock:
            containers = self._assignments.get(pod_uid)
            if containers is None:
                return
            containers.pop(container_name, None)
            if not containers:
                del self._assignments[pod_uid]

    def get_pod_memory_blocks(self, pod_uid: str) -> list[Block] | None:
        with self._lock:
            blocks = self._pod_assignments.get(pod_uid)
            return None if blocks is None else list(blocks)

    def get_pod_memory_assignments(self) -> PodMemoryAssignments:
        with self._lock:
            return clone_pod_assignments(self._pod_assignments)

    def set_pod_memory_blocks(self, pod_uid: str, blocks: list[Block]) -> None:
        with self._lock:
            self._pod_assignments[pod_uid] = list(blocks)

    def set_pod_memory_assignments(self, assignments: PodMemoryAssignments) -> None:
        with self._lock:
            self._pod_assignments = clone_pod_assignments(assignments)

    def delete_pod(self, pod_uid: str) -> None:
        with self._lock:
            self._pod_assignments.pop(pod_uid, None)
            self._assignments.pop(pod_uid, None)

    def clear_state(self) -> None:
        with self._lock:
            self._machine_state = {}
            self._assignments = {}
            self._pod_assignments = {}

    def copy(self) -> MemoryState:
        """An independent copy (what-if copies of a running manager). The machine state is shared, not
        cloned: it is never changed in place (a write replaces it with a clone, a read returns one), so
        neither copy can see the other's writes; the assignments, changed in place, are cloned."""
        copied = MemoryState()
        with self._lock:
            copied._machine_state = self._machine_state
            copied._assignments = clone_assignments(self._assignments)
            copied._pod_assignments = clone_pod_assignments(self._pod_assignments)
        return copied
