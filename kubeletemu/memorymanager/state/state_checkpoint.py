"""File-backed state (``state_checkpoint.go``): an in-memory cache written through on every change, in the
format of the emulated kubelet (``formats.MemoryCheckpointFormat``: V1, V2 or 1.37's V3).

Writes are atomic (temporary file in the same directory, fsync, rename), like the kubelet's file store.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from kubeletemu.checkpointmanager import write_file_atomic
from kubeletemu.memorymanager.errors import MemoryManagerError
from kubeletemu.memorymanager.state.checkpoint import (
    LAYOUT_CLASSIC,
    CheckpointError,
    MemoryManagerCheckpoint,
    marshal,
    unmarshal,
)
from kubeletemu.memorymanager.state.formats import MemoryCheckpointFormat
from kubeletemu.memorymanager.state.state import (
    Block,
    ContainerMemoryAssignments,
    NUMANodeMap,
    PodMemoryAssignments,
)
from kubeletemu.memorymanager.state.state_mem import MemoryState

MEMORY_MANAGER_STATE_FILE = "memory_manager_state"


class CheckpointState:
    """``NewCheckpointState``: restores from ``<state_dir>/<name>`` or creates it."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        policy_name: str,
        checkpoint_name: str = MEMORY_MANAGER_STATE_FILE,
        layout: str = LAYOUT_CLASSIC,
        checkpoint_format: MemoryCheckpointFormat | None = None,
    ) -> None:
        """``checkpoint_format``: the emulated kubelet's (it then decides the layout and the reading);
        without it, ``layout`` is written and either layout is read."""
        self.path = Path(state_dir) / checkpoint_name
        self.policy_name = policy_name
        self.checkpoint_format = checkpoint_format
        self.layout = layout if checkpoint_format is None else checkpoint_format.layout
        self._cache = MemoryState()
        self._lock = threading.RLock()
        try:
            self._restore()
        except (CheckpointError, MemoryManagerError, OSError) as err:
            raise MemoryManagerError(
                f"could not restore state from checkpoint: {err}, please drain this node and delete the "
                f'memory manager checkpoint file "{self.path}" before restarting Kubelet'
            ) from None

    def _restore(self) -> None:
        with self._lock:
            try:
                blob = self.path.read_bytes()
            except FileNotFoundError:
                self._store()
                return
            checkpoint = self._unmarshal(blob)
            if checkpoint.policy_name != self.policy_name:
                raise MemoryManagerError(
                    f'[memorymanager] configured policy "{self.policy_name}" differs from state checkpoint '
                    f'policy "{checkpoint.policy_name}"'
                )
            self._take(checkpoint)

    def restore(self, blob: bytes) -> None:
        """Take the state a checkpoint's content holds, writing nothing: the daemon goes back to the last
        durable checkpoint when later ones could not be written."""
        checkpoint = self._unmarshal(blob)
        with self._lock:
            self._take(checkpoint)

    def _take(self, checkpoint: MemoryManagerCheckpoint) -> None:
        """The cache becomes the checkpoint's content; pod-level blocks (``podEntries``, written by a
        kubelet with PodLevelResourceManagers) come back as they are, none when the file has none."""
        self._cache.set_machine_state(checkpoint.machine_state)
        self._cache.set_memory_assignments(checkpoint.entries)
        self._cache.set_pod_memory_assignments(checkpoint.pod_entries or {})

    def _unmarshal(self, blob: bytes) -> MemoryManagerCheckpoint:
        fmt = self.checkpoint_format
        return unmarshal(blob) if fmt is None else fmt.unmarshal(blob)

    def _store(self) -> None:
        write_file_atomic(self.path, self._marshal)

    def _marshal(self) -> bytes:
        checkpoint = MemoryManagerCheckpoint(
            policy_name=self.policy_name,
            machine_state=self._cache.get_machine_state(),
            entries=self._cache.get_memory_assignments(),
            pod_entries=self._cache.get_pod_memory_assignments(),
        )
        if self.checkpoint_format is not None:
            return self.checkpoint_format.marshal(checkpoint)
        return marshal(checkpoint, self.layout)

    def copy(self) -> MemoryState:
        """An in-memory copy of what the checkpoint holds now (writes to it touch no file)."""
        return self._cache.copy()

    def get_machine_state(self) -> NUMANodeMap:
        return self._cache.get_machine_state()

    def read_machine_state(self) -> NUMANodeMap:
        return self._cache.read_machine_state()

    def get_memory_blocks(self, pod_uid: str, container_name: str) -> list[Block] | None:
        return self._cache.get_memory_blocks(pod_uid, container_name)

    def get_memory_assignments(self) -> ContainerMemoryAssignments:
        return self._cache.get_memory_assignments()

    def set_machine_state(self, machine_state: NUMANodeMap) -> None:
        with self._lock:
            self._cache.set_machine_state(machine_state)
            self._store()

    def set_memory_blocks(self, pod_uid: str, container_name: str, blocks: list[Block]) -> None:
        with self._lock:
            self._cache.set_memory_blocks(pod_uid, container_name, blocks)
            self._store()

    def set_memory_assignments(self, assignments: ContainerMemoryAssignments) -> None:
        with self._lock:
            self._cache.set_memory_assignments(assignments)
            self._store()

    def delete(self, pod_uid: str, container_name: str) -> None:
        with self._lock:
            self._cache.delete(pod_uid, container_name)
            self._store()

    def get_pod_memory_blocks(self, pod_uid: str) -> list[Block] | None:
        return self._cache.get_pod_memory_blocks(pod_uid)

    def get_pod_memory_assignments(self) -> PodMemoryAssignments:
        return self._cache.get_pod_memory_assignments()

    def set_pod_memory_blocks(self, pod_uid: str, blocks: list[Block]) -> None:
        with self._lock:
            self._cache.set_pod_memory_blocks(pod_uid, blocks)
            self._store()

    def set_pod_memory_assignments(self, assignments: PodMemoryAssignments) -> None:
        with self._lock:
            self._cache.set_pod_memory_assignments(assignments)
            self._store()

    def delete_pod(self, pod_uid: str) -> None:
        with self._lock:
            self._cache.delete_pod(pod_uid)
            self._store()

    def clear_state(self) -> None:
        with self._lock:
            self._cache.clear_state()
            self._store()
