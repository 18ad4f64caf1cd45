"""NodeNUMAResource's reservation and designated-allocation paths, as koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` ships them (``nodenumaresource/reservation.go``:
``RestoreReservation``, ``mergeReservationAllocations``, ``tryAllocateFromReusable``,
``tryAllocateIgnoreReservation``, ``allocateWithNominated``, ``getNominatedReusableAlloc``; ``plugin.go``:
``tryAllocateFromNode``, the designated allocation of ``PreFilter``; ``topology_hint.go``: ``Allocate``;
``resource_manager.go``: the hint loop of ``generateResourceHints``; ``pkg/util/reservation``: owner
matching; ``plugins/reservation/transformer.go``: which reservations a pod matches on a node).

A reservation the pod may use (matched) gives back what it reserved and its owners have not taken: its
remaining NUMA resources become reusable and its remaining CPUs preferred (one reference given back).
``Default`` and ``Aligned`` allocate from the node with that help; ``Restricted`` first checks that, then
allocates from the reservation's remainder alone and refuses more CPUs than it has left. When every matched
reservation fails, a pod that requires one (``scheduling.koordinator.sh/reservation-affinity``) is refused
with each reason prefixed ``Reservation(s)``; any other pod falls back to the node — except at Score and
Reserve, where a pod whose nominated reservation produced no allocation is refused (no silent bypass).

A designated allocation comes from a scheduling hint: when the pod's
``internal.scheduling.koordinator.sh/scheduling-hint`` (or the deprecated ``scheduling.koordinator.sh/``
one) lists the ``NodeNUMAResource`` extension, its ``resource-status`` annotation is the allocation to
repeat; Filter allocates it at once and anything other than exactly that CPU set is refused.

Where Go iterates a map of several matched reservations (order random), they are taken in name order.
Not modelled: reserve pods being scheduled themselves (pre-allocation), preemption state, reservation
taints, ``reservationSelectorTerms`` and exact-match specs, and the in-place trimming of a reservation's
remainder by ``trimNUMANodeResources``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction

from kubeletemu.bitmask import BitMask
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CPUSetError
from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import UNSCHEDULABLE, PluginPanic, Status
from kubeletemu.scheduler.koordinator import extension as ext
from kubeletemu.scheduler.koordinator.allocation import NodeAllocation
from kubeletemu.scheduler.koordinator.merge import NUMATopologyHint
from kubeletemu.scheduler.koordinator.resources import (
    ERR_NOT_ENOUGH_CPUS,
    AllocateRefused,
    NodeState,
    PodAllocation,
    ResourceOptions,
    allocate,
)
from kubeletemu.scheduler.pod_phase import is_pod_terminated
from kubeletemu.scheduler.reservation_object import (
    ALLOCATE_POLICY_ALIGNED,
    ALLOCATE_POLICY_DEFAULT,
    ALLOCATE_POLICY_RESTRICTED,
    Reservation,
)

NUMAResources = Mapping[int, Mapping[str, Fraction]]
LABEL_RESERVATION_IGNORED = ext.SCHEDULING_DOMAIN_PREFIX + "/reservation-ignored"
ANNOTATION_RESERVATION_AFFINITY = ext.SCHEDULING_DOMAIN_PREFIX + "/reservation-affinity"
ANNOTATION_RESERVATION_ALLOCATED = ext.SCHEDULING_DOMAIN_PREFIX + "/reservation-allocated"
ANNOTATION_SCHEDULING_HINT = "internal.scheduling.koordinator.sh/scheduling-hint"
DEPRECATED_ANNOTATION_SCHEDULING_HINT = ext.SCHEDULING_DOMAIN_PREFIX + "/scheduling-hint"
HINT_EXTENSION = "NodeNUMAResource"
ERR_NO_NOMINATED = "no nominated reservation"
ERR_NOMINATED_NUMA_SCOPE = "pod has a nominated reservation but cannot be allocated within its NUMA scope"
ERR_NOMINATE_NUMA_SCOPE = "reservation NUMA scope is incompatible with the best topology hint"
REASON_PREFIX = "Reservation(s) "
MUST_PARSE = "cpuset.MustParse"


# ---- quotav1 over NUMA maps --------------------------------------------------------------------------


def append_allocated(*maps: NUMAResources | None) -> dict[int, dict[str, Fraction]]:
    """``appendAllocated``: per NUMA node, ``quotav1.Add`` (the union of names, summed)."""
    out: dict[int, dict[str, Fraction]] = {}
    for allocated in maps:
        for node, resources in (allocated or {}).items():
            into = out.setdefault(node, {})
            for name, amount in resources.items():
                into[name] = into.get(name, Fraction(0)) + amount
    return out


def subtract_allocated(
    m: NUMAResources | None, allocated: NUMAResources | None, non_negative: bool
) -> dict[int, dict[str, Fraction]]:
    """``subtractAllocated``: per NUMA node of ``allocated``, ``quotav1.Subtract`` (names of either side;
    one only on the right is negated) or ``SubtractWithNonNegativeResult`` (floored at zero)."""
    out = {node: dict(resources) for node, resources in (m or {}).items()}
    for node, resources in (allocated or {}).items():
        left = out.get(node, {})
        result: dict[str, Fraction] = {}
        for name in [*left, *(n for n in resources if n not in left)]:
            value = left.get(name, Fraction(0)) - resources.get(name, Fraction(0))
            result[name] = max(Fraction(0), value) if non_negative else value
        out[node] = result
    return out


# ---- restore state -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReusableAlloc:
    """``reusableAlloc`` of one reservation: what it reserved (allocatable), what its owners took
    (allocated) and what is left (remained), for CPUs and per NUMA node."""

    uid: str
    name: str = ""
    allocate_policy: str = ALLOCATE_POLICY_DEFAULT
    allocatable_cpus: CPUSet = field(default_factory=CPUSet)
    allocated_cpus: CPUSet = field(default_factory=CPUSet)
    remained_cpus: CPUSet = field(default_factory=CPUSet)
    allocatable: NUMAResources | None = None
    allocated: NUMAResources | None = None
    remained: NUMAResources | None = None


@dataclass(frozen=True)
class NodeRestoreState:
    """``nodeReservationRestoreStateData`` for one pod on one node, with the reservation nominated for
    the pod there (``nominated``: its UID, None when none is)."""

    matched: tuple[ReusableAlloc, ...] = ()
    unmatched: tuple[ReusableAlloc, ...] = ()
    nominated: str | None = None
    merged_matched_remain_cpus: CPUSet = field(default_factory=CPUSet)
    merged_matched_allocated_cpus: CPUSet = field(default_factory=CPUSet)
    merged_matched_allocatable: NUMAResources = field(default_factory=dict)
    merged_matched_allocated: NUMAResources = field(default_factory=dict)
    merged_unmatched_used: NUMAResources = field(default_factory=dict)

    @classmethod
    def merged(
        cls,
        matched: Iterable[ReusableAlloc],
        unmatched: Iterable[ReusableAlloc],
        nominated: str | None = None,
    ) -> NodeRestoreState:
        """``mergeReservationAllocations``: the sums over the matched and unmatched reservations."""
        matched, unmatched = tuple(_ordered(matched)), tuple(_ordered(unmatched))
        used: dict[int, dict[str, Fraction]] = {}
        for alloc in unmatched:
            used = append_allocated(used, subtract_allocated(alloc.allocatable, alloc.remained, True))
        remain, taken = CPUSet(), CPUSet()
        for alloc in matched:
            remain, taken = remain.union(alloc.remained_cpus), taken.union(alloc.allocated_cpus)
        return cls(
            matched=matched,
            unmatched=unmatched,
            nominated=nominated,
            merged_matched_remain_cpus=remain,
            merged_matched_allocated_cpus=taken,
            merged_matched_allocatable=append_allocated(*(a.allocatable for a in matched)),
            merged_matched_allocated=append_allocated(*(a.allocated for a in matched)),
            merged_unmatched_used=used,
        )

    def matched_by_uid(self, uid: str) -> ReusableAlloc | None:
        return next((a for a in self.matched if a.uid == uid), None)


EMPTY_RESTORE = NodeRestoreState()


def _ordered(allocs: Iterable[ReusableAlloc]) -> list[ReusableAlloc]:
    return sorted(allocs, key=lambda a: (a.name, a.uid))


def reusable_alloc(
    reservation: Reservation, allocation: NodeAllocation, owners: Sequence[str]
) -> ReusableAlloc | None:
    """``RestoreReservation``'s ``filterFn`` for one reservation: its reserve pod's NUMA resources and
    CPUs in the node's accounting, less its assigned owners' (``owners``: their UIDs); None when it
    holds neither."""
    reserved = allocation.allocated_pods.get(reservation.uid)
    allocatable = allocated = remained = None
    if reserved is not None and reserved.numa_node_resources:
        allocatable = {n.node: dict(n.resources) for n in reserved.numa_node_resources}
        for uid in owners:
            pod = allocation.allocated_pods.get(uid)
            if pod is not None and pod.numa_node_resources:
                allocated = append_allocated(
                    allocated, {n.node: n.resources for n in pod.numa_node_resources}
                )
        remained = subtract_allocated(allocatable, allocated, False)
    allocatable_cpus = taken_cpus = remain_cpus = CPUSet()
    if reserved is not None and not reserved.cpuset.is_empty():
        allocatable_cpus = taken_cpus = remain_cpus = reserved.cpuset
        for uid in owners:
            pod = allocation.allocated_pods.get(uid)
            if pod is not None and not pod.cpuset.is_empty():
                taken_cpus = taken_cpus.union(allocatable_cpus.intersection(pod.cpuset))
                remain_cpus = remain_cpus.difference(pod.cpuset)
    if allocatable is None and remain_cpus.is_empty() and allocatable_cpus.is_empty():
        return None
    return ReusableAlloc(
        uid=reservation.uid,
        name=reservation.name,
        allocate_policy=reservation.allocate_policy,
        allocatable_cpus=allocatable_cpus,
        allocated_cpus=taken_cpus,
        remained_cpus=remain_cpus,
        allocatable=allocatable,
        allocated=allocated,
        remained=remained,
    )


# ---- which reservations a pod matches ----------------------------------------------------------------


def is_reservation_ignored(pod: Pod) -> bool:
    """``IsReservationIgnored``."""
    return pod.labels.get(LABEL_RESERVATION_IGNORED) == "true"


@dataclass(frozen=True)
class ReservationAffinity:
    """The parts of ``ReservationAffinity`` (annotation ``scheduling.koordinator.sh/reservation-affinity``)
    the match reads: a name, a label selector over reservations, and whether it tolerates an
    unschedulable reservation."""

    name: str = ""
    selector: Mapping[str, str] = field(default_factory=dict)
    tolerate_unschedulable: bool = False


def reservation_affinity(pod: Pod) -> ReservationAffinity | None:
    """``GetRequiredReservationAffinity``: None without the annotation; an empty value is an empty
    affinity; raises :class:`~kubeletemu.scheduler.koordinator.extension.AnnotationError`."""
    text = pod.annotations.get(ANNOTATION_RESERVATION_AFFINITY)
    if text is None:
        return None
    if text == "":
        return ReservationAffinity()
    raw = ext._decode(pod.annotations, ANNOTATION_RESERVATION_AFFINITY, dict) or {}
    selector = raw.get("reservationSelector") or {}
    if not isinstance(selector, dict) or not all(isinstance(v, str) for v in selector.values()):
        raise ext.AnnotationError(
            f"{ANNOTATION_RESERVATION_AFFINITY}: reservationSelector: cannot unmarshal into map"
        )
    tolerations = raw.get("tolerations") or []
    if not isinstance(tolerations, list):
        raise ext.AnnotationError(
            f"{ANNOTATION_RESERVATION_AFFINITY}: tolerations: cannot unmarshal into a list"
        )
    tolerate = any(
        isinstance(t, dict)
        and t.get("effect", "NoSchedule") in ("", "NoSchedule")
        and (
            (t.get("operator") == "Exists" and t.get("key", "") in ("", "node.kubernetes.io/unschedulable"))
            or (t.get("key") == "node.kubernetes.io/unschedulable" and t.get("operator", "Equal") == "Equal")
        )
        for t in tolerations
    )
    return ReservationAffinity(
        ext._str(raw, "name", ANNOTATION_RESERVATION_AFFINITY), dict(selector), tolerate
    )


def owners_match(reservation: Reservation, pod: Pod) -> bool:
    """``MatchReservationOwners``: any owner whose object reference and label selector both hold."""
    for owner in reservation.owners:
        ref = owner.object
        if ref is not None and not (
            (not ref.uid or ref.uid == pod.uid)
            and (not ref.name or ref.name == pod.name)
            and (not ref.namespace or ref.namespace == pod.namespace)
            and (not ref.api_version or ref.api_version == "v1")
        ):
            continue
        if owner.label_selector is not None and not owner.label_selector.matches(pod.labels):
            continue
        return True
    return False


def assigned_owners(reservation: Reservation, pods: Iterable[Pod]) -> list[str]:
    """UIDs of the node's pods allocated from the reservation (``reservation-allocated`` names its UID)."""
    out = []
    for pod in pods:
        try:
            raw = ext._decode(pod.annotations, ANNOTATION_RESERVATION_ALLOCATED, dict)
        except ext.AnnotationError:
            continue
        if raw and raw.get("uid") == reservation.uid and not is_pod_terminated(pod):
            out.append(pod.uid)
    return out


