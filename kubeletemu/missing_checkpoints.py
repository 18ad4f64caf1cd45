"""A start-up with a checkpoint missing while admitted pods hold what it records: refused, naming the file.

The daemon never deletes a checkpoint, and its writer puts every checkpoint on disk before the pod file of
an admission that changed it (a batch's files go in the order they were changed: the managers' checkpoints
during the allocation, the pod's file after it). So a crash can leave a checkpoint without a pod's file (a
call never answered, settled at start-up by the crash rule), never a pod file without the checkpoint it
needed: a missing checkpoint was removed from outside, most often by an operator following the kubelet's
advice to delete ``cpu_manager_state`` when changing the CPU manager policy, which the kubelet's
documentation says to do on a drained node. Starting anyway would give the pods' CPUs, memory or devices
to the next pods and, by the crash rule, delete every pod file. The choice here is to refuse, with one line
saying which file, how many pods depend on it and what to do; rebuilding the file from the pod files was
not chosen, since a Memory Manager's machine state cannot be recomputed exactly from the blocks alone, and a
policy change makes the recorded assignments meaningless anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubeletemu.cpumanager.state import CPU_MANAGER_STATE_FILE
from kubeletemu.devicemanager.checkpoint import KUBELET_DEVICE_MANAGER_CHECKPOINT
from kubeletemu.memorymanager.state import MEMORY_MANAGER_STATE_FILE
from kubeletemu.registry import PodRegistry

# Each checkpoint, and what a container's allocation record (``emulator.allocation_record``) holds of it.
_CHECKPOINTS: tuple[tuple[str, str, Callable[[dict[str, Any]], bool]], ...] = (
    (CPU_MANAGER_STATE_FILE, "exclusive CPUs", lambda record: bool(record.get("cpus"))),
    (MEMORY_MANAGER_STATE_FILE, "memory blocks", lambda record: bool(record.get("memory"))),
    (
        f"device-plugins/{KUBELET_DEVICE_MANAGER_CHECKPOINT}",
        "devices",
        lambda record: bool(record.get("devices")),
    ),
)
_NAMED = 3


class MissingCheckpointError(Exception):
    """A checkpoint that admitted pods depend on is missing (the message says which, and what to do)."""


def check_checkpoints_present(state_dir: Path, registry: PodRegistry) -> None:
    """Raise :class:`MissingCheckpointError` for the first checkpoint missing from ``state_dir`` while a
    registered pod holds something it records; a checkpoint no pod depends on may be missing (it is
    written afresh, as the kubelet writes a missing one)."""
    for name, what, holds in _CHECKPOINTS:
        path = state_dir / name
        if path.exists():
            continue
        dependents = [
            entry
            for entry in registry
            if any(isinstance(r, dict) and holds(r) for r in entry.allocations.values())
        ]
        if not dependents:
            continue
        named = ", ".join(f"{e.pod.namespace}/{e.pod.name}" for e in dependents[:_NAMED])
        more = f" and {len(dependents) - _NAMED} more" if len(dependents) > _NAMED else ""
        files = registry.directory if registry.directory is not None else state_dir
        raise MissingCheckpointError(
            f"{path} is missing but {len(dependents)} admitted pod(s) hold {what} it records "
            f"({named}{more}); it was removed from outside (a crash never leaves this): put the file back, "
            f"or, to start without those pods, remove their files from {files}"
        )
