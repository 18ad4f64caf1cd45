"""Koordinator's own accounting of what pods already hold on a node, as koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` keeps it (``nodenumaresource/node_allocation.go``,
``pod_eventhandler.go``, ``resource_manager.go``: ``Update``, ``GetAvailableCPUs``).

The scheduler fills it from the pod informer: every bound, non-terminated pod whose
``scheduling.koordinator.sh/resource-status`` annotation names a cpuset or NUMA resources (one that fails to
decode is skipped). ``resourceManager.Update`` drops the pod when the node's CPU topology is not valid, so on
a node whose NRT lacks koordlet's cpu-topology annotation nothing is accounted at all — pods' NUMA
resources included. Here that state is rebuilt from the pods of :class:`~kubeletemu.scheduler.framework.
NodeInfo` against the node's current options (the steady state once the NRT has arrived).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CPUSetError
from kubeletemu.pod import Pod
from kubeletemu.scheduler.koordinator import extension as ext
from kubeletemu.scheduler.koordinator.cpu_topology import CPUInfo, CPUTopology
from kubeletemu.scheduler.koordinator.merge import NUMA_IDLE, NUMA_SHARED, NUMA_SINGLE
from kubeletemu.scheduler.koordinator.options import NUMANodeResource, TopologyOptions
from kubeletemu.scheduler.pod_phase import is_pod_terminated

Resources = dict[str, Fraction]


@dataclass(frozen=True)
class PodAllocation:
    uid: str
    namespace: str = ""
    name: str = ""
    cpuset: CPUSet = field(default_factory=CPUSet)
    exclusive_policy: str = ""
    numa_node_resources: tuple[NUMANodeResource, ...] = ()


def add_resources(into: Resources, other: Mapping[str, Fraction]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, Fraction(0)) + amount


def subtract_non_negative(a: Mapping[str, Fraction], b: Mapping[str, Fraction] | None) -> Resources:
    """``quotav1.SubtractWithNonNegativeResult``: over ``a``'s keys, floored at zero."""
    b = b or {}
    return {name: max(Fraction(0), amount - b.get(name, Fraction(0))) for name, amount in a.items()}