def matched_or_ignored(
    pod: Pod, reservation: Reservation, affinity: ReservationAffinity | None, ignored: bool
) -> bool:
    """``checkReservationMatchedOrIgnored`` (taints and exact-match specs not modelled)."""
    if ignored:
        return True
    if not owners_match(reservation, pod):
        return False
    if affinity is not None and affinity.name:
        return affinity.name == reservation.name
    if reservation.unschedulable and not (affinity is not None and affinity.tolerate_unschedulable):
        return False
    return affinity is None or all(reservation.labels.get(k) == v for k, v in affinity.selector.items())


def restore_state(
    pod: Pod, reservations: Sequence[Reservation], pods: Sequence[Pod], allocation: NodeAllocation
) -> NodeRestoreState:
    """The reservation plugin's split of the node's matchable reservations (available; an allocate-once
    one with an owner already is used up) into matched-or-ignored and unmatched-with-owners, and the NUMA
    plugin's ``RestoreReservation`` of them. A malformed affinity annotation matches nothing here (PreFilter
    refuses the pod)."""
    try:
        affinity = reservation_affinity(pod)
    except ext.AnnotationError:
        return EMPTY_RESTORE
    ignored = is_reservation_ignored(pod)
    matched, unmatched = [], []
    for reservation in reservations:
        owners = assigned_owners(reservation, pods)
        if not reservation.available or (reservation.allocate_once and owners):
            continue
        alloc = reusable_alloc(reservation, allocation, owners)
        if matched_or_ignored(pod, reservation, affinity, ignored):
            if alloc is not None:
                matched.append(alloc)
        elif owners and alloc is not None:
            unmatched.append(alloc)
    if not matched and not unmatched:
        return EMPTY_RESTORE
    return NodeRestoreState.merged(matched, unmatched)


