"""The kubelet's CPU Manager (``pkg/kubelet/cm/cpumanager``): topology model, allocators, policies, state."""

from kubeletemu.cpumanager.cpu_assignment import (
    CPU_SORTING_STRATEGY_PACKED,
    CPU_SORTING_STRATEGY_SPREAD,
    CPUAccumulator,
    take_by_topology_numa_distributed,
    take_by_topology_numa_packed,
)
from kubeletemu.cpumanager.cpuset import CPUSet, format_cpu_list
from kubeletemu.cpumanager.errors import (
    ERROR_EMPTY_POD_SHARED_POOL,
    ERROR_SMT_ALIGNMENT,
    CheckpointError,
    CorruptCheckpointError,
    CPUAllocationError,
    CPUManagerError,
    CPUSetError,
    EmptyPodSharedPoolError,
    KubeletHangError,
    PolicyOptionsError,
    SMTAlignmentError,
    StateError,
    TopologyError,
)
from kubeletemu.cpumanager.manager import POLICY_NAMES, CPUManager, new_manager
from kubeletemu.cpumanager.metrics import CPUManagerGauges, CPUManagerMetrics
from kubeletemu.cpumanager.pod_requests import RequestCalculator
from kubeletemu.cpumanager.policy import Policy
from kubeletemu.cpumanager.policy_none import POLICY_NONE, NonePolicy
from kubeletemu.cpumanager.policy_options import (
    ALIGN_BY_SOCKET,
    DISTRIBUTE_CPUS_ACROSS_CORES,
    DISTRIBUTE_CPUS_ACROSS_NUMA,
    FULL_PCPUS_ONLY,
    OPTION_LEVELS,
    PREFER_ALIGN_CPUS_BY_UNCORECACHE,
    STRICT_CPU_RESERVATION,
    OptionLevel,
    StaticPolicyOptions,
    check_policy_option_available,
    validate_static_policy_options,
)
from kubeletemu.cpumanager.policy_static import POLICY_STATIC, StaticPolicy
from kubeletemu.cpumanager.reservation import (
    node_allocatable_cpu_reservation,
    num_reserved_cpus,
    parse_reserved_system_cpus,
)
from kubeletemu.cpumanager.topology import CPUDetails, CPUInfo, CPUTopology, DiscoveredCore

__all__ = [
    "ALIGN_BY_SOCKET",
    "CPU_SORTING_STRATEGY_PACKED",
    "CPU_SORTING_STRATEGY_SPREAD",
    "DISTRIBUTE_CPUS_ACROSS_CORES",
    "DISTRIBUTE_CPUS_ACROSS_NUMA",
    "ERROR_EMPTY_POD_SHARED_POOL",
    "ERROR_SMT_ALIGNMENT",
    "FULL_PCPUS_ONLY",
    "OPTION_LEVELS",
    "POLICY_NAMES",
    "POLICY_NONE",
    "POLICY_STATIC",
    "PREFER_ALIGN_CPUS_BY_UNCORECACHE",
    "STRICT_CPU_RESERVATION",
    "CPUAccumulator",
    "CPUAllocationError",
    "CPUDetails",
    "CPUInfo",
    "CPUManager",
    "CPUManagerError",
    "CPUManagerGauges",
    "CPUManagerMetrics",
    "CPUSet",
    "CPUSetError",
    "CPUTopology",
    "CheckpointError",
    "CorruptCheckpointError",
    "DiscoveredCore",
    "EmptyPodSharedPoolError",
    "KubeletHangError",
    "NonePolicy",
    "OptionLevel",
    "Policy",
    "PolicyOptionsError",
    "RequestCalculator",
    "SMTAlignmentError",
    "StateError",
    "StaticPolicy",
    "StaticPolicyOptions",
    "TopologyError",
    "check_policy_option_available",
    "format_cpu_list",
    "new_manager",
    "node_allocatable_cpu_reservation",
    "num_reserved_cpus",
    "parse_reserved_system_cpus",
    "take_by_topology_numa_distributed",
    "take_by_topology_numa_packed",
    "validate_static_policy_options",
]
