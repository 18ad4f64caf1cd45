"""``state_checkpoint.go``: a State backed by the ``cpu_manager_state`` file.

Restoring follows ``NewCheckpointState``: a missing file is created; an existing one is loaded (V1 or
V2, in the version's order: ``formats.load``), its policy name must match the configured one and its
cpusets must parse; any failure is the kubelet's "could not restore state from checkpoint: ..., please
drain this node and delete the CPU manager checkpoint file ... before restarting Kubelet". Every change
is written back at once, atomically (temporary file in the same directory, fsync, rename; the directory
is not fsynced, as the kubelet's file store does not).

Which format is written and read follows the emulated kubelet version and its ``PodLevelResourceManagers``
gate (``formats.CPUCheckpointFormat``): V2 up to 1.35, V2 or V3 (with ``podEntries``) in 1.36, V4 on master.
The pod-level sets are in the file only in V3 and V4; with V2 they live in memory, as the kubelet's do.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path

from kubeletemu.checkpointmanager import make_directories, write_file_atomic
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CheckpointError, CheckpointNotFoundError, CPUSetError, StateError
from kubeletemu.cpumanager.state import formats
from kubeletemu.cpumanager.state.checkpoint import ContainerRefLookup, CPUManagerCheckpoint, load_checkpoint
from kubeletemu.cpumanager.state.state import ContainerCPUAssignments, PodCPUAssignments
from kubeletemu.cpumanager.state.state_mem import MemoryState
from kubeletemu.golang import go_quote

log = logging.getLogger(__name__)

CPU_MANAGER_STATE_FILE = "cpu_manager_state"


def read_checkpoint_file(path: Path, lookup: ContainerRefLookup | None = None) -> CPUManagerCheckpoint:
    """Load a checkpoint file as the kubelet would (no policy check). Raises ``CheckpointError``."""
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointNotFoundError() from None
    except OSError as err:
        raise CheckpointError(f"cannot read {path}: {err.strerror}") from None
    return load_checkpoint(blob, lookup)


def checkpoint_to_state(checkpoint: CPUManagerCheckpoint) -> tuple[CPUSet, ContainerCPUAssignments]:
    """Parse the cpusets of a checkpoint, with the kubelet's error texts."""
    try:
        default = CPUSet.parse(checkpoint.default_cpu_set)
    except CPUSetError as err:
        raise CheckpointError(
            f"could not parse default cpu set {go_quote(checkpoint.default_cpu_set)}: {err}"
        ) from None
    assignments: ContainerCPUAssignments = {}
    for pod, containers in (checkpoint.entries or {}).items():
        assignments[pod] = {}
        for container, text in (containers or {}).items():
            try:
                assignments[pod][container] = CPUSet.parse(text)
            except CPUSetError as err:
                raise CheckpointError(
                    f"could not parse cpuset {go_quote(text)} for container {go_quote(container)} in pod "
                    f"{go_quote(pod)}: {err}"
                ) from None
    return default, assignments