# ---- designated allocation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DesignatedAllocation:
    """``allocation``: the NUMA resources and CPU set a scheduling hint pins the pod to."""

    numa_node_resources: NUMAResources = field(default_factory=dict)
    cpuset: CPUSet = field(default_factory=CPUSet)


def designated_allocation(pod: Pod) -> DesignatedAllocation | Status | None:
    """The scheduling hint's designated allocation (PreFilter): None without a hint naming this plugin or
    without a recorded allocation; a decode error of the hint is an Error (the SchedulingHint plugin's
    BeforePreFilter), of the resource status UnschedulableAndUnresolvable; a CPU set that fails to parse
    panics (``cpuset.MustParse``)."""
    text = pod.annotations.get(ANNOTATION_SCHEDULING_HINT) or pod.annotations.get(
        DEPRECATED_ANNOTATION_SCHEDULING_HINT
    )
    if not text:
        return None
    key = (
        ANNOTATION_SCHEDULING_HINT
        if pod.annotations.get(ANNOTATION_SCHEDULING_HINT)
        else (DEPRECATED_ANNOTATION_SCHEDULING_HINT)
    )
    try:
        hint = json.loads(text)
    except json.JSONDecodeError as err:
        return Status("Error", (f"{key}: invalid JSON: {err.msg} (offset {err.pos})",))
    if not isinstance(hint, dict):
        return Status("Error", (f"{key}: cannot unmarshal {type(hint).__name__} into SchedulingHint",))
    extensions = hint.get("extensions")
    if not isinstance(extensions, dict) or HINT_EXTENSION not in extensions:
        return None
    try:
        status = ext.resource_status(pod.annotations)
    except ext.AnnotationError as err:
        return Status("UnschedulableAndUnresolvable", (str(err),))
    if status.numa_node_resources is None and status.cpuset == "":
        return None
    try:
        cpus = CPUSet.parse(status.cpuset)
    except CPUSetError as err:
        raise PluginPanic(str(err), MUST_PARSE) from None
    numa = {n.node: {k: q.amount for k, q in n.resources.items()} for n in status.numa_node_resources or ()}
    return DesignatedAllocation(numa, cpus)