@dataclass
class NodeAllocation:
    """``NodeAllocation``: per CPU a reference count and the exclusive policy of its last holder, per NUMA
    node the sum of the pods' NUMA resources and which pods span one or several NUMA nodes."""

    allocated_pods: dict[str, PodAllocation] = field(default_factory=dict)
    allocated_cpus: dict[int, CPUInfo] = field(default_factory=dict)
    allocated_resources: dict[int, Resources] = field(default_factory=dict)
    shared_node: dict[int, set[str]] = field(default_factory=dict)
    single_numa_node: dict[int, set[str]] = field(default_factory=dict)

    def add(self, allocation: PodAllocation, topology: CPUTopology) -> None:
        """``addPodAllocation``: a CPU the topology does not know counts as a zero ``CPUInfo`` (NUMA 0)."""
        if allocation.uid in self.allocated_pods:
            return
        self.allocated_pods[allocation.uid] = allocation
        used: set[int] = set()
        for cpu in allocation.cpuset:
            info = self.allocated_cpus.get(cpu) or topology.details.get(cpu) or CPUInfo(0, 0, 0, 0)
            info = replace(info, exclusive_policy=allocation.exclusive_policy, ref_count=info.ref_count + 1)
            self.allocated_cpus[cpu] = info
            used.add(info.node)
        if len(used) > 1:
            for node in used:
                self.shared_node.setdefault(node, set()).add(allocation.uid)
        elif len(used) == 1:
            self.single_numa_node.setdefault(next(iter(used)), set()).add(allocation.uid)
        for numa in allocation.numa_node_resources:
            add_resources(self.allocated_resources.setdefault(numa.node, {}), numa.resources)

    def release(self, uid: str) -> None:
        """``release``: drop the pod's CPU references and NUMA resources."""
        allocation = self.allocated_pods.pop(uid, None)
        if allocation is None:
            return
        used: set[int] = set()
        for cpu in allocation.cpuset:
            info = self.allocated_cpus.get(cpu)
            if info is None:
                continue
            info = replace(info, ref_count=info.ref_count - 1)
            if info.ref_count == 0:
                del self.allocated_cpus[cpu]
            else:
                self.allocated_cpus[cpu] = info
            used.add(info.node)
        for node in used:
            self.shared_node.get(node, set()).discard(uid)
            self.single_numa_node.get(node, set()).discard(uid)
        for numa in allocation.numa_node_resources:
            held = self.allocated_resources.get(numa.node)
            if held is not None:
                self.allocated_resources[numa.node] = subtract_non_negative(held, numa.resources)

    def update(self, allocation: PodAllocation, topology: CPUTopology) -> None:
        """``update``: a pod seen again replaces its earlier allocation."""
        self.release(allocation.uid)
        self.add(allocation, topology)

    def numa_node_status(self, node: int) -> str:
        """``NUMANodeSharedStatus``."""
        single = bool(self.single_numa_node.get(node))
        shared = bool(self.shared_node.get(node))
        if not single and not shared:
            return NUMA_IDLE
        if single and not shared:
            return NUMA_SINGLE
        return NUMA_SHARED

    def all_numa_node_status(self, count: int) -> list[str]:
        """``GetAllNUMANodeStatus(len(numaNodes))``: indexed 0..count−1, whatever the NUMA ids are."""
        return [self.numa_node_status(i) for i in range(count)]

    def available_cpus(
        self, topology: CPUTopology, max_ref_count: int, reserved: CPUSet, *preferred: CPUSet
    ) -> tuple[CPUSet, dict[int, CPUInfo]]:
        """``getAvailableCPUs``: the topology's CPUs minus those at ``max_ref_count`` references (after
        giving back one reference per ``preferred`` set) and the reserved ones."""
        info = dict(self.allocated_cpus)
        for cpus in preferred:
            for cpu in cpus:
                if cpu in info:
                    held = replace(info[cpu], ref_count=info[cpu].ref_count - 1)
                    if held.ref_count == 0:
                        del info[cpu]
                    else:
                        info[cpu] = held
        allocated = CPUSet(c for c, i in info.items() if i.ref_count >= max_ref_count)
        return topology.cpus().difference(allocated).difference(reserved), info

    def available_numa_resources(
        self, options: TopologyOptions, reusable: Mapping[int, Mapping[str, Fraction]] | None = None
    ) -> tuple[dict[int, Resources], dict[int, Resources]]:
        """``getAvailableNUMANodeResources``: (available, allocated) per NUMA node; with a cpu amplification
        ratio > 1 the cpuset CPUs held on a node count amplified."""
        reusable = reusable or {}
        ratio = (options.amplification_ratios or {}).get("cpu", 0.0)
        available: dict[int, Resources] = {}
        allocated_by_node: dict[int, Resources] = {}
        for numa in options.numa_node_resources:
            allocated: Resources | None = None
            held = self.allocated_resources.get(numa.node)
            if held is not None:
                allocated = dict(held)
                if ratio > 1:
                    cpus = sum(1 for i in self.allocated_cpus.values() if i.node == numa.node) * 1000
                    milli = _milli(allocated.get("cpu", Fraction(0)))
                    allocated["cpu"] = Fraction(milli - cpus + ext.amplify(cpus, ratio), 1000)
                allocated = subtract_non_negative(allocated, reusable.get(numa.node))
                allocated_by_node[numa.node] = allocated
            available[numa.node] = subtract_non_negative(numa.resources, allocated)
        return available, allocated_by_node


def _milli(amount: Fraction) -> int:
    return -((-amount.numerator * 1000) // amount.denominator)


def pod_allocation(pod: Pod) -> PodAllocation | None:
    """What ``podEventHandler.updatePod`` records for a bound pod, None when it records nothing."""
    if is_pod_terminated(pod):
        return None
    try:
        status = ext.resource_status(pod.annotations)
        spec = ext.resource_spec(pod.annotations)
        cpus = CPUSet.parse(status.cpuset)
    except (ext.AnnotationError, CPUSetError):
        return None
    numa = status.numa_node_resources or ()
    if not numa and cpus.is_empty():
        return None
    return PodAllocation(
        uid=pod.uid,
        namespace=pod.namespace,
        name=pod.name,
        cpuset=cpus,
        exclusive_policy=spec.preferred_cpu_exclusive_policy,
        numa_node_resources=tuple(
            NUMANodeResource(n.node, {k: q.amount for k, q in n.resources.items()}) for n in numa
        ),
    )


def node_allocation(pods: Iterable[Pod], options: TopologyOptions) -> NodeAllocation:
    """The node's ``NodeAllocation`` after the informer delivered ``pods`` (in order)."""
    allocation = NodeAllocation()
    topology = options.cpu_topology
    if topology is None or not topology.is_valid():
        return allocation
    for pod in pods:
        if not pod.node_name:
            continue
        recorded = pod_allocation(pod)
        if recorded is not None:
            allocation.update(recorded, topology)
    return allocation


def allocations_from(entries: Sequence[PodAllocation], topology: CPUTopology | None) -> NodeAllocation:
    """A ``NodeAllocation`` from explicit allocations (``resourceManager.Update`` calls in the tests)."""
    allocation = NodeAllocation()
    if topology is None or not topology.is_valid():
        return allocation
    for entry in entries:
        allocation.update(entry, topology)
    return allocation
