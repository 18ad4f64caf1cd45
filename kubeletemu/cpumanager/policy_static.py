"""``policy_static.go``: exclusive CPUs for whole-CPU containers of Guaranteed pods.

CPU pools:

* shared = the state's default set (everything not exclusively assigned, reserved CPUs included unless
  ``strict-cpu-reservation``);
* reserved = ``reservedSystemCPUs``, or ``numReservedCPUs`` taken by topology from all CPUs;
* available for exclusive allocation = shared minus reserved; allocatable = all CPUs minus reserved.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Mapping

from kubeletemu.bitmask import MAX_BITS, BitMask, bitmask_table, subset_sums
from kubeletemu.cpumanager.cpu_assignment import (
    CPU_SORTING_STRATEGY_PACKED,
    CPU_SORTING_STRATEGY_SPREAD,
    _take_distributed,
    _take_packed,
)
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import (
    CPUAllocationError,
    CPUManagerError,
    EmptyPodSharedPoolError,
    SMTAlignmentError,
    StateError,
)
from kubeletemu.cpumanager.metrics import (
    CPUManagerGauges,
    CPUManagerMetrics,
    aligned_at_uncore_cache,
    gauges_from_state,
)
from kubeletemu.cpumanager.pod_requests import RequestCalculator
from kubeletemu.cpumanager.policy_options import StaticPolicyOptions, validate_static_policy_options
from kubeletemu.cpumanager.state.state import State
from kubeletemu.cpumanager.topology import CPUTopology
from kubeletemu.golang import go_quote
from kubeletemu.pod import Container, Pod
from kubeletemu.topologymanager import ProviderHints, Store, TopologyHint
from kubeletemu.versions.behaviours import in_effect
from kubeletemu.versions.version import MASTER

POLICY_STATIC = "static"
POD_ALLOCATION_ROLLBACK = "cpumanager.pod-allocation-rollback"
METRICS_FROM_STATE = "cpumanager.metrics-from-state"
DISTRIBUTE_BY_SOCKET = "cpumanager.distribute-align-by-socket"
SMT_CHECK_AFTER_RESTORED = "cpumanager.smt-check-after-restored"
RESOURCE_CPU = "cpu"


class StaticPolicy:
    """``staticPolicy``. ``affinity`` is the Topology Manager (its Store)."""

    def __init__(
        self,
        topology: CPUTopology,
        num_reserved_cpus: int,
        reserved_cpus: CPUSet | None,
        affinity: Store,
        cpu_policy_options: Mapping[str, str] | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        kubelet_version: str = MASTER,
    ) -> None:
        """``NewStaticPolicy``: options (their maturity at ``kubelet_version``), their validation against
        the machine, then the reserved set."""
        self.options = StaticPolicyOptions.from_map(cpu_policy_options, feature_gates, kubelet_version)
        validate_static_policy_options(self.options, topology, affinity)
        self.topology = topology
        self.affinity = affinity
        self.requests = RequestCalculator(feature_gates, kubelet_version)
        # kubernetes#141261 (after v1.36.3): a failed pod-level partition gives the pod's CPUs back.
        self.rollback_pod_allocation = in_effect(POD_ALLOCATION_ROLLBACK, kubelet_version)
        # kubernetes#141261 too: the gauges derived from the state; before, moved by deltas.
        self.metrics_from_state = in_effect(METRICS_FROM_STATE, kubelet_version)
        # v1.37.2: distribute-cpus-across-numa honours align-by-socket; a restored assignment is reused
        # before the SMT check.
        self.distribute_by_socket = self.options.align_by_socket and in_effect(
            DISTRIBUTE_BY_SOCKET, kubelet_version
        )
        self.smt_check_after_restored = in_effect(SMT_CHECK_AFTER_RESTORED, kubelet_version)
        self.cpu_group_size = topology.cpus_per_core()
        self._init_runtime()
        # The NUMA nodes the per-NUMA gauge is set for, fixed for the policy's life as in the kubelet.
        self.numa_nodes = tuple(topology.cpu_details.numa_nodes().list())

        all_cpus = topology.cpu_details.cpus()
        if reserved_cpus is not None and reserved_cpus.size() > 0:
            reserved = reserved_cpus
        else:
            # Lowest-numbered cores first, through the same dispatch as container allocations.
            try:
                reserved = self.take_by_topology(all_cpus, num_reserved_cpus)
            except CPUAllocationError:
                # The kubelet ignores this error; the size check below reports it.
                reserved = CPUSet()
        if reserved.size() != num_reserved_cpus:
            raise CPUManagerError(
                "[cpumanager] unable to reserve the required amount of CPUs "
                f"(size of {reserved} did not equal {num_reserved_cpus})"
            )
        physical: set[int] = set()
        for cpu in reserved.list():
            info = topology.cpu_details.get(cpu)
            if info is None:
                raise CPUManagerError(
                    "[cpumanager] unable to build the reserved physical CPUs from the reserved set: "
                    f"unknown CPU ID: {cpu}"
                )
            physical |= topology.cpu_details.cpus_in_cores(info.core_id).elems
        self.reserved_cpus = reserved
        # The reserved CPUs plus their core siblings: full-pcpus-only never hands those out.
        self.reserved_physical_cpus = CPUSet(physical)

    def _init_runtime(self) -> None:
        """What the policy accumulates while it runs (fresh at ``NewStaticPolicy``); everything else it
        holds is fixed once built, and :meth:`copy_for` shares it."""
        # podUID -> CPUs of its finished init containers, reusable by the next containers of that pod.
        self.cpus_to_reuse: dict[str, CPUSet] = {}
        # The kubelet's CPU manager metrics (see kubeletemu.cpumanager.metrics): counters since the policy
        # was built, gauges as updateMetricsFromState last set them (None until Start).
        self.pinning_requests = 0
        self.pinning_errors = 0
        self.aligned_physical_cpu = 0
        self.aligned_physical_cpu_failures = 0
        self.aligned_uncore_cache = 0
        self.gauges: CPUManagerGauges | None = None
        # Before kubernetes#141261: the gauges' running values, and the per-NUMA series set so far.
        self._shared_millicores = 0
        self._exclusive_cpus = 0
        self._per_numa: dict[int, int] = {}

    def copy_for(self, affinity: Store) -> StaticPolicy:
        """The policy ``NewStaticPolicy`` would build with these settings, bound to ``affinity`` (its
        options checked against that Topology Manager, as ``NewStaticPolicy`` checks them): the same
        options and reserved CPUs, nothing accumulated. For what-if copies of a running manager, without
        recomputing what is fixed."""
        validate_static_policy_options(self.options, self.topology, affinity)
        policy = copy.copy(self)
        policy.affinity = affinity
        policy._init_runtime()
        return policy

    @property
    def name(self) -> str:
        return POLICY_STATIC

    # -- start ---------------------------------------------------------------------------------------

    def start(self, state: State) -> None:
        """``Start``: validate (or initialise) the state; ``initializeMetrics`` then sets the gauges."""
        self.validate_state(state)
        self.update_metrics_from_state(state)

    # -- metrics ---------------------------------------------------------------------------------------

    def update_metrics_from_state(self, state: State) -> None:
        """The gauges as a kubelet starting on ``state`` sets them (``Start``, and the daemon's undo).

        Master: ``updateMetricsFromState``. Up to v1.36.3 (before kubernetes#141261):
        ``initializeMetrics``, which counts container assignments only (pod-level CPU sets not) and sets
        the per-NUMA gauge only for nodes holding some of them.
        """
        if self.metrics_from_state:
            self._derive_gauges(state)
            return
        assigned = self._assigned_cpus(state)
        self._shared_millicores = self.get_available_cpus(state).size() * 1000
        self._exclusive_cpus = assigned.size()
        self._per_numa = {}
        self._set_per_numa(assigned)

    def _derive_gauges(self, state: State) -> None:
        """``updateMetricsFromState`` (kubernetes#141261): the gauges recomputed from the state (called
        where the kubelet calls it: start, fresh allocations, releases). Pod-level CPU sets count only
        with ``PodLevelResourceManagers``."""
        exclusive = [
            cpus for containers in state.get_cpu_assignments().values() for cpus in containers.values()
        ]
        if self.requests.pod_level_resource_managers:
            exclusive += state.get_pod_cpu_assignments().values()
        self.gauges = gauges_from_state(
            self.topology, self.numa_nodes, self.get_available_cpus(state), exclusive
        )

    @staticmethod
    def _assigned_cpus(state: State) -> CPUSet:
        """``getTotalAssignedExclusiveCPUs`` (before kubernetes#141261): every container assignment."""
        return CPUSet().union(
            *(cpus for containers in state.get_cpu_assignments().values() for cpus in containers.values())
        )

    def _set_per_numa(self, cpus: CPUSet) -> None:
        """``updateAllocationPerNUMAMetric`` before kubernetes#141261: the NUMA nodes holding some of
        ``cpus`` are set to their count; the others keep whatever they were last set to (a node whose CPUs
        all went back keeps its last value). An unknown CPU counts under node -1 (``CPUNUMANodeID``)."""
        counts: dict[int, int] = {}
        for cpu in cpus.elems:
            info = self.topology.cpu_details.get(cpu)
            numa = -1 if info is None else info.numa_node_id
            counts[numa] = counts.get(numa, 0) + 1
        self._per_numa.update(counts)
        self.gauges = CPUManagerGauges(
            self._shared_millicores, self._exclusive_cpus, tuple(sorted(self._per_numa.items()))
        )

    def _metrics_on_allocate(self, state: State, cpus: CPUSet) -> None:
        """``updateMetricsOnAllocate``: the uncore-cache counter for a fresh allocation, then the gauges:
        derived from the state (master), else moved by the allocation's size (CPUs reused from an init
        container counted again) with the per-NUMA gauge from the container assignments."""
        if aligned_at_uncore_cache(self.topology, cpus):
            self.aligned_uncore_cache += 1
        if self.metrics_from_state:
            self._derive_gauges(state)
            return
        self._exclusive_cpus += cpus.size()
        self._shared_millicores -= cpus.size() * 1000
        self._set_per_numa(self._assigned_cpus(state))

    def _metrics_on_release(self, state: State, cpus: CPUSet) -> None:
        """``updateMetricsOnRelease``: derived from the state (master), else moved back by ``cpus`` with
        the per-NUMA gauge from the container assignments minus ``cpus``."""
        if self.metrics_from_state:
            self._derive_gauges(state)
            return
        self._exclusive_cpus -= cpus.size()
        self._shared_millicores += cpus.size() * 1000
        self._set_per_numa(self._assigned_cpus(state) - cpus)

    def metrics(self) -> CPUManagerMetrics:
        return CPUManagerMetrics(
            static=self.gauges is not None,
            pinning_requests=self.pinning_requests,
            pinning_errors=self.pinning_errors,
            aligned_physical_cpu=self.aligned_physical_cpu,
            aligned_physical_cpu_failures=self.aligned_physical_cpu_failures,
            aligned_uncore_cache=self.aligned_uncore_cache,
            gauges=self.gauges,
        )

    def validate_state(self, state: State) -> None:
        """``validateState``: initialise an empty state, or check a restored one is consistent."""
        assignments = state.get_cpu_assignments()
        default = state.get_default_cpu_set()
        all_cpus = self.topology.cpu_details.cpus()
        if self.options.strict_cpu_reservation:
            all_cpus = all_cpus - self.reserved_cpus

        if default.is_empty():
            if assignments:
                raise StateError("default cpuset cannot be empty")
            state.set_default_cpu_set(all_cpus)
            return

        if self.options.strict_cpu_reservation:
            overlap = self.reserved_cpus & default
            if not overlap.is_empty():
                raise StateError(
                    f"some of strictly reserved cpus: {go_quote(str(overlap))} are present in defaultCpuSet: "
                    f"{go_quote(str(default))}"
                )
        elif (self.reserved_cpus & default) != self.reserved_cpus:
            raise StateError(
                f"not all reserved cpus: {go_quote(str(self.reserved_cpus))} are present in defaultCpuSet: "
                f"{go_quote(str(default))}"
            )

        for pod in sorted(assignments):
            for container in sorted(assignments[pod]):
                cpus = assignments[pod][container]
                if not (default & cpus).is_empty():
                    raise StateError(
                        f"pod: {pod}, container: {container} cpuset: {go_quote(str(cpus))} "
                        f"overlaps with default cpuset {go_quote(str(default))}"
                    )

        known = default.union(*(cpus for containers in assignments.values() for cpus in containers.values()))
        if self.requests.pod_level_resource_managers:
            known = known.union(*state.get_pod_cpu_assignments().values())
        if known != all_cpus:
            raise StateError(
                f"current set of available CPUs {go_quote(str(all_cpus))} doesn't match with CPUs in state "
                f"{go_quote(str(known))}"
            )

    # -- pools ---------------------------------------------------------------------------------------

    def get_allocatable_cpus(self, state: State) -> CPUSet:
        return self.topology.cpu_details.cpus() - self.reserved_cpus

    def get_available_cpus(self, state: State) -> CPUSet:
        """The shared pool minus the reserved CPUs: what exclusive allocations take from."""
        return state.get_default_cpu_set() - self.reserved_cpus

    def get_available_physical_cpus(self, state: State) -> CPUSet:
        return state.get_default_cpu_set() - self.reserved_physical_cpus

    # -- takeByTopology --------------------------------------------------------------------------------

    def take_by_topology(self, available: CPUSet, num_cpus: int) -> CPUSet:
        """``takeByTopology``: the NUMA-distributed or NUMA-packed allocator, as the options say."""
        strategy = (
            CPU_SORTING_STRATEGY_SPREAD
            if self.options.distribute_cpus_across_cores
            else CPU_SORTING_STRATEGY_PACKED
        )
        cpus = set(available.elems)
        if self.options.distribute_cpus_across_numa:
            group = self.cpu_group_size if self.options.full_physical_cpus_only else 1
            if group < 1:
                raise CPUManagerError(
                    "cannot distribute CPUs in core-sized groups: the topology declares no cores"
                )
            return CPUSet(
                _take_distributed(self.topology, cpus, num_cpus, group, strategy, self.distribute_by_socket)
            )
        return CPUSet(
            _take_packed(self.topology, cpus, num_cpus, strategy, self.options.prefer_align_by_uncore_cache)
        )

    # -- allocation ------------------------------------------------------------------------------------

    def _update_cpus_to_reuse(self, pod: Pod, container: Container, cpus: CPUSet) -> None:
        """``updateCPUsToReuse``: regular init containers lend their CPUs to later containers of the pod;
        app containers and sidecars consume them. Other pods' entries are dropped."""
        for uid in [uid for uid in self.cpus_to_reuse if uid != pod.uid]:
            del self.cpus_to_reuse[uid]
        reusable = self.cpus_to_reuse.setdefault(pod.uid, CPUSet())
        for init in pod.init_containers:
            if init.name == container.name:
                if init.is_restartable_init:
                    break
                self.cpus_to_reuse[pod.uid] = reusable | cpus
                return
        self.cpus_to_reuse[pod.uid] = reusable - cpus

    def _enforce_smt_alignment(self, state: State, num_cpus: int) -> None:
        if not self.options.full_physical_cpus_only:
            return
        if self.cpu_group_size == 0 or num_cpus % self.cpu_group_size != 0:
            raise SMTAlignmentError(num_cpus, self.cpu_group_size)
        available = self.get_available_physical_cpus(state).size()
        # Core siblings of reserved CPUs count as taken, so the allocator never has to split a core.
        if num_cpus > available:
            raise SMTAlignmentError(num_cpus, self.cpu_group_size, available, caused_by_physical_cpus=True)

    def allocate(self, state: State, pod: Pod, container: Container) -> None:
        """``Allocate``: reuse a restored assignment, else allocate aligned to the merged hint.

        Counted as the kubelet counts: a pinning request once the container qualifies (after the
        pod-level-resources skip), a pinning error when it fails; with ``full-pcpus-only`` a
        ``physical_cpu`` alignment success or failure, whichever it is.
        """
        num_cpus = self.requests.guaranteed_cpus(pod, container)
        if num_cpus == 0:
            return
        if self.requests.pod_level_unsupported(pod):
            return
        self.pinning_requests += 1
        try:
            self._allocate(state, pod, container, num_cpus)
        except Exception:
            self.pinning_errors += 1
            if self.options.full_physical_cpus_only:
                self.aligned_physical_cpu_failures += 1
            raise
        if self.options.full_physical_cpus_only:
            self.aligned_physical_cpu += 1

    def _allocate(self, state: State, pod: Pod, container: Container, num_cpus: int) -> None:
        if not self.smt_check_after_restored:
            self._enforce_smt_alignment(state, num_cpus)
        existing = state.get_cpu_set(pod.uid, container.name)
        if existing is not None:
            self._update_cpus_to_reuse(pod, container, existing)
            return
        if self.smt_check_after_restored:
            self._enforce_smt_alignment(state, num_cpus)
        hint = self.affinity.get_affinity(pod.uid, container.name)
        cpus = self.allocate_cpus(state, num_cpus, hint.affinity, self.cpus_to_reuse.get(pod.uid, CPUSet()))
        state.set_cpu_set(pod.uid, container.name, cpus)
        self._update_cpus_to_reuse(pod, container, cpus)
        self._metrics_on_allocate(state, cpus)

    def get_aligned_cpus(self, affinity: BitMask, allocatable: CPUSet) -> CPUSet:
        """The allocatable CPUs of the hinted NUMA nodes (of their whole sockets with align-by-socket)."""
        details = self.topology.cpu_details
        bits = affinity.bits()
        if self.options.align_by_socket:
            return allocatable & details.cpus_in_sockets(*details.sockets_in_numa_nodes(*bits).list())
        return allocatable & details.cpus_in_numa_nodes(*bits)

    def allocate_cpus(
        self, state: State, num_cpus: int, affinity: BitMask | None, reusable: CPUSet
    ) -> CPUSet:
        """``allocateCPUs``: aligned CPUs first, the rest from anywhere; removed from the shared pool."""
        allocatable = self.get_available_cpus(state) | reusable
        result = CPUSet()
        if affinity is not None:
            aligned = self.get_aligned_cpus(affinity, allocatable)
            result = self.take_by_topology(aligned, min(num_cpus, aligned.size()))
        result = result | self.take_by_topology(allocatable - result, num_cpus - result.size())
        state.set_default_cpu_set(state.get_default_cpu_set() - result)
        return result

    def remove_container(self, state: State, pod_uid: str, container_name: str) -> None:
        """``RemoveContainer``: back to the shared pool, except CPUs still held by sibling containers.

        A pod-level bubble is released whole when its last container goes. The gauges follow each release
        (a pod-level container that is not the last releases nothing, and the kubelet leaves them).
        """
        released = state.get_cpu_set(pod_uid, container_name)
        if released is None:
            return
        state.delete(pod_uid, container_name)
        if self.requests.pod_level_resource_managers:
            pod_cpus = state.get_pod_cpu_set(pod_uid)
            if pod_cpus is not None:
                if not state.get_cpu_assignments().get(pod_uid):
                    state.set_default_cpu_set(state.get_default_cpu_set() | pod_cpus)
                    state.delete_pod(pod_uid)
                    self._metrics_on_release(state, pod_cpus)
                return
        in_use = CPUSet().union(*state.get_cpu_assignments().get(pod_uid, {}).values())
        state.set_default_cpu_set(state.get_default_cpu_set() | (released - in_use))
        self._metrics_on_release(state, released - in_use)

    def validate_pod_scope_resources(self, pod: Pod) -> str | None:
        """``validatePodScopeResources``: the reason a pod-level budget leaves a needed pool empty.

        A regular init container with exclusive CPUs is checked against the budget minus the sidecars
        started before it only after v1.36.3 (``cpumemorymanager.pod-level-init-pool-check``); v1.36.3
        (openshift/microshift release-4.23 @ ab25d11482) lets it through, and carving it out then fails.
        """
        total = self.requests.pod_guaranteed_cpus(pod)
        shared_long_running = False
        long_running_exclusive = 0
        for container in pod.init_containers:
            cpus = self.requests.guaranteed_cpus(pod, container)
            if not container.is_restartable_init:
                if cpus > 0:
                    pool = total - long_running_exclusive
                    if self.requests.init_pool_check and cpus > pool:
                        return (
                            f"pod rejected, largest exclusive init container requests {cpus} cpus, but only "
                            f"{pool} available"
                        )
                elif long_running_exclusive >= total:
                    return "pod rejected, pod has shared init containers but no cpus available for them"
                continue
            if cpus == 0:
                shared_long_running = True
                continue
            long_running_exclusive += cpus
        for container in pod.containers:
            cpus = self.requests.guaranteed_cpus(pod, container)
            if cpus == 0:
                shared_long_running = True
                continue
            long_running_exclusive += cpus
        if shared_long_running and long_running_exclusive >= total:
            return (
                "pod rejected, sum of exclusive container cpu requests equals pod budget, "
                "leaving no cpus for shared containers"
            )
        return None

    def allocate_pod(self, state: State, pod: Pod) -> None:
        """``AllocatePod``: one CPU bubble for the pod, carved into exclusive and shared slices.

        Counted as the kubelet counts: a pinning request per exclusive container carved out, one pinning
        error if the call fails (its validation included); the bubble's uncore-cache alignment.
        """
        total = self.requests.pod_guaranteed_cpus(pod)
        if total == 0:
            return
        try:
            self._allocate_pod(state, pod, total)
        except Exception:
            self.pinning_errors += 1
            raise
        if self.metrics_from_state:
            self._derive_gauges(state)

    def _allocate_pod(self, state: State, pod: Pod, total: int) -> None:
        problem = self.validate_pod_scope_resources(pod)
        if problem is not None:
            raise EmptyPodSharedPoolError(problem)
        self._enforce_smt_alignment(state, total)
        containers = [*pod.init_containers, *pod.containers]
        if not containers:
            raise CPUManagerError(f"pod {pod.namespace}/{pod.name} has no containers")
        # The pod's hint is read under its first container's name (the scope stored it for each).
        hint = self.affinity.get_affinity(pod.uid, containers[0].name)
        bubble = self.allocate_cpus(state, total, hint.affinity, CPUSet())
        # Before the pod's set is stored: up to v1.36.3 the per-NUMA gauge misses the bubble.
        self._metrics_on_allocate(state, bubble)
        state.set_pod_cpu_set(pod.uid, bubble)
        try:
            self._partition_bubble(state, pod, containers, bubble)
        except Exception:
            if self.rollback_pod_allocation:
                # From here the pod owned the whole bubble: a failed partition gives every CPU back to
                # the shared pool, or they would leak out of it for good (kubernetes#141261's rollback).
                state.set_default_cpu_set(state.get_default_cpu_set() | bubble)
                state.delete_pod(pod.uid)
                self._metrics_on_release(state, bubble)
            # Up to v1.36.3 the bubble stays taken, held by the pod's entry alone (and by the gauges).
            raise

    def _partition_bubble(self, state: State, pod: Pod, containers: list[Container], bubble: CPUSet) -> None:
        """Carve the bubble: exclusive slices for Guaranteed-CPU containers, the rest shared."""
        exclusive: dict[str, CPUSet] = {}
        sidecar_cpus = CPUSet()
        for init in pod.init_containers:
            num = self.requests.guaranteed_cpus(pod, init)
            if num > 0:
                self.pinning_requests += 1
                cpus = self.take_by_topology(bubble - sidecar_cpus, num)
                exclusive[init.name] = cpus
                if init.is_restartable_init:
                    sidecar_cpus = sidecar_cpus | cpus
            elif not init.is_restartable_init:
                # A shared regular init container runs on the bubble minus the sidecars so far.
                exclusive[init.name] = bubble - sidecar_cpus
        shared = bubble - sidecar_cpus
        for app in pod.containers:
            num = self.requests.guaranteed_cpus(pod, app)
            if num > 0:
                self.pinning_requests += 1
                cpus = self.take_by_topology(shared, num)
                exclusive[app.name] = cpus
                shared = shared - cpus
        for container in containers:
            state.set_cpu_set(pod.uid, container.name, exclusive.get(container.name, shared))

    # -- hints ---------------------------------------------------------------------------------------

    def get_topology_hints(self, state: State, pod: Pod, container: Container) -> ProviderHints:
        """``GetTopologyHints``: nil unless the container gets exclusive CPUs."""
        requested = self.requests.guaranteed_cpus(pod, container)
        if requested == 0:
            return None
        if self.requests.pod_level_unsupported(pod):
            return None
        allocated = state.get_cpu_set(pod.uid, container.name)
        if allocated is not None:
            # A kubelet restart: hints from what the container already holds, if its request still fits.
            if allocated.size() != requested:
                return {RESOURCE_CPU: []}
            return {RESOURCE_CPU: self.generate_cpu_topology_hints(allocated, CPUSet(), requested)}
        available = self.get_available_cpus(state)
        reusable = self.cpus_to_reuse.get(pod.uid, CPUSet())
        return {RESOURCE_CPU: self.generate_cpu_topology_hints(available, reusable, requested)}

    def get_pod_topology_hints(self, state: State, pod: Pod) -> ProviderHints:
        """``GetPodTopologyHints``: hints for the whole pod's CPU need."""
        requested = self.requests.pod_guaranteed_cpus(pod)
        if requested == 0:
            return None
        if self.requests.pod_level_unsupported(pod):
            return None
        if self.requests.pod_level_managed(pod) and self.validate_pod_scope_resources(pod) is not None:
            return {RESOURCE_CPU: []}
        assigned = CPUSet()
        for container in [*pod.init_containers, *pod.containers]:
            by_container = self.requests.guaranteed_cpus(pod, container)
            allocated = state.get_cpu_set(pod.uid, container.name)
            if allocated is not None:
                if allocated.size() != by_container:
                    return {RESOURCE_CPU: []}
                assigned = assigned | allocated
        if assigned.size() == requested:
            return {RESOURCE_CPU: self.generate_cpu_topology_hints(assigned, CPUSet(), requested)}
        available = self.get_available_cpus(state)
        reusable = self.cpus_to_reuse.get(pod.uid, CPUSet()) | assigned
        return {RESOURCE_CPU: self.generate_cpu_topology_hints(available, reusable, requested)}

    def generate_cpu_topology_hints(
        self, available: CPUSet, reusable: CPUSet, request: int
    ) -> list[TopologyHint]:
        """``generateCPUTopologyHints``: every NUMA combination (IterateBitMasks order) that can hold the
        request; preferred are those as narrow as the narrowest combination whose *capacity* fits it.

        Reusable CPUs must all lie inside a mask and count toward it (on top of the available CPUs there).

        The answer is a function of the topology, the align-by-socket option and the counts below; it is
        kept per topology object under those counts (:data:`_HINTS`), since a fleet asks the same
        question of many nodes and many clones of one node.
        """
        free = _count_by_numa(self.topology, available.elems)
        reusable_numas = {_numa_of(self.topology, cpu) for cpu in reusable.elems}
        num_reusable = reusable.size()
        key = (
            self.options.align_by_socket,
            tuple(sorted(free.items())),
            tuple(sorted(reusable_numas)),
            num_reusable,
            request,
        )
        kept = _HINTS.get(self.topology)
        if kept is None:
            kept = _HINTS[self.topology] = {}
        hints = kept.get(key)
        if hints is None:
            if len(kept) >= _HINTS_PER_TOPOLOGY:
                kept.clear()
            hints = kept[key] = tuple(self._cpu_topology_hints(free, reusable_numas, num_reusable, request))
        return list(hints)

    def _cpu_topology_hints(
        self, free: Mapping[int, int], reusable_numas: set[int], num_reusable: int, request: int
    ) -> list[TopologyHint]:
        details = self.topology.cpu_details
        numa_ids = details.numa_nodes().list()
        capacity = {numa: details.cpus_in_numa_nodes(numa).size() for numa in numa_ids}

        min_affinity_size = len(numa_ids)
        fitting: list[tuple[BitMask, int]] = []  # the masks that can hold the request, with their sizes
        # The masks and their per-mask sums built once (bitmask_table, subset_sums): the same tests as
        # summing each mask's bits, in the same IterateBitMasks order.
        order = tuple(numa_ids)
        capacities = subset_sums(order, capacity)
        frees = subset_sums(order, free)
        # A reusable CPU's NUMA node outside 0..63 is never set in a mask: every mask is then skipped.
        reusable_outside = any(not 0 <= numa < MAX_BITS for numa in reusable_numas)
        reusable_value = sum(1 << numa for numa in reusable_numas if 0 <= numa < MAX_BITS)
        for index, (mask, bits) in enumerate(bitmask_table(order)):
            if capacities[index] >= request:
                min_affinity_size = min(min_affinity_size, len(bits))
            if reusable_outside or reusable_value & ~mask.value:
                continue
            if num_reusable + frees[index] < request:
                continue
            fitting.append((mask, len(bits)))

        align = self.options.align_by_socket
        return [
            TopologyHint(
                mask,
                count == min_affinity_size
                or (align and self.is_hint_socket_aligned(mask, min_affinity_size)),
            )
            for mask, count in fitting
        ]

    def is_hint_socket_aligned(self, affinity: BitMask, min_affinity_size: int) -> bool:
        """``isHintSocketAligned``: the mask spans as few sockets as the narrowest fit needs."""
        topo = self.topology
        if topo.num_sockets == 0:
            # The kubelet divides by zero here; a machine always reports at least one socket.
            return False
        per_socket = topo.num_numa_nodes // topo.num_sockets
        if per_socket == 0:
            return False
        min_sockets = (min_affinity_size + per_socket - 1) // per_socket
        return topo.cpu_details.sockets_in_numa_nodes(*affinity.bits()).size() == min_sockets


# generateCPUTopologyHints' answers per topology object (gone with it), by the counts key; bounded.
_HINTS: weakref.WeakKeyDictionary[CPUTopology, dict[tuple[object, ...], tuple[TopologyHint, ...]]] = (
    weakref.WeakKeyDictionary()
)
_HINTS_PER_TOPOLOGY = 65536


def _numa_of(topology: CPUTopology, cpu: int) -> int:
    # An unknown CPU reads as the zero CPUInfo in the kubelet's map: NUMA node 0.
    info = topology.cpu_details.get(cpu)
    return 0 if info is None else info.numa_node_id


def _count_by_numa(topology: CPUTopology, cpus: frozenset[int]) -> dict[int, int]:
    by_numa = topology.cpu_details._index.cpus_by_numa
    counts = {numa: len(cpus & members) for numa, members in by_numa.items()}
    # CPUs outside the topology read as the zero CPUInfo: NUMA node 0 (see _numa_of).
    unknown = len(cpus) - sum(counts.values())
    if unknown:
        counts[0] = counts.get(0, 0) + unknown
    return counts