# ---- allocation paths --------------------------------------------------------------------------------

Allocator = Callable[[NodeState, ResourceOptions], PodAllocation]


def allocator(pick_cpus: bool) -> Allocator:
    """``resourceManager.Allocate``: choosing the CPUs (Reserve) or only counting them."""
    return lambda node, opts: allocate(node, opts, pick_cpus=pick_cpus)


@dataclass
class Outcome:
    """An allocation path's result and the options as it left them (Score reads their reusable
    resources and preferred CPUs)."""

    allocation: PodAllocation | None
    options: ResourceOptions


def try_allocate_from_reusable(
    node: NodeState,
    restore: NodeRestoreState,
    opts: ResourceOptions,
    allocs: Sequence[ReusableAlloc],
    ignored: bool,
    run: Allocator,
) -> Outcome:
    """``tryAllocateFromReusable``; raises :class:`AllocateRefused` with its status."""
    if not allocs:
        return Outcome(None, opts)
    if ignored:
        return try_allocate_ignore_reservation(node, restore, opts, allocs, run)
    reusable = append_allocated(restore.merged_unmatched_used, restore.merged_matched_allocated)
    preferred = restore.merged_matched_allocated_cpus
    satisfied = False
    result: PodAllocation | None = None
    reasons: list[str] = []

    def attempt(options: ResourceOptions) -> PodAllocation | None:
        """``Allocate`` under ``options``; a refusal is None, its reasons kept."""
        try:
            return run(node, options)
        except AllocateRefused as refused:
            reasons.extend(refused.status.reasons)
            return None

    for alloc in _ordered(allocs):
        opts = replace(
            opts,
            reusable_resources=append_allocated(reusable, alloc.remained),
            preferred_cpus=preferred.union(alloc.remained_cpus),
            required_resources=None,
        )
        if alloc.allocate_policy in (ALLOCATE_POLICY_DEFAULT, ALLOCATE_POLICY_ALIGNED):
            result = attempt(opts)
            if result is None:
                continue
            satisfied = True
            break
        if alloc.allocate_policy != ALLOCATE_POLICY_RESTRICTED:
            continue
        if attempt(opts) is None:
            continue
        reserved = alloc.remained_cpus
        opts = replace(opts, required_resources=alloc.remained, preferred_cpus=alloc.remained_cpus)
        if opts.request_cpu_bind and opts.num_cpus_needed > reserved.size():
            reasons.append(ERR_NOT_ENOUGH_CPUS)
            continue
        result = attempt(opts)
        if result is None:
            continue
        if result.num_cpus > reserved.size():  # a normal pod takes no more CPUs than are left
            reasons.append(ERR_NOT_ENOUGH_CPUS)
            continue
        satisfied = True
        break
    if not satisfied and opts.required_from_reservation:
        raise AllocateRefused(Status(UNSCHEDULABLE, tuple(REASON_PREFIX + r for r in reasons)))
    return Outcome(result, opts)


