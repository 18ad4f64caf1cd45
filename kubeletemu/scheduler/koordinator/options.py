"""What NodeNUMAResource keeps per node from its NodeResourceTopology, as koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` builds it (``nodenumaresource/topology_options.go``:
``NewTopologyOptions``, ``extractNUMANodeResources``, ``convertToNUMATopologyPolicy``; ``util.go``:
``getNUMATopologyPolicy``, ``mergeTopologyPolicy``).

- NUMA nodes are the zones of type ``Node`` named ``…node-<int>`` (split on ``node-`` into exactly two
  parts, the id read by ``strconv.Atoi``), each with its zone *allocatable* (``available`` is not read),
  sorted by id.
- Reserved CPUs: the CPUs of koordlet's ``pod-cpu-allocs`` entries managed by the kubelet, the kubelet's
  reserved CPUs, the node reservation's ``reservedCPUs`` and the exclusive system-QoS cpuset. Each NUMA
  node's cpu loses 1000m per reserved CPU on it (it may go negative; only a zero or absent cpu is skipped).
- The kubelet's policy: the first of the legacy ``topologyPolicies`` that is ``BestEffort``,
  ``Restricted`` or ``SingleNUMANodePodLevel``; anything else (attributes are not read) is none.

Decode errors are logged and leave the value empty, except a cpu-topology annotation that fails to decode:
``convertCPUTopology`` then dereferences the nil result and the NRT event handler panics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CPUSetError
from kubeletemu.golang import GoSyntaxError, go_atoi
from kubeletemu.scheduler.framework import PluginPanic
from kubeletemu.scheduler.koordinator import extension as ext
from kubeletemu.scheduler.koordinator.cpu_topology import CPUTopology, build_cpu_topology
from kubeletemu.scheduler.koordinator.merge import (
    POLICY_BEST_EFFORT,
    POLICY_NONE,
    POLICY_RESTRICTED,
    POLICY_SINGLE_NUMA_NODE,
)
from kubeletemu.scheduler.objects import NodeResourceTopology

NIL_POINTER = "invalid memory address or nil pointer dereference"
# nrtv1alpha1.TopologyManagerPolicy values that name a Koordinator policy.
_LEGACY_POLICIES = {
    "BestEffort": POLICY_BEST_EFFORT,
    "Restricted": POLICY_RESTRICTED,
    "SingleNUMANodePodLevel": POLICY_SINGLE_NUMA_NODE,
}

Resources = dict[str, Fraction]


@dataclass(frozen=True)
class NUMANodeResource:
    node: int
    resources: Mapping[str, Fraction] = field(default_factory=dict)


@dataclass(frozen=True)
class TopologyOptions:
    """``TopologyOptions``. The zero value (no NRT seen) has ``cpu_topology`` None and ``max_ref_count`` 0;
    one built from an NRT has a (maybe invalid) topology and ``max_ref_count`` 1."""

    cpu_topology: CPUTopology | None = None
    reserved_cpus: CPUSet = field(default_factory=CPUSet)
    max_ref_count: int = 0
    kubelet_policy: ext.KubeletCPUManagerPolicy | None = None
    numa_topology_policy: str = POLICY_NONE
    numa_node_resources: tuple[NUMANodeResource, ...] = ()
    amplification_ratios: Mapping[str, float] | None = None

    def numa_nodes(self) -> list[int]:
        return [r.node for r in self.numa_node_resources]


def _cpuset(text: str) -> CPUSet:
    try:
        return CPUSet.parse(text)
    except CPUSetError:
        return CPUSet()  # logged by the shipped code


def numa_node_resources(nrt: NodeResourceTopology) -> list[NUMANodeResource]:
    """``extractNUMANodeResources``."""
    out = []
    for zone in nrt.zones:
        if zone.type != "Node":
            continue
        parts = zone.name.split("node-")
        if len(parts) != 2:
            continue
        try:
            node = go_atoi(parts[1])
        except GoSyntaxError:
            continue
        out.append(NUMANodeResource(node, {r.name: r.allocatable.amount for r in zone.resources}))
    out.sort(key=lambda r: r.node)
    return out


def kubelet_numa_topology_policy(nrt: NodeResourceTopology) -> str:
    """``convertToNUMATopologyPolicy``."""
    for policy in nrt.topology_policies:
        if policy in _LEGACY_POLICIES:
            return _LEGACY_POLICIES[policy]
    return POLICY_NONE


def topology_options(nrt: NodeResourceTopology) -> TopologyOptions:
    """``NewTopologyOptions`` for one NRT (``max_ref_count`` 1, as the event handler leaves it)."""
    annotations = nrt.annotations
    try:
        allocs = ext.pod_cpu_allocs(annotations)
    except ext.AnnotationError:
        allocs = ()
    try:
        kubelet: ext.KubeletCPUManagerPolicy | None = ext.kubelet_cpu_manager_policy(annotations)
    except ext.AnnotationError:
        kubelet = None
    kubelet_reserved = _cpuset(kubelet.reserved_cpus) if kubelet is not None else CPUSet()
    try:
        report = ext.cpu_topology_report(annotations)
    except ext.AnnotationError:
        raise PluginPanic(NIL_POINTER, "nodenumaresource.convertCPUTopology") from None
    topology = build_cpu_topology((c.socket, c.node, c.core, c.id) for c in report)

    reserved = CPUSet()
    for alloc in allocs:
        if not alloc.managed_by_kubelet or alloc.uid == "" or alloc.cpuset == "":
            continue
        try:
            reserved = reserved.union(CPUSet.parse(alloc.cpuset))
        except CPUSetError:
            continue
    reserved = reserved.union(kubelet_reserved).union(_cpuset(ext.reserved_cpus(annotations)))
    system = ext.system_qos_exclusive_cpus(annotations)
    if system is not None:
        reserved = reserved.union(system)

    numa = numa_node_resources(nrt)
    for i, entry in enumerate(numa):
        cpu = entry.resources.get("cpu", Fraction(0))
        if cpu == 0:
            continue
        taken = 0 if reserved.is_empty() else topology.cpus_in_numa_nodes(entry.node, only=reserved).size()
        resources = dict(entry.resources)
        resources["cpu"] = Fraction(_milli(cpu) - taken * 1000, 1000)
        numa[i] = replace(entry, resources=resources)

    try:
        ratios = ext.amplification_ratios(annotations)
    except ext.AnnotationError:
        ratios = None
    return TopologyOptions(
        cpu_topology=topology,
        reserved_cpus=reserved,
        max_ref_count=1,
        kubelet_policy=kubelet,
        numa_topology_policy=kubelet_numa_topology_policy(nrt),
        numa_node_resources=tuple(numa),
        amplification_ratios=ratios,
    )


def _milli(amount: Fraction) -> int:
    return -((-amount.numerator * 1000) // amount.denominator)


def numa_topology_policy(node_labels: Mapping[str, str], kubelet_policy: str) -> str:
    """``getNUMATopologyPolicy``: the node label whenever it is non-empty, else the kubelet's policy."""
    label = ext.node_numa_topology_policy(node_labels)
    return label if label != POLICY_NONE else kubelet_policy


class PolicyConflict(Exception):
    """``mergeTopologyPolicy``'s error: the node and the pod name different non-empty policies."""


def merge_topology_policy(node_policy: str, pod_policy: str) -> str:
    """``mergeTopologyPolicy``: a non-empty pod policy must equal a non-empty node policy and wins."""
    if node_policy != "" and pod_policy != "" and pod_policy != node_policy:
        raise PolicyConflict
    return pod_policy if pod_policy != "" else node_policy
