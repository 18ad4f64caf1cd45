"""The kubelet's Memory Manager (``pkg/kubelet/cm/memorymanager``): ``None`` and ``Static`` policies."""

from kubeletemu.memorymanager.errors import MemoryAllocationError, MemoryManagerError
from kubeletemu.memorymanager.machine import MachineInfo, NUMANode
from kubeletemu.memorymanager.manager import POLICY_NAMES, MemoryManager, MemoryManagerMetrics, new_manager
from kubeletemu.memorymanager.policy_none import POLICY_NONE, NonePolicy
from kubeletemu.memorymanager.policy_static import POLICY_STATIC, StaticPolicy
from kubeletemu.memorymanager.quantity_format import GoQuantity, hugepage_resource_name
from kubeletemu.memorymanager.requests import get_pod_requested_resources, get_requested_resources
from kubeletemu.memorymanager.reserved_memory import (
    MemoryReservation,
    get_node_allocatable_reservation,
    get_system_reserved_memory,
    validate_reserved_memory,
)
from kubeletemu.memorymanager.state import Block, MemoryTable, NUMANodeState

__all__ = [
    "POLICY_NAMES",
    "POLICY_NONE",
    "POLICY_STATIC",
    "Block",
    "GoQuantity",
    "MachineInfo",
    "MemoryAllocationError",
    "MemoryManager",
    "MemoryManagerError",
    "MemoryManagerMetrics",
    "MemoryReservation",
    "MemoryTable",
    "NUMANode",
    "NUMANodeState",
    "NonePolicy",
    "StaticPolicy",
    "get_node_allocatable_reservation",
    "get_pod_requested_resources",
    "get_requested_resources",
    "get_system_reserved_memory",
    "hugepage_resource_name",
    "new_manager",
    "validate_reserved_memory",
]