def try_allocate_ignore_reservation(
    node: NodeState,
    restore: NodeRestoreState,
    opts: ResourceOptions,
    allocs: Sequence[ReusableAlloc],
    run: Allocator,
) -> Outcome:
    """``tryAllocateIgnoreReservation``: the node's free resources and every given reservation's rest."""
    reusable = append_allocated(restore.merged_unmatched_used, restore.merged_matched_allocated)
    preferred = restore.merged_matched_allocated_cpus
    for alloc in allocs:
        reusable = append_allocated(reusable, alloc.remained)
        preferred = preferred.union(alloc.remained_cpus)
    opts = replace(opts, reusable_resources=reusable, preferred_cpus=preferred, required_resources=None)
    return Outcome(run(node, opts), opts)


def allocate_with_nominated(
    node: NodeState, restore: NodeRestoreState, opts: ResourceOptions, ignored: bool, run: Allocator
) -> Outcome:
    """``allocateWithNominated`` for a normal pod (reserve pods are not scheduled here)."""
    if ignored:
        return try_allocate_ignore_reservation(node, restore, opts, restore.matched, run)
    if not restore.matched:
        return Outcome(None, opts)
    if restore.nominated is None:
        if opts.required_from_reservation:
            raise AllocateRefused(Status(UNSCHEDULABLE, (ERR_NO_NOMINATED,)))
        return Outcome(None, opts)
    nominated = restore.matched_by_uid(restore.nominated)
    if nominated is None:
        return Outcome(None, opts)
    outcome = try_allocate_from_reusable(node, restore, opts, [nominated], False, run)
    if outcome.allocation is None:
        raise AllocateRefused(Status(UNSCHEDULABLE, (ERR_NOMINATED_NUMA_SCOPE,)))
    return outcome


