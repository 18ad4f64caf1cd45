"""The CPU manager's state (``cpumanager/state``): in memory, or backed by ``cpu_manager_state``."""

from kubeletemu.cpumanager.state.checkpoint import (
    CPUManagerCheckpoint,
    CPUManagerCheckpointV1,
    load_checkpoint,
    migrate_v1_to_v2,
)
from kubeletemu.cpumanager.state.state import (
    ContainerCPUAssignments,
    PodCPUAssignments,
    Reader,
    State,
    Writer,
)
from kubeletemu.cpumanager.state.state_checkpoint import (
    CPU_MANAGER_STATE_FILE,
    CheckpointState,
    checkpoint_to_state,
    read_checkpoint_file,
)
from kubeletemu.cpumanager.state.state_mem import MemoryState

__all__ = [
    "CPU_MANAGER_STATE_FILE",
    "CPUManagerCheckpoint",
    "CPUManagerCheckpointV1",
    "CheckpointState",
    "ContainerCPUAssignments",
    "MemoryState",
    "PodCPUAssignments",
    "Reader",
    "State",
    "Writer",
    "checkpoint_to_state",
    "load_checkpoint",
    "migrate_v1_to_v2",
    "read_checkpoint_file",
]
