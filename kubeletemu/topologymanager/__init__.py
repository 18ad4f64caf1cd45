"""The kubelet's Topology Manager (``pkg/kubelet/cm/topologymanager``)."""

from kubeletemu.topologymanager.errors import (
    ERROR_TOPOLOGY_AFFINITY,
    TopologyAffinityError,
    TopologyManagerError,
)
from kubeletemu.topologymanager.hint import ProviderHints, ResourceHints, TopologyHint
from kubeletemu.topologymanager.manager import (
    POLICY_NAMES,
    SCOPE_NAMES,
    TopologyManager,
    new_manager,
    new_policy,
)
from kubeletemu.topologymanager.numa_info import NUMAInfo, NUMAInfoError
from kubeletemu.topologymanager.policy import HintMerger, MaskTieBreaker, Policy
from kubeletemu.topologymanager.policy_options import PolicyOptions, PolicyOptionsError
from kubeletemu.topologymanager.provider import HintProvider, PodLevelAllocator, Store

__all__ = [
    "ERROR_TOPOLOGY_AFFINITY",
    "POLICY_NAMES",
    "SCOPE_NAMES",
    "HintMerger",
    "HintProvider",
    "MaskTieBreaker",
    "NUMAInfo",
    "NUMAInfoError",
    "PodLevelAllocator",
    "Policy",
    "PolicyOptions",
    "PolicyOptionsError",
    "ProviderHints",
    "ResourceHints",
    "Store",
    "TopologyAffinityError",
    "TopologyHint",
    "TopologyManager",
    "TopologyManagerError",
    "new_manager",
    "new_policy",
]