def try_allocate_from_node(
    node: NodeState,
    restore: NodeRestoreState,
    opts: ResourceOptions,
    designated: DesignatedAllocation | None,
    run: Allocator,
) -> Outcome:
    """``tryAllocateFromNode``: the designated allocation exactly (its NUMA nodes as the hint, its CPUs
    preferred, any other CPU set refused), or the node's free resources with the owners' use of matched
    reservations and the unmatched reservations' used part given back."""
    if designated is not None:
        opts = replace(
            opts, required_resources=designated.numa_node_resources, preferred_cpus=designated.cpuset
        )
        if designated.numa_node_resources:
            opts = replace(opts, hint=NUMATopologyHint(BitMask.of(*designated.numa_node_resources)))
        result = allocate(node, opts, pick_cpus=True)  # the CPUs themselves are compared
        if result.cpuset != designated.cpuset:
            raise AllocateRefused(Status(UNSCHEDULABLE, (ERR_NOT_ENOUGH_CPUS,)))
        return Outcome(result, opts)
    opts = replace(
        opts,
        required_resources=None,
        reusable_resources=append_allocated(restore.merged_unmatched_used, restore.merged_matched_allocated),
        preferred_cpus=CPUSet(),
    )
    return Outcome(run(node, opts), opts)


def allocate_any(
    node: NodeState, restore: NodeRestoreState, opts: ResourceOptions, ignored: bool, run: Allocator
) -> Outcome:
    """``Allocate`` (the Topology Manager's hint-provider call, and Filter's required-bind-policy check):
    every matched reservation, then the node."""
    outcome = try_allocate_from_reusable(node, restore, opts, restore.matched, ignored, run)
    if outcome.allocation is not None:
        return outcome
    return try_allocate_from_node(node, restore, outcome.options, None, run)


def hint_options(opts: ResourceOptions, restore: NodeRestoreState) -> ResourceOptions:
    """What ``GetTopologyHints`` judges availability on: the unmatched reservations' used part and the
    matched ones' whole reservation reusable, their remaining CPUs preferred."""
    return replace(
        opts,
        reusable_resources=append_allocated(
            restore.merged_unmatched_used, restore.merged_matched_allocatable
        ),
        preferred_cpus=restore.merged_matched_remain_cpus,
    )


def fits_under_hint(
    node: NodeState, restore: NodeRestoreState, ignored: bool
) -> Callable[[ResourceOptions], bool]:
    """The hint loop's check for one mask: ``tryAllocateFromReusable`` over every matched reservation,
    else ``tryAllocateFromNode``; any refusal drops the mask."""
    run = allocator(False)

    def fits(opts: ResourceOptions) -> bool:
        try:
            allocate_any(node, restore, replace(opts, required_resources=None), ignored, run)
        except AllocateRefused:
            return False
        return True

    return fits


def filter_nominate_reservation(
    node: NodeState, restore: NodeRestoreState, opts: ResourceOptions, uid: str, ignored: bool
) -> Status:
    """``FilterNominateReservation`` for a normal pod: a reservation reserving no NUMA resource or CPU
    passes; otherwise the pod must be allocatable from it under the stored hint."""
    alloc = restore.matched_by_uid(uid)
    if alloc is None:
        return Status()
    try:
        outcome = try_allocate_from_reusable(node, restore, opts, [alloc], ignored, allocator(False))
    except AllocateRefused as refused:
        return refused.status
    if outcome.allocation is None:
        return Status(UNSCHEDULABLE, (ERR_NOMINATE_NUMA_SCOPE,))
    return Status()


def reserve_pods(reservations: Iterable[Reservation]) -> list[Pod]:
    """``NewReservePod`` as far as the NUMA plugin's accounting goes: every active reservation is a pod on
    its node with the reservation's UID and annotations (its resource status)."""
    return [
        Pod(
            name=r.uid,
            namespace="default",
            uid=r.uid,
            containers=(),
            annotations=r.annotations,
            node_name=r.node_name,
        )
        for r in reservations
        if r.active
    ]
