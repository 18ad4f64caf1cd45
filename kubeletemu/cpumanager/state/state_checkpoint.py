"""``state_checkpoint.go``: a State backed by the ``cpu_manager_state`` file.

Restoring follows ``NewCheckpointState``: a missing file is created; an existing one is loaded (V2, else
V1 migrated), its policy name must match the configured one and its cpusets must parse; any failure is
the kubelet's "could not restore state from checkpoint: ..., please drain this node and delete the CPU
manager checkpoint file ... before restarting Kubelet". Every change is written back at once, atomically
(temporary file in the same directory, fsync, rename; the directory is not fsynced, as the kubelet's
file store does not).

The pod-level sets of ``PodLevelResourceManagers`` live in memory only: the kubelet's on-disk key for
them is not settled upstream, so the file stays in the V2 format every kubelet reads.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path

from kubeletemu.checkpointmanager import write_file_atomic
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CheckpointError, CheckpointNotFoundError, CPUSetError, StateError
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
    """The file-backed State. ``initial_containers`` resolves V1 container ids to (podUID, name)."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        policy_name: str,
        initial_containers: Mapping[str, tuple[str, str]] | None = None,
        checkpoint_name: str = CPU_MANAGER_STATE_FILE,
    ) -> None:
        self.path = Path(state_dir) / checkpoint_name
        self.policy_name = policy_name
        self._cache = MemoryState()
        self._lock = threading.RLock()
        self._containers = dict(initial_containers or {})
        try:
            # The checkpoint manager creates its directory (utilstore.NewFileStore).
            self.path.parent.mkdir(parents=True, exist_ok=True)
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
                checkpoint = read_checkpoint_file(self.path, self._containers.get)
            except CheckpointNotFoundError:
                self._store()
                return
            if checkpoint.policy_name != self.policy_name:
                raise CheckpointError(
                    f"configured policy {go_quote(self.policy_name)} differs from state checkpoint policy "
                    f"{go_quote(checkpoint.policy_name)}"
                )
            default, assignments = checkpoint_to_state(checkpoint)
            self._cache.set_default_cpu_set(default)
            self._cache.set_cpu_assignments(assignments)

    def restore(self, blob: bytes) -> None:
        """Take the state a checkpoint's content holds, writing nothing: the daemon goes back to the last
        durable checkpoint when later ones could not be written. Pod-level sets (memory only) are kept
        for the pods the checkpoint still names."""
        default, assignments = checkpoint_to_state(load_checkpoint(blob, self._containers.get))
        with self._lock:
            self._cache.set_default_cpu_set(default)
            self._cache.set_cpu_assignments(assignments)
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
        checkpoint = CPUManagerCheckpoint(
            policy_name=self.policy_name,
            default_cpu_set=str(self._cache.get_default_cpu_set()),
            entries={
                pod: {name: str(cpus) for name, cpus in containers.items()}
                for pod, containers in self._cache.get_cpu_assignments().items()
            },
        )
        return checkpoint.marshal()

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

    def set_pod_cpu_set(self, pod_uid: str, cpus: CPUSet) -> None:
        with self._lock:
            self._cache.set_pod_cpu_set(pod_uid, cpus)

    def set_pod_cpu_assignments(self, assignments: Mapping[str, CPUSet]) -> None:
        with self._lock:
            self._cache.set_pod_cpu_assignments(assignments)

    def delete(self, pod_uid: str, container_name: str) -> None:
        with self._lock:
            self._cache.delete(pod_uid, container_name)
            self._persist()

    def delete_pod(self, pod_uid: str) -> None:
        with self._lock:
            self._cache.delete_pod(pod_uid)

    def clear_state(self) -> None:
        with self._lock:
            self._cache.clear_state()
            self._persist()
