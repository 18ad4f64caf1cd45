"""NodeNUMAResource's PreFilter, Filter, Score and Reserve for one pod on one node, as koordinator-sh/
koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` ships them (``nodenumaresource/plugin.go``,
``topology_hint.go``, ``scoring.go``, ``util.go``; ``frameworkext/topologymanager/manager.go``: ``Admit``).

Reservations (a pod's matched and nominated reservations, as a
:class:`~kubeletemu.scheduler.koordinator.reservation.NodeRestoreState`) and a scheduling hint's designated
allocation take the paths of :mod:`~kubeletemu.scheduler.koordinator.reservation`. A missing preFilterState
(``state`` None) is the framework's ``not found`` Error. Not modelled: pre-allocation and preemption state.
The Topology Manager's other hint providers (DeviceShare, see ``hint_provider.py``) come in as
``providers``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction

from kubeletemu.lifecycle.resources import Resource, pod_request_list
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import (
    ERROR,
    SUCCESS,
    UNSCHEDULABLE,
    UNSCHEDULABLE_AND_UNRESOLVABLE,
    PluginPanic,
    Status,
    memo,
)
from kubeletemu.scheduler.koordinator import extension as ext
from kubeletemu.scheduler.koordinator import reservation as rsv
from kubeletemu.scheduler.koordinator.args import NodeNUMAResourceArgs
from kubeletemu.scheduler.koordinator.hint_provider import NUMAHintProvider
from kubeletemu.scheduler.koordinator.merge import (
    EXCLUSIVE_REQUIRED,
    POLICIES,
    POLICY_BEST_EFFORT,
    POLICY_NONE,
    NUMATopologyHint,
    ProviderHints,
    check_exclusive_policy,
)
from kubeletemu.scheduler.koordinator.options import (
    NIL_POINTER,
    NUMANodeResource,
    PolicyConflict,
    TopologyOptions,
    merge_topology_policy,
    numa_topology_policy,
)
from kubeletemu.scheduler.koordinator.resources import (
    AllocateRefused,
    NodeState,
    PodAllocation,
    ResourceError,
    ResourceOptions,
    available_cpus,
    topology_hints,
)

ERR_NOT_MATCH_NUMA_TOPOLOGY = "node(s) NUMA Topology policy not match"
ERR_INVALID_REQUESTED_CPUS = "the requested CPUs must be integer"
ERR_INVALID_CPU_TOPOLOGY = "node(s) invalid CPU Topology"
ERR_SMT_ALIGNMENT = "node(s) requested cpus not multiple cpus per core"
ERR_CPU_BIND_POLICY_CONFLICT = "node(s) cpu bind policy conflicts with pod's required cpu bind policy"
ERR_INVALID_CPU_AMPLIFICATION_RATIO = "node(s) invalid CPU amplification ratio"
ERR_INSUFFICIENT_AMPLIFIED_CPU = "Insufficient amplified cpu"
ERR_MISSING_NUMA_RESOURCES = "node(s) missing NUMA resources"
ERR_INSUFFICIENT_NUMA_NODE_RESOURCES = "node(s) Insufficient NUMA Node resources"
CALCULATE_AFFINITY = "topologymanager.(*topologyManager).calculateAffinity"
OK = Status()
# fwktype.AsStatus(fwktype.ErrNotFound): what a plugin returns when PreFilter wrote no state.
MISSING_STATE = Status(ERROR, ("not found",))


@dataclass(frozen=True)
class ReserveResult:
    """What ``Reserve`` returns and stores: its status and ``state.allocation`` (None: nothing stored)."""

    status: Status
    allocation: PodAllocation | None = None


def _status(code: str, *reasons: str) -> Status:
    return Status(code, reasons)


@dataclass(frozen=True)
class PreFilterState:
    """``preFilterState`` (the fields this model uses)."""

    skip: bool = False
    request_cpu_bind: bool = False
    requests: Mapping[str, Fraction] = field(default_factory=dict)
    required_cpu_bind_policy: str = ""
    preferred_cpu_bind_policy: str = ""
    preferred_cpu_exclusive_policy: str = ""
    pod_numa_topology_policy: str = ""
    pod_numa_exclusive: str = ""
    num_cpus_needed: int = 0
    has_reservation_affinity: bool = False
    # IsReservationIgnored(pod), read from the pod wherever the shipped code reads it.
    reservation_ignored: bool = False
    designated: rsv.DesignatedAllocation | None = None


@dataclass(frozen=True)
class FilterResult:
    """Filter's status, the affinity the Topology Manager stored for the node (None: none stored) and the
    allocation Filter already made (a designated allocation; Reserve keeps it)."""

    status: Status
    affinity: NUMATopologyHint | None = None
    allocation: PodAllocation | None = None


def _milli(amount: Fraction) -> int:
    return -((-amount.numerator * 1000) // amount.denominator)


def _amplify_options(node: NodeState) -> TopologyOptions | ResourceError:
    topology = node.options
    try:
        ratios = ext.amplification_ratios(node.annotations)
    except ext.AnnotationError as err:
        return ResourceError(str(err))
    amplified = []
    for entry in topology.numa_node_resources:
        resources = dict(entry.resources)
        ext.amplify_resource_list(resources, ratios or {})
        amplified.append(NUMANodeResource(entry.node, resources))
    return replace(topology, amplification_ratios=ratios, numa_node_resources=tuple(amplified))


def amplified_options(node: NodeState) -> TopologyOptions:
    """``getResourceOptions``' topology: the node's options with the Node's amplification ratios read
    and its NUMA resources amplified (``amplifyNUMANodeResources``) unless the options already carry
    ratios. It depends on the node alone, so it is worked out once per :class:`NodeState`; a ratio
    annotation that fails to decode is a :class:`ResourceError`, raised afresh on every call."""
    if node.options.amplification_ratios is not None:
        return node.options
    options = memo(node, "_koord_amplified_options", lambda: _amplify_options(node))
    if isinstance(options, ResourceError):
        raise ResourceError(str(options))
    return options


class NodeNUMAResourcePlugin:
    """The shipped plugin's decisions for one pod on one node; a node is a :class:`NodeState`."""

    def __init__(self, args: NodeNUMAResourceArgs | None = None) -> None:
        self.args = args or NodeNUMAResourceArgs()
        self.scorer = self.args.scorer()
        self.numa_scorer = self.args.numa_scorer()

    # ---- PreFilter -----------------------------------------------------------------------------------

    def pre_filter(self, pod: Pod) -> PreFilterState | Status:
        """``PreFilter``: a :class:`Status` when it refuses the pod (for every node). Computed once per pod
        and ``defaultCPUBindPolicy`` (the only argument it reads), as the scheduler's cycle state holds
        it; the state's ``requests`` are shared and never changed."""
        key = f"_koord_pre_filter:{self.args.default_cpu_bind_policy}"
        return memo(pod, key, lambda: self._pre_filter(pod))

    def _pre_filter(self, pod: Pod) -> PreFilterState | Status:
        # The SchedulingHint plugin decodes the hint first (BeforePreFilter); its panic comes later.
        designated: rsv.DesignatedAllocation | Status | PluginPanic | None
        try:
            designated = rsv.designated_allocation(pod)
        except PluginPanic as panic:
            designated = panic
        if isinstance(designated, Status) and designated.code == ERROR:
            return designated
        try:
            spec = ext.resource_spec(pod.annotations)
            numa = ext.numa_topology_spec(pod.annotations)
        except ext.AnnotationError as err:
            return _status(ERROR, str(err))
        requests = dict(pod_request_list(pod))
        if all(amount == 0 for amount in requests.values()):
            return PreFilterState(skip=True)
        try:
            affinity = rsv.reservation_affinity(pod)
        except ext.AnnotationError as err:
            return _status(UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
        if isinstance(designated, PluginPanic):
            raise designated
        if isinstance(designated, Status):
            return designated
        cpu = _milli(requests.get("cpu", Fraction(0)))
        state = PreFilterState(
            requests=requests,
            num_cpus_needed=int(cpu / 1000),
            pod_numa_topology_policy=numa.numa_topology_policy,
            pod_numa_exclusive=numa.single_numa_node_exclusive,
            has_reservation_affinity=affinity is not None,
            reservation_ignored=rsv.is_reservation_ignored(pod),
            designated=designated,
        )
        if not ext.allow_use_cpuset(pod):
            return state
        policy = spec.preferred_cpu_bind_policy
        if policy in ("", ext.CPU_BIND_DEFAULT):
            policy = self.args.default_cpu_bind_policy
        required = spec.required_cpu_bind_policy
        if required == ext.CPU_BIND_DEFAULT:
            required = self.args.default_cpu_bind_policy
        if required != "":
            policy = required
        if policy in (ext.CPU_BIND_FULL_PCPUS, ext.CPU_BIND_SPREAD_BY_PCPUS):
            if cpu % 1000 != 0:
                return _status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_INVALID_REQUESTED_CPUS)
            if cpu > 0:
                state = replace(
                    state,
                    request_cpu_bind=True,
                    required_cpu_bind_policy=required,
                    preferred_cpu_bind_policy=policy,
                    preferred_cpu_exclusive_policy=spec.preferred_cpu_exclusive_policy,
                )
        return state

    # ---- helpers -------------------------------------------------------------------------------------

    def node_policy(self, node: NodeState) -> str:
        """``getNUMATopologyPolicy``: the label if non-empty, else the kubelet's policy from the NRT."""
        return numa_topology_policy(node.labels, node.options.numa_topology_policy)

    def _merged_policy(self, state: PreFilterState, node: NodeState) -> str:
        """The policy after ``mergeTopologyPolicy``, its error ignored (Score, Reserve: "" on conflict)."""
        try:
            return merge_topology_policy(self.node_policy(node), state.pod_numa_topology_policy)
        except PolicyConflict:
            return POLICY_NONE

    def _request_cpu_bind(self, state: PreFilterState, node: NodeState) -> bool | Status:
        """``requestCPUBind``: the pod's own cpuset request, or a node bind policy other than None for
        any pod with a whole-CPU request (a fractional one is refused)."""
        if state.request_cpu_bind:
            return True
        cpu = _milli(state.requests.get("cpu", Fraction(0)))
        if cpu == 0:
            return False
        bind = ext.node_cpu_bind_policy(node.labels, node.options.kubelet_policy)
        if bind not in ("", ext.NODE_CPU_BIND_NONE):
            if cpu % 1000 != 0:
                return _status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_INVALID_REQUESTED_CPUS)
            return True
        return False

    def _cpu_bind_policy(self, state: PreFilterState, node: NodeState) -> tuple[str, bool]:
        """``getCPUBindPolicy``: (policy, required)."""
        if state.required_cpu_bind_policy != "":
            return state.required_cpu_bind_policy, True
        bind = ext.node_cpu_bind_policy(node.labels, node.options.kubelet_policy)
        if bind == ext.NODE_CPU_BIND_SPREAD_BY_PCPUS:
            return ext.CPU_BIND_SPREAD_BY_PCPUS, True
        if bind == ext.NODE_CPU_BIND_FULL_PCPUS_ONLY:
            return ext.CPU_BIND_FULL_PCPUS, True
        return state.preferred_cpu_bind_policy, False

    def resource_options(
        self, state: PreFilterState, node: NodeState, bind: bool, hint: NUMATopologyHint | None
    ) -> ResourceOptions:
        """``getResourceOptions`` (with ``amplifyNUMANodeResources``); raises :class:`ResourceError`."""
        topology = amplified_options(node)
        ratio = (topology.amplification_ratios or {}).get("cpu", 0.0)
        requests = dict(state.requests)
        if bind and ratio > 1:
            ext.amplify_resource_list(requests, topology.amplification_ratios or {}, "cpu")
        policy, required = self._cpu_bind_policy(state, node)
        return ResourceOptions(
            requests=requests,
            original_requests=state.requests,
            num_cpus_needed=state.num_cpus_needed,
            request_cpu_bind=bind,
            required_cpu_bind_policy=required,
            cpu_bind_policy=policy,
            cpu_exclusive_policy=state.preferred_cpu_exclusive_policy,
            hint=hint or NUMATopologyHint(),
            topology=topology,
            numa_allocate_strategy=self.numa_allocate_strategy(node),
            required_from_reservation=state.has_reservation_affinity,
        )

    def numa_allocate_strategy(self, node: NodeState) -> str:
        """``GetNUMAAllocateStrategy``: the node's ``numa-allocate-strategy`` label when set, else the
        args' default (``GetDefaultNUMAAllocateStrategy``)."""
        label = node.labels.get(ext.LABEL_NODE_NUMA_ALLOCATE_STRATEGY, "")
        return label or self.args.numa_allocate_strategy()

    def _try_allocate(
        self,
        state: PreFilterState,
        node: NodeState,
        bind: bool,
        hint: NUMATopologyHint | None,
        restore: rsv.NodeRestoreState = rsv.EMPTY_RESTORE,
    ) -> PodAllocation | Status:
        """``getResourceOptions`` + the matched reservations, then ``tryAllocateFromNode`` (the hint
        provider's ``Allocate``); options errors: UnschedulableAndUnresolvable."""
        try:
            opts = self.resource_options(state, node, bind, hint)
        except ResourceError as err:
            return _status(UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
        try:
            outcome = rsv.allocate_any(node, restore, opts, state.reservation_ignored, rsv.allocator(False))
        except AllocateRefused as refused:
            return refused.status
        assert outcome.allocation is not None
        return outcome.allocation

    # ---- Filter --------------------------------------------------------------------------------------

    def filter(
        self,
        state: PreFilterState | None,
        node: NodeState,
        restore: rsv.NodeRestoreState = rsv.EMPTY_RESTORE,
        providers: Sequence[NUMAHintProvider] = (),
    ) -> FilterResult:
        """``Filter``; may raise :class:`PluginPanic`. ``restore``: the pod's reservations on the node;
        ``providers``: the Topology Manager's other hint providers (DeviceShare)."""
        if state is None:
            return FilterResult(MISSING_STATE)
        if state.skip:
            return FilterResult(OK)
        try:
            policy = merge_topology_policy(self.node_policy(node), state.pod_numa_topology_policy)
        except PolicyConflict:
            return FilterResult(_status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NOT_MATCH_NUMA_TOPOLOGY))
        if state.designated is not None:
            # The node is taken as chosen: Filter allocates at once (Reserve keeps the result).
            done = self._allocate(state, node, policy, None, restore)
            return FilterResult(done.status, allocation=done.allocation)
        bind = self._request_cpu_bind(state, node)
        if isinstance(bind, Status):
            return FilterResult(bind)
        amplified = self._filter_amplified_cpus(_milli(state.requests.get("cpu", Fraction(0))), node, bind)
        if not amplified.ok:
            return FilterResult(amplified)
        if bind:
            topology = node.options.cpu_topology
            if topology is None or not topology.is_valid():
                return FilterResult(_status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_INVALID_CPU_TOPOLOGY))
            required = state.required_cpu_bind_policy
            node_bind = ext.node_cpu_bind_policy(node.labels, node.options.kubelet_policy)
            if node_bind == ext.NODE_CPU_BIND_FULL_PCPUS_ONLY:
                required = ext.CPU_BIND_FULL_PCPUS
            elif node_bind == ext.NODE_CPU_BIND_SPREAD_BY_PCPUS:
                required = ext.CPU_BIND_SPREAD_BY_PCPUS
            if state.required_cpu_bind_policy not in ("", required):
                return FilterResult(_status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_CPU_BIND_POLICY_CONFLICT))
            if required == ext.CPU_BIND_FULL_PCPUS and state.num_cpus_needed % topology.cpus_per_core() != 0:
                return FilterResult(_status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_SMT_ALIGNMENT))
            if required != "" and policy == POLICY_NONE:
                result = self._try_allocate(state, node, bind, None, restore)
                return FilterResult(result if isinstance(result, Status) else OK)
        if policy not in (POLICY_NONE, POLICY_BEST_EFFORT):
            return self.filter_by_numa_node(state, node, policy, self._exclusive(state), restore, providers)
        return FilterResult(OK)

    @staticmethod
    def _exclusive(state: PreFilterState) -> str:
        """A pod-level NUMA policy defaults ``singleNUMANodeExclusive`` to Required."""
        if state.pod_numa_exclusive == "" and state.pod_numa_topology_policy != "":
            return EXCLUSIVE_REQUIRED
        return state.pod_numa_exclusive

    def _filter_amplified_cpus(self, pod_milli: int, node: NodeState, bind: bool) -> Status:
        """``filterAmplifiedCPUs``: with a cpu amplification ratio > 1 on the Node, cpuset CPUs count
        amplified against the node's allocatable."""
        if pod_milli == 0:
            return OK
        try:
            ratios = ext.amplification_ratios(node.annotations) or {}
        except ext.AnnotationError:
            return _status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_INVALID_CPU_AMPLIFICATION_RATIO)
        ratio = ratios.get("cpu", -1.0)
        if ratio <= 1:
            return OK
        if bind:
            pod_milli = ext.amplify(pod_milli, ratio)
        try:
            _, held = available_cpus(node)
        except ResourceError as err:
            return _status(UNSCHEDULABLE_AND_UNRESOLVABLE, str(err))
        held_milli = len(held) * 1000
        requested = node.requested.milli_cpu
        if requested >= held_milli and held_milli > 0:
            requested = requested - held_milli + ext.amplify(held_milli, ratio)
        if pod_milli > node.allocatable.milli_cpu - requested:
            return _status(UNSCHEDULABLE, ERR_INSUFFICIENT_AMPLIFIED_CPU)
        return OK

    def filter_by_numa_node(
        self,
        state: PreFilterState,
        node: NodeState,
        policy: str,
        exclusive: str,
        restore: rsv.NodeRestoreState = rsv.EMPTY_RESTORE,
        providers: Sequence[NUMAHintProvider] = (),
    ) -> FilterResult:
        """``FilterByNUMANode`` + the Topology Manager's ``Admit``: this plugin's hints, then each of
        ``providers``' (a failing one's message is a reason), merged; after the merge each provider
        allocates inside the affinity."""
        if policy == POLICY_NONE:
            return FilterResult(OK)
        numa_nodes = node.options.numa_nodes()
        if not numa_nodes:
            return FilterResult(_status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_MISSING_NUMA_RESOURCES))
        statuses = node.allocation.all_numa_node_status(len(numa_nodes))
        hints = self.pod_topology_hints(state, node, policy, restore)
        reasons = [hints.message] if isinstance(hints, Status) else []
        accumulated: list[ProviderHints | None] = [] if isinstance(hints, Status) else [hints]
        for provider in providers:
            provided, provider_status = provider.hints()
            if not provider_status.ok:
                reasons.append(provider_status.message)
                continue
            accumulated.append(provided)
        if reasons:
            return FilterResult(_status(UNSCHEDULABLE, *reasons))
        merge = POLICIES.get(policy)
        if merge is None:
            # createNUMATopologyPolicy returns a nil Policy for any other name; Merge is called on it.
            raise PluginPanic(NIL_POINTER, CALCULATE_AFFINITY)
        result = merge(numa_nodes, accumulated, exclusive, statuses)
        check_exclusive_policy(result.hint, exclusive, statuses)  # logged only, but it can index out of range
        if not result.admit and result.reasons:
            return FilterResult(Status(UNSCHEDULABLE, result.reasons))
        bind = self._request_cpu_bind(state, node)
        if isinstance(bind, Status):
            return FilterResult(bind)
        allocated = self._try_allocate(state, node, bind, result.hint, restore)
        if isinstance(allocated, Status):
            return FilterResult(allocated)
        for provider in providers:
            provider_status = provider.allocate(result.hint)
            if not provider_status.ok:
                return FilterResult(provider_status)
        return FilterResult(OK, result.hint)

    def pod_topology_hints(
        self,
        state: PreFilterState,
        node: NodeState,
        policy: str,
        restore: rsv.NodeRestoreState = rsv.EMPTY_RESTORE,
    ) -> dict[str, list[NUMATopologyHint]] | Status:
        """``GetPodTopologyHints``, resources in name order."""
        bind = self._request_cpu_bind(state, node)
        if isinstance(bind, Status):
            return bind
        try:
            opts = replace(self.resource_options(state, node, bind, None), numa_scorer=self.numa_scorer)
        except ResourceError as err:
            return _status(ERROR, str(err))
        try:
            if restore == rsv.EMPTY_RESTORE:
                hints = topology_hints(node, opts, policy)
            else:
                fits = rsv.fits_under_hint(node, restore, state.reservation_ignored)
                hints = topology_hints(node, rsv.hint_options(opts, restore), policy, fits)
        except ResourceError:
            return _status(UNSCHEDULABLE, ERR_INSUFFICIENT_NUMA_NODE_RESOURCES)
        return dict(sorted(hints.items()))

    # ---- Score ---------------------------------------------------------------------------------------

    def score(
        self,
        state: PreFilterState,
        node: NodeState,
        affinity: NUMATopologyHint | None,
        restore: rsv.NodeRestoreState = rsv.EMPTY_RESTORE,
    ) -> int:
        """``Score`` for a node that passed Filter with ``affinity`` stored; failures score 0."""
        return self.score_status(state, node, affinity, restore)[0]

    def score_status(
        self,
        state: PreFilterState | None,
        node: NodeState,
        affinity: NUMATopologyHint | None,
        restore: rsv.NodeRestoreState = rsv.EMPTY_RESTORE,
    ) -> tuple[int, Status]:
        """``Score``'s score and status: only a missing preFilterState or a fractional cpuset request is
        not a success; an allocation that fails (nominated reservation or node) degrades to 0."""
        if state is None:
            return 0, MISSING_STATE
        if state.skip:
            return 0, OK
        policy = self._merged_policy(state, node)
        bind = self._request_cpu_bind(state, node)
        if isinstance(bind, Status):
            return 0, bind
        topology = node.options.cpu_topology
        if bind and (topology is None or not topology.is_valid()):
            return 0, OK
        try:
            opts = self.resource_options(state, node, bind, affinity)
        except ResourceError:
            return 0, OK
        pod = Resource.from_list(opts.requests)
        if policy == POLICY_NONE:
            return self._score_with_amplified_cpus(state, node, opts, pod), OK
        # Reservations' preferred CPUs are given back less the pod's own, so those CPUs must be chosen.
        run = rsv.allocator(restore != rsv.EMPTY_RESTORE)
        try:
            outcome = rsv.allocate_with_nominated(node, restore, opts, state.reservation_ignored, run)
            if outcome.allocation is None:
                outcome = rsv.try_allocate_from_node(node, restore, outcome.options, None, run)
        except AllocateRefused:
            return 0, OK
        assert outcome.allocation is not None
        allocatable, requested = self._allocatable_and_requested(node, outcome.allocation, outcome.options)
        return self.scorer.score(requested, allocatable, pod), OK

    def _score_with_amplified_cpus(
        self, state: PreFilterState, node: NodeState, opts: ResourceOptions, pod: Resource
    ) -> int:
        """``scoreWithAmplifiedCPUs``: the whole node; cpuset CPUs count amplified."""
        ratio = (opts.topology.amplification_ratios or {}).get("cpu", 0.0)
        if state.requests.get("cpu", Fraction(0)) == 0 or ratio <= 1:
            return self.scorer.score(node.requested, node.allocatable, pod)
        try:
            _, held = available_cpus(node)
        except ResourceError:
            return 0
        requested = _copy(node.requested)
        requested.milli_cpu += ext.amplify(len(held) * 1000, ratio) - len(held) * 1000
        return self.scorer.score(requested, node.allocatable, pod)

    def _allocatable_and_requested(
        self, node: NodeState, allocation: PodAllocation, opts: ResourceOptions
    ) -> tuple[Resource, Resource]:
        """``calculateAllocatableAndRequested``: the chosen NUMA nodes' allocatable and Koordinator's
        accounting on them, else the whole node; with a cpuset, requested cpu is every CPU held on the
        node."""
        topology = opts.topology
        if allocation.numa_node_resources:
            total_allocatable: dict[str, Fraction] = {}
            total_requested: dict[str, Fraction] = {}
            _, held_by_node = node.allocation.available_numa_resources(topology, opts.reusable_resources)
            for entry in allocation.numa_node_resources:
                for name, amount in held_by_node.get(entry.node, {}).items():
                    total_requested[name] = total_requested.get(name, Fraction(0)) + amount
                numa = next((n for n in topology.numa_node_resources if n.node == entry.node), None)
                if numa is not None:
                    for name, amount in numa.resources.items():
                        total_allocatable[name] = total_allocatable.get(name, Fraction(0)) + amount
            allocatable = Resource.from_list(total_allocatable)
            requested = Resource.from_list(total_requested)
        else:
            allocatable = node.allocatable
            requested = _copy(node.requested)
        if allocation.num_cpus > 0:
            assert topology.cpu_topology is not None
            _, held = node.allocation.available_cpus(
                topology.cpu_topology,
                topology.max_ref_count,
                topology.reserved_cpus,
                opts.preferred_cpus.difference(allocation.cpuset),
            )
            ratio = (topology.amplification_ratios or {}).get("cpu", 0.0)
            requested.milli_cpu = ext.amplify(len(held) * 1000, ratio)
        return allocatable, requested

    # ---- Reserve -------------------------------------------------------------------------------------

    def reserve(
        self,
        state: PreFilterState | None,
        node: NodeState,
        affinity: NUMATopologyHint | None,
        restore: rsv.NodeRestoreState = rsv.EMPTY_RESTORE,
    ) -> Status:
        """``Reserve``'s status (see :meth:`reserve_allocation`)."""
        return self.reserve_allocation(state, node, affinity, restore).status

    def reserve_allocation(
        self,
        state: PreFilterState | None,
        node: NodeState,
        affinity: NUMATopologyHint | None,
        restore: rsv.NodeRestoreState = rsv.EMPTY_RESTORE,
        allocated: PodAllocation | None = None,
        providers: Sequence[NUMAHintProvider] = (),
    ) -> ReserveResult:
        """``Reserve`` after Filter stored ``affinity`` (and ``allocated``, a designated allocation Filter
        already made, which is kept): BestEffort runs the NUMA admission only now, and every policy
        allocates (``allocate``: the nominated reservation, then the node; CPUs chosen); the allocation is
        what ``state.allocation`` holds afterwards (None where Reserve returns before allocating or
        fails)."""
        if state is None:
            return ReserveResult(MISSING_STATE)
        if state.skip:
            return ReserveResult(OK)
        if allocated is not None:
            return ReserveResult(OK, allocated)
        policy = self._merged_policy(state, node)
        if policy == POLICY_BEST_EFFORT:
            admitted = self.filter_by_numa_node(
                state, node, policy, self._exclusive(state), restore, providers
            )
            if not admitted.status.ok:
                return ReserveResult(admitted.status)
            affinity = admitted.affinity
        return self._allocate(state, node, policy, affinity, restore)

    def _allocate(
        self,
        state: PreFilterState,
        node: NodeState,
        policy: str,
        affinity: NUMATopologyHint | None,
        restore: rsv.NodeRestoreState,
    ) -> ReserveResult:
        """``allocate``: the nominated reservation, else the node (or the designated allocation)."""
        bind = self._request_cpu_bind(state, node)
        if isinstance(bind, Status):
            return ReserveResult(bind)
        if not bind and policy == POLICY_NONE:
            return ReserveResult(OK)
        topology = node.options.cpu_topology
        if bind and (topology is None or not topology.is_valid()):
            return ReserveResult(_status(ERROR, ERR_INVALID_CPU_TOPOLOGY))
        try:
            opts = self.resource_options(state, node, bind, affinity)
        except ResourceError as err:
            return ReserveResult(_status(ERROR, str(err)))
        run = rsv.allocator(True)
        try:
            outcome = rsv.allocate_with_nominated(node, restore, opts, state.reservation_ignored, run)
            if outcome.allocation is None:
                outcome = rsv.try_allocate_from_node(node, restore, outcome.options, state.designated, run)
        except AllocateRefused as refused:
            return ReserveResult(refused.status)
        return ReserveResult(OK, outcome.allocation)


def _copy(resource: Resource) -> Resource:
    return Resource(
        resource.milli_cpu,
        resource.memory,
        resource.ephemeral_storage,
        resource.allowed_pod_number,
        dict(resource.scalar_resources),
    )


__all__ = ["SUCCESS", "FilterResult", "NodeNUMAResourcePlugin", "PreFilterState", "ReserveResult"]
