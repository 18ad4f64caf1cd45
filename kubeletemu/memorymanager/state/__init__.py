"""Memory manager state: types, in-memory and checkpoint-backed stores, the checkpoint format."""

from kubeletemu.memorymanager.state.checkpoint import (
    CheckpointError,
    CorruptCheckpointError,
    MemoryManagerCheckpoint,
    compute_checksum,
    marshal,
    unmarshal,
)
from kubeletemu.memorymanager.state.state import (
    Block,
    ContainerMemoryAssignments,
    MemoryTable,
    NUMANodeMap,
    NUMANodeState,
    PodMemoryAssignments,
    State,
)
from kubeletemu.memorymanager.state.state_checkpoint import MEMORY_MANAGER_STATE_FILE, CheckpointState
from kubeletemu.memorymanager.state.state_mem import MemoryState

__all__ = [
    "MEMORY_MANAGER_STATE_FILE",
    "Block",
    "CheckpointError",
    "CheckpointState",
    "ContainerMemoryAssignments",
    "CorruptCheckpointError",
    "MemoryManagerCheckpoint",
    "MemoryState",
    "MemoryTable",
    "NUMANodeMap",
    "NUMANodeState",
    "PodMemoryAssignments",
    "State",
    "compute_checksum",
    "marshal",
    "unmarshal",
]