class CheckpointState:
    """The file-backed State. ``initial_containers`` resolves V1 container ids to (podUID, name);
    ``checkpoint_format`` is the emulated kubelet's (default: the V2 of 1.33 … 1.35)."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        policy_name: str,
        initial_containers: Mapping[str, tuple[str, str]] | None = None,
        checkpoint_name: str = CPU_MANAGER_STATE_FILE,
        checkpoint_format: formats.CPUCheckpointFormat | None = None,
    ) -> None:
        self.path = Path(state_dir) / checkpoint_name
        self.policy_name = policy_name
        self.checkpoint_format = checkpoint_format or formats.CPUCheckpointFormat()
        self._cache = MemoryState()
        self._lock = threading.RLock()
        self._containers = dict(initial_containers or {})
        try:
            # The checkpoint manager creates its directory (utilstore.NewFileStore).
            make_directories(self.path.parent)
        except OSError as err:
            raise StateError(f"failed to initialize checkpoint manager: {err}") from None
        try:
            self._restore()
        except (CheckpointError, OSError) as err:
            text = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise StateError(
                f"could not restore state from checkpoint: {text}, please drain this node and delete the CPU "
                f"manager checkpoint file {go_quote(str(self.path))} before restarting Kubelet"
            ) from None

    def _restore(self) -> None:
        with self._lock:
            try:
                blob = self.path.read_bytes()
            except FileNotFoundError:
                self._store()
                return
            content = formats.load(blob, self.checkpoint_format, self._containers.get)
            if content.policy_name != self.policy_name:
                raise CheckpointError(
                    f"configured policy {go_quote(self.policy_name)} differs from state checkpoint policy "
                    f"{go_quote(content.policy_name)}"
                )
            default, assignments = checkpoint_to_state(_as_v2(content))
            self._cache.set_default_cpu_set(default)
            self._cache.set_cpu_assignments(assignments)
            if content.read_as in (formats.V3, formats.V4):
                self._cache.set_pod_cpu_assignments(_pod_sets(content))

    def restore(self, blob: bytes) -> None:
        """Take the state a checkpoint's content holds, writing nothing: the daemon goes back to the last
        durable checkpoint when later ones could not be written. Pod-level sets (memory only) are kept
        for the pods the checkpoint still names."""
        content = formats.load(blob, self.checkpoint_format, self._containers.get)
        default, assignments = checkpoint_to_state(_as_v2(content))
        with self._lock:
            self._cache.set_default_cpu_set(default)
            self._cache.set_cpu_assignments(assignments)
            if content.read_as in (formats.V3, formats.V4):
                self._cache.set_pod_cpu_assignments(_pod_sets(content))
                return
            pod_sets = self._cache.get_pod_cpu_assignments()
            self._cache.set_pod_cpu_assignments({uid: s for uid, s in pod_sets.items() if uid in assignments})

    def _persist(self) -> None:
        """After a change: like the kubelet, a failed write is logged and the in-memory state kept."""
        try:
            self._store()
        except OSError as err:
            log.error("Failed to store state to checkpoint %s: %s", self.path, err)

    def _store(self) -> None:
        write_file_atomic(self.path, self._marshal)

    def _marshal(self) -> bytes:
        content = formats.CPUCheckpointContent(
            policy_name=self.policy_name,
            default_cpu_set=str(self._cache.get_default_cpu_set()),
            entries={
                pod: {name: str(cpus) for name, cpus in containers.items()}
                for pod, containers in self._cache.get_cpu_assignments().items()
            },
            pod_entries={uid: str(cpus) for uid, cpus in self._cache.get_pod_cpu_assignments().items()},
        )
        return formats.marshal(content, self.checkpoint_format)

    # -- Reader --------------------------------------------------------------------------------------

    def get_cpu_set(self, pod_uid: str, container_name: str) -> CPUSet | None:
        return self._cache.get_cpu_set(pod_uid, container_name)

    def get_default_cpu_set(self) -> CPUSet:
        return self._cache.get_default_cpu_set()

    def get_cpu_set_or_default(self, pod_uid: str, container_name: str) -> CPUSet:
        return self._cache.get_cpu_set_or_default(pod_uid, container_name)

    def get_cpu_assignments(self) -> ContainerCPUAssignments:
        return self._cache.get_cpu_assignments()

    def get_pod_cpu_set(self, pod_uid: str) -> CPUSet | None:
        return self._cache.get_pod_cpu_set(pod_uid)

    def get_pod_cpu_assignments(self) -> PodCPUAssignments:
        return self._cache.get_pod_cpu_assignments()

    # -- Writer: each change is persisted -----------------------------------------------------------

    def set_cpu_set(self, pod_uid: str, container_name: str, cpus: CPUSet) -> None:
        with self._lock:
            self._cache.set_cpu_set(pod_uid, container_name, cpus)
            self._persist()

    def set_default_cpu_set(self, cpus: CPUSet) -> None:
        with self._lock:
            self._cache.set_default_cpu_set(cpus)
            self._persist()

    def set_cpu_assignments(self, assignments: Mapping[str, Mapping[str, CPUSet]]) -> None:
        with self._lock:
            self._cache.set_cpu_assignments(assignments)
            self._persist()

    # The kubelet stores after pod-level changes too; with V2 the bytes do not change.
    def set_pod_cpu_set(self, pod_uid: str, cpus: CPUSet) -> None:
        with self._lock:
            self._cache.set_pod_cpu_set(pod_uid, cpus)
            self._persist()

    def set_pod_cpu_assignments(self, assignments: Mapping[str, CPUSet]) -> None:
        with self._lock:
            self._cache.set_pod_cpu_assignments(assignments)
            self._persist()

    def delete(self, pod_uid: str, container_name: str) -> None:
        with self._lock:
            self._cache.delete(pod_uid, container_name)
            self._persist()

    def delete_pod(self, pod_uid: str) -> None:
        with self._lock:
            self._cache.delete_pod(pod_uid)
            self._persist()

    def clear_state(self) -> None:
        with self._lock:
            self._cache.clear_state()
            self._persist()


def _as_v2(content: formats.CPUCheckpointContent) -> CPUManagerCheckpoint:
    return CPUManagerCheckpoint(content.policy_name, content.default_cpu_set, content.entries)


def _pod_sets(content: formats.CPUCheckpointContent) -> dict[str, CPUSet]:
    # The strings were parsed when read (PodEntry.UnmarshalJSON), so they parse again.
    return {uid: CPUSet.parse(text) for uid, text in (content.pod_entries or {}).items()}
