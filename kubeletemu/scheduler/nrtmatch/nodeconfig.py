"""The Topology Manager configuration the plugin reads from a NodeResourceTopology.

scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``, ``nodeconfig/topologymanager.go``
(``TopologyManagerFromNodeResourceTopology``): defaults none / container / 8; the deprecated
``topologyPolicies[0]`` first (later entries ignored), then every attribute in order, each overriding what
came before when valid:

- ``topologyManagerScope``: ``container`` or ``pod``;
- ``topologyManagerPolicy``: ``none``, ``best-effort``, ``restricted`` or ``single-numa-node``;
- ``topologyManagerMaxNUMANodes``: ``strconv.Atoi`` text above 1, capped at 1024.

Of the legacy names, the ``…ContainerLevel`` / ``…PodLevel`` ones set both policy and scope
(``SingleNUMANodePodLevel`` → single-numa-node + pod, ``BestEffortContainerLevel`` → best-effort +
container, ...); the bare ``None``, ``BestEffort`` and ``Restricted`` (and anything unknown) set nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubeletemu.golang import GoSyntaxError, go_atoi
from kubeletemu.scheduler.framework import memo
from kubeletemu.scheduler.objects import NodeResourceTopology

POLICY_NONE = "none"
POLICY_BEST_EFFORT = "best-effort"
POLICY_RESTRICTED = "restricted"
POLICY_SINGLE_NUMA_NODE = "single-numa-node"
POLICIES = (POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)
SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"
SCOPES = (SCOPE_CONTAINER, SCOPE_POD)

ATTRIBUTE_SCOPE = "topologyManagerScope"
ATTRIBUTE_POLICY = "topologyManagerPolicy"
ATTRIBUTE_MAX_NUMA_NODES = "topologyManagerMaxNUMANodes"
DEFAULT_MAX_NUMA_NODES = 8
LIMIT_NUMA_NODES = 1024

# topologyv1alpha2.TopologyManagerPolicy values that updateFromPolicies maps.
LEGACY_POLICIES: dict[str, tuple[str, str]] = {
    "SingleNUMANodePodLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_POD),
    "SingleNUMANodeContainerLevel": (POLICY_SINGLE_NUMA_NODE, SCOPE_CONTAINER),
    "BestEffortPodLevel": (POLICY_BEST_EFFORT, SCOPE_POD),
    "BestEffortContainerLevel": (POLICY_BEST_EFFORT, SCOPE_CONTAINER),
    "RestrictedPodLevel": (POLICY_RESTRICTED, SCOPE_POD),
    "RestrictedContainerLevel": (POLICY_RESTRICTED, SCOPE_CONTAINER),
}


@dataclass(frozen=True)
class TopologyManagerConfig:
    """``nodeconfig.TopologyManager``."""

    policy: str = POLICY_NONE
    scope: str = SCOPE_CONTAINER
    max_numa_nodes: int = DEFAULT_MAX_NUMA_NODES

    def __str__(self) -> str:
        return f"policy={self.policy} scope={self.scope} maxNUMANodes={self.max_numa_nodes}"


def topology_manager_config(topology: NodeResourceTopology) -> TopologyManagerConfig:
    """``TopologyManagerFromNodeResourceTopology``, read once per NRT object (it depends on nothing else)."""
    return memo(topology, "_nrtmatch_topology_manager_config", lambda: _read_config(topology))


def _read_config(topology: NodeResourceTopology) -> TopologyManagerConfig:
    policy, scope, max_numa = POLICY_NONE, SCOPE_CONTAINER, DEFAULT_MAX_NUMA_NODES
    if topology.topology_policies and topology.topology_policies[0] in LEGACY_POLICIES:
        policy, scope = LEGACY_POLICIES[topology.topology_policies[0]]
    for attribute in topology.attributes:
        if attribute.name == ATTRIBUTE_SCOPE and attribute.value in SCOPES:
            scope = attribute.value
        elif attribute.name == ATTRIBUTE_POLICY and attribute.value in POLICIES:
            policy = attribute.value
        elif attribute.name == ATTRIBUTE_MAX_NUMA_NODES:
            try:
                value = go_atoi(attribute.value)
            except GoSyntaxError:
                continue
            if value > 1:
                max_numa = min(value, LIMIT_NUMA_NODES)
    return TopologyManagerConfig(policy, scope, max_numa)
