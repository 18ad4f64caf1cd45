"""NodeNUMAResource's resource manager: NUMA hints and allocation for one pod on one node, as
koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` ships it
(``nodenumaresource/resource_manager.go``: ``GetTopologyHints``, ``trimNUMANodeResources``, ``Allocate``,
``allocateResourcesByHint``, ``tryBestToDistributeEvenly``, ``splitQuantity``, ``allocateCPUSet``,
``filterCPUsByRequiredCPUBindPolicy``, ``generateResourceHints``).

Behaviour mirrored, quirks included:

- hints: every NUMA mask (``IterateBitMasks`` order) on which the whole pod can be allocated gets a hint for
  each requested resource the zones list, unless a node of the mask has none of it left; preferred = the
  fewest NUMA nodes among that resource's hints, or *every* hint under Restricted; each hint is scored by the
  NUMA scorer on the mask (requested = allocatable − available); a listed resource with no hint gets ``[]``.
- ``tryBestToDistributeEvenly`` spreads each resource over the mask's nodes, each node taking
  min(available, remaining // nodes left) and the last what remains; the nodes are meant to be visited in
  ascending availability, but the shipped ``sort.Slice`` compares ``totalAvailable[i]`` by *position* ``i``,
  not by NUMA id, so the order is Go's insertion sort (slices of up to 12) driven by the positions. A
  remainder gives ``Insufficient NUMA <resource>`` (reasons sorted by resource name here; Go's map order is
  random).
- cpusets: :func:`allocate_cpuset` picks the CPUs as ``takePreferredCPUs`` does (see
  :mod:`~kubeletemu.scheduler.koordinator.cpu_accumulator`), per allocated NUMA node then on the rest of the
  node, in the order of the node's ``numa-allocate-strategy`` label (``GetNUMAAllocateStrategy``). Filter,
  Score and the hints only need whether it succeeds and how many CPUs it takes, so they use
  :func:`count_cpuset`: with enough available CPUs ``takeCPUs`` always succeeds (its last fallback takes any
  free CPU); the per-NUMA counts are ``min(available there, allocated cpu // 1000)`` and must add up to the
  request; under a *required* FullPCPUs policy each NUMA node's count must be whole cores (the available CPUs
  are whole free cores, and the accumulator takes whole cores of them whenever the count allows).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction

from kubeletemu.bitmask import BitMask, iterate_bitmasks
from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.lifecycle.resources import Resource
from kubeletemu.scheduler.framework import UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE, Status
from kubeletemu.scheduler.koordinator import extension as ext
from kubeletemu.scheduler.koordinator.allocation import NodeAllocation, add_resources, subtract_non_negative
from kubeletemu.scheduler.koordinator.cpu_accumulator import AccumulatorError, take_preferred_cpus
from kubeletemu.scheduler.koordinator.cpu_topology import CPUInfo, CPUTopology
from kubeletemu.scheduler.koordinator.merge import POLICY_RESTRICTED, NUMATopologyHint
from kubeletemu.scheduler.koordinator.options import NUMANodeResource, TopologyOptions
from kubeletemu.scheduler.koordinator.scoring import LEAST_ALLOCATED, Scorer

ERR_INVALID_CPU_TOPOLOGY = "node(s) invalid CPU Topology"
ERR_NOT_ENOUGH_CPUS = "not enough cpus available to satisfy request"
ERR_INSUFFICIENT_ON_NUMA = "insufficient resources on NUMA Node"
# Go's sort.Slice runs insertion sort on slices this short (pdqsort's cut-off).
_INSERTION_SORT_MAX = 12

Resources = dict[str, Fraction]


class ResourceError(Exception):
    """An ``error`` of the resource manager; ``str()`` is its text."""


@dataclass(frozen=True)
class NodeState:
    """A node as the plugin's managers hold it: its options, its accounting, its Node's labels,
    annotations, and the scheduler's allocatable and requested for it."""

    name: str
    options: TopologyOptions
    allocation: NodeAllocation
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    allocatable: Resource = field(default_factory=Resource)
    requested: Resource = field(default_factory=Resource)


@dataclass(frozen=True)
class ResourceOptions:
    """``ResourceOptions``. The reservation and designated-allocation fields (``preferredCPUs``,
    ``reusableResources``, ``requiredResources``, ``requiredFromReservation``) are set by
    :mod:`~kubeletemu.scheduler.koordinator.reservation`; preemption's are not modelled (always empty)."""

    requests: Mapping[str, Fraction]
    original_requests: Mapping[str, Fraction]
    num_cpus_needed: int
    request_cpu_bind: bool
    required_cpu_bind_policy: bool
    cpu_bind_policy: str
    cpu_exclusive_policy: str
    hint: NUMATopologyHint
    topology: TopologyOptions
    numa_scorer: Scorer | None = None
    numa_allocate_strategy: str = LEAST_ALLOCATED
    preferred_cpus: CPUSet = field(default_factory=CPUSet)
    reusable_resources: Mapping[int, Mapping[str, Fraction]] = field(default_factory=dict)
    # None or empty: allocate from the node's available NUMA resources (Go: len(requiredResources) == 0).
    required_resources: Mapping[int, Mapping[str, Fraction]] | None = None
    required_from_reservation: bool = False


@dataclass(frozen=True)
class PodAllocation:
    """What ``Allocate`` returns: NUMA resources per node, the size of the cpuset (0 = none) and, when
    asked for (:func:`allocate` with ``pick_cpus``), the CPUs themselves."""

    numa_node_resources: tuple[NUMANodeResource, ...] = ()
    num_cpus: int = 0
    cpuset: CPUSet = field(default_factory=CPUSet)


def available_cpus(node: NodeState, *preferred: CPUSet) -> tuple[CPUSet, dict[int, CPUInfo]]:
    """``resourceManager.GetAvailableCPUs``: empty without a topology; an invalid one is an error. Each
    ``preferred`` set gives back one reference of its CPUs (a reservation's reserved CPUs)."""
    topology = node.options.cpu_topology
    if topology is None:
        return CPUSet(), {}
    if not topology.is_valid():
        raise ResourceError(ERR_INVALID_CPU_TOPOLOGY)
    return node.allocation.available_cpus(
        topology, node.options.max_ref_count, node.options.reserved_cpus, *preferred
    )


def filter_cpus_by_required_policy(
    policy: str, available: CPUSet, topology: CPUTopology, cpus_per_core: int
) -> CPUSet:
    """``filterCPUsByRequiredCPUBindPolicy``: FullPCPUs keeps whole free cores, SpreadByPCPUs the lowest
    free CPU of each core."""
    by_core: dict[int, list[int]] = {}
    for cpu in available:
        info = topology.details.get(cpu)
        if info is not None:
            by_core.setdefault(info.core, []).append(cpu)
    if policy == ext.CPU_BIND_FULL_PCPUS:
        return CPUSet(c for cpus in by_core.values() if len(cpus) == cpus_per_core for c in cpus)
    if policy == ext.CPU_BIND_SPREAD_BY_PCPUS:
        return CPUSet(min(cpus) for cpus in by_core.values())
    return available


def trim_numa_resources(node: NodeState, available: dict[int, Resources], opts: ResourceOptions) -> None:
    """``trimNUMANodeResources``: under a required bind policy a NUMA node's cpu is capped at the CPUs the
    policy can still use there."""
    if not opts.required_cpu_bind_policy:
        return
    cpus, _ = available_cpus(node, opts.preferred_cpus)
    topology = opts.topology.cpu_topology
    assert topology is not None
    for numa, resources in available.items():
        cpu = resources.get("cpu", Fraction(0))
        if cpu == 0:
            continue
        usable = filter_cpus_by_required_policy(
            opts.cpu_bind_policy,
            topology.cpus_in_numa_nodes(numa, only=cpus),
            topology,
            topology.cpus_per_core(),
        )
        if usable.size() * 1000 < _milli(cpu):
            resources["cpu"] = Fraction(usable.size())


def _milli(amount: Fraction) -> int:
    return math.ceil(amount * 1000)


def _value(amount: Fraction) -> int:
    """``Quantity.Value``: rounded away from zero."""
    return math.ceil(amount) if amount >= 0 else -math.ceil(-amount)


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_sort_positions(values: list[int], less: Callable[[int, int], bool]) -> list[int]:
    """``sort.Slice(values, less)`` where ``less`` reads positions only: Go's insertion sort (pdqsort
    below its cut-off). Longer slices go through pdqsort in Go, which is not reproduced."""
    if len(values) > _INSERTION_SORT_MAX:
        raise NotImplementedError("sort.Slice over more than 12 NUMA nodes (pdqsort) is not modelled")
    out = list(values)
    for i in range(1, len(out)):
        j = i
        while j > 0 and less(j, j - 1):
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return out


def split_quantity(name: str, remaining: Fraction, nodes_left: int, opts: ResourceOptions) -> Fraction:
    """``splitQuantity``."""
    if name != "cpu":
        return Fraction(_go_div(_value(remaining), nodes_left))
    if not opts.request_cpu_bind:
        return Fraction(_go_div(_milli(remaining), nodes_left), 1000)
    if opts.required_cpu_bind_policy and opts.cpu_bind_policy == ext.CPU_BIND_FULL_PCPUS:
        topology = opts.topology.cpu_topology
        assert topology is not None
        per_core = topology.cpus_per_core()
        pcpus = _go_div(_value(remaining), per_core)
        return Fraction(_go_div(pcpus, nodes_left) * per_core)
    return Fraction(_go_div(_value(remaining), nodes_left))


def distribute_evenly(
    requests: Mapping[str, Fraction], available: Mapping[int, Mapping[str, Fraction]], opts: ResourceOptions
) -> tuple[tuple[NUMANodeResource, ...], list[str]]:
    """``tryBestToDistributeEvenly`` over the hint's NUMA nodes."""
    assert opts.hint.affinity is not None
    names = {name for resources in available.values() for name in resources}
    nodes = opts.hint.affinity.bits()
    zero = Fraction(0)
    order: dict[str, list[int]] = {}
    for name in names:

        def less(i: int, j: int, name: str = name) -> bool:
            return available.get(i, {}).get(name, zero) < available.get(j, {}).get(name, zero)

        order[name] = go_sort_positions(nodes, less)
    allocated: dict[int, Resources] = {}
    left: dict[str, Fraction] = {}
    for name, quantity in requests.items():
        for i, node in enumerate(order.get(name, [])):
            share = split_quantity(name, quantity, len(nodes) - i, opts)
            taken = min(available.get(node, {}).get(name, zero), share)
            if taken != 0:
                allocated.setdefault(node, {})[name] = taken
                quantity -= taken
        left[name] = quantity
    reasons = [f"Insufficient NUMA {name}" for name in sorted(left) if name in names and left[name] != 0]
    return tuple(NUMANodeResource(n, allocated[n]) for n in sorted(allocated)), reasons


@dataclass(frozen=True)
class NodeAvailability:
    """What ``Allocate`` reads of the node that no hint changes, for a run of allocations on one node
    with the same options (``generateResourceHints`` tries one per NUMA mask): the NUMA resources left
    after ``trimNUMANodeResources`` and the available CPUs (None: work it out, raising as it does)."""

    numa: Mapping[int, Mapping[str, Fraction]]
    cpus: CPUSet | None


def allocate_by_hint(
    node: NodeState, opts: ResourceOptions, known: NodeAvailability | None = None
) -> tuple[NUMANodeResource, ...]:
    """``allocateResourcesByHint``; raises :class:`AllocateRefused` with the status."""
    if not opts.topology.numa_node_resources:
        raise AllocateRefused(Status(UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_INSUFFICIENT_ON_NUMA,)))
    if known is not None:
        available: Mapping[int, Mapping[str, Fraction]] = known.numa
    else:
        if opts.required_resources:
            # The shipped code trims the reservation's own map in place; a copy is trimmed here.
            trimmed = {n: dict(r) for n, r in opts.required_resources.items()}
        else:
            trimmed, _ = node.allocation.available_numa_resources(opts.topology, opts.reusable_resources)
        try:
            trim_numa_resources(node, trimmed, opts)
        except ResourceError as err:
            raise AllocateRefused(Status(UNSCHEDULABLE_AND_UNRESOLVABLE, (str(err),))) from None
        available = trimmed
    result, reasons = distribute_evenly(opts.original_requests, available, opts)
    if reasons:
        raise AllocateRefused(Status(UNSCHEDULABLE, tuple(reasons)))
    return result


class AllocateRefused(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


def count_cpuset(
    node: NodeState, numa: Sequence[NUMANodeResource], opts: ResourceOptions, known: CPUSet | None = None
) -> int:
    """``allocateCPUSet``, as far as success and the number of CPUs go (see the module docstring); raises
    :class:`ResourceError`. ``known``: the node's available CPUs when the caller has them."""
    cpus = known if known is not None else available_cpus(node, opts.preferred_cpus)[0]
    cpus, topology = _bindable_cpus(cpus, opts)
    needed = opts.num_cpus_needed
    per_numa: list[int] = []
    if numa:
        for entry in numa:
            there = topology.cpus_in_numa_nodes(entry.node, only=cpus).size()
            per_numa.append(min(there, _milli(entry.resources.get("cpu", Fraction(0))) // 1000))
        needed -= sum(per_numa)
        if needed != 0:
            raise ResourceError(ERR_NOT_ENOUGH_CPUS)
    full_cores = opts.required_cpu_bind_policy and opts.cpu_bind_policy == ext.CPU_BIND_FULL_PCPUS
    per_core = topology.cpus_per_core()
    if full_cores and any(n % per_core for n in [*per_numa, needed]):
        raise ResourceError(_unsatisfied_policy(opts.cpu_bind_policy))
    return opts.num_cpus_needed


def _bindable_cpus(cpus: CPUSet, opts: ResourceOptions) -> tuple[CPUSet, CPUTopology]:
    """``allocateCPUSet``'s first steps, shared by the count and the pick: the available CPUs a required
    bind policy leaves, refused when fewer than needed."""
    topology = opts.topology.cpu_topology
    assert topology is not None
    if opts.required_cpu_bind_policy:
        cpus = filter_cpus_by_required_policy(opts.cpu_bind_policy, cpus, topology, topology.cpus_per_core())
    if cpus.size() < opts.num_cpus_needed:
        raise ResourceError(ERR_NOT_ENOUGH_CPUS)
    return cpus, topology


def _unsatisfied_policy(policy: str) -> str:
    return f"insufficient CPUs to satisfy required cpu bind policy {policy}"


def allocate_cpuset(node: NodeState, numa: Sequence[NUMANodeResource], opts: ResourceOptions) -> CPUSet:
    """``allocateCPUSet``: the CPUs ``takePreferredCPUs`` picks, first on each allocated NUMA node (as many
    as its cpu share and its available CPUs allow), then any still needed from the node's other available
    CPUs; raises :class:`ResourceError`. The options' preferred CPUs (a reservation's) are given back and
    taken first."""
    available, held = available_cpus(node, opts.preferred_cpus)
    cpus, topology = _bindable_cpus(available, opts)

    def take(available: CPUSet, count: int) -> CPUSet:
        try:
            return take_preferred_cpus(
                topology,
                opts.topology.max_ref_count,
                available,
                opts.preferred_cpus,
                held,
                count,
                opts.cpu_bind_policy,
                opts.cpu_exclusive_policy,
                opts.numa_allocate_strategy,
            )
        except AccumulatorError as err:
            raise ResourceError(str(err)) from None

    result = CPUSet()
    needed = opts.num_cpus_needed
    if numa:
        for entry in numa:
            there = topology.cpus_in_numa_nodes(entry.node, only=cpus)
            count = min(there.size(), _milli(entry.resources.get("cpu", Fraction(0))) // 1000)
            result = result.union(take(there, count))
        needed -= result.size()
        if needed != 0:
            raise ResourceError(ERR_NOT_ENOUGH_CPUS)
    if needed > 0:
        result = result.union(take(cpus.difference(result), needed))
    if opts.required_cpu_bind_policy and not _satisfies_policy(opts.cpu_bind_policy, result, topology):
        raise ResourceError(_unsatisfied_policy(opts.cpu_bind_policy))
    return result


def _satisfies_policy(policy: str, cpus: CPUSet, topology: CPUTopology) -> bool:
    """``satisfiedRequiredCPUBindPolicy``: FullPCPUs = whole cores, SpreadByPCPUs = one CPU per core."""
    cores = {topology.details[c].core for c in cpus if c in topology.details}
    if policy == ext.CPU_BIND_FULL_PCPUS:
        return len(cores) * topology.cpus_per_core() == cpus.size()
    if policy == ext.CPU_BIND_SPREAD_BY_PCPUS:
        return len(cores) == cpus.size()
    return True


def allocate(
    node: NodeState, opts: ResourceOptions, known: NodeAvailability | None = None, pick_cpus: bool = False
) -> PodAllocation:
    """``resourceManager.Allocate`` through ``tryAllocateFromNode`` (no reservation, no preemption);
    raises :class:`AllocateRefused`. ``known``: what the caller already worked out for this node and
    options (everything but the hint). ``pick_cpus``: choose the CPUs (Reserve) rather than only count
    them (Filter, Score, hints: the same success and size, see the module docstring)."""
    numa: tuple[NUMANodeResource, ...] = ()
    if opts.hint.affinity is not None:
        numa = allocate_by_hint(node, opts, known)
    if not opts.request_cpu_bind:
        return PodAllocation(numa)
    try:
        if pick_cpus:
            cpuset = allocate_cpuset(node, numa, opts)
            return PodAllocation(numa, cpuset.size(), cpuset)
        count = count_cpuset(node, numa, opts, known.cpus if known is not None else None)
    except ResourceError as err:
        raise AllocateRefused(Status(UNSCHEDULABLE, (str(err),))) from None
    return PodAllocation(numa, count)


def topology_hints(
    node: NodeState,
    opts: ResourceOptions,
    policy: str,
    fits: Callable[[ResourceOptions], bool] | None = None,
) -> dict[str, list[NUMATopologyHint]]:
    """``GetTopologyHints``; raises :class:`ResourceError` when it errors. The availability the hints are
    judged on takes the options' reusable resources and preferred CPUs (a reservation restore state's);
    ``fits`` tells whether the pod can be allocated under a mask's hint (default: from the node alone)."""
    topo = opts.topology
    if not topo.numa_node_resources:
        raise ResourceError("insufficient resources on NUMA Node")
    available, _ = node.allocation.available_numa_resources(topo, opts.reusable_resources)
    trim_numa_resources(node, available, opts)
    return _generate_hints(node, opts, available, policy, fits)


def _generate_hints(
    node: NodeState,
    opts: ResourceOptions,
    available: Mapping[int, Mapping[str, Fraction]],
    policy: str,
    fits: Callable[[ResourceOptions], bool] | None = None,
) -> dict[str, list[NUMATopologyHint]]:
    """``generateResourceHints``."""
    numa_resources = opts.topology.numa_node_resources
    listed = {name for entry in numa_resources for name in entry.resources}
    lacking = {
        name: {node_id for node_id, res in available.items() if res.get(name, Fraction(0)) == 0}
        for name in listed
    }
    min_size = {name: len(numa_resources) for name in opts.requests}
    hints: dict[str, list[NUMATopologyHint]] = {}
    known = NodeAvailability(available, _available_cpus_or_none(node) if opts.request_cpu_bind else None)
    pod = Resource.from_list(opts.requests)
    seen: set[str] = set()
    for mask in iterate_bitmasks([entry.node for entry in numa_resources]):
        free: Resources = {}
        total: Resources = {}
        for node_id in mask.bits():
            add_resources(free, available.get(node_id, {}))
            entry = next((e for e in numa_resources if e.node == node_id), None)
            if entry is not None:
                add_resources(total, entry.resources)
        seen.update(name for name in opts.requests if name in total)
        score = 0
        if opts.numa_scorer is not None:
            used = subtract_non_negative(total, free)
            score = opts.numa_scorer.score(Resource.from_list(used), Resource.from_list(total), pod)
        if fits is not None:
            if not fits(replace(opts, hint=NUMATopologyHint(mask))):
                continue
        else:
            try:
                allocate(node, replace(opts, hint=NUMATopologyHint(mask)), known)
            except AllocateRefused:
                continue
        for name in sorted(seen):
            if mask.any_set(lacking.get(name, set())):
                continue
            min_size[name] = min(min_size.get(name, mask.count()), mask.count())
            hints.setdefault(name, []).append(NUMATopologyHint(mask, score=score))
    for name in opts.requests:
        if name in hints:
            hints[name] = [
                replace(h, preferred=_count(h.affinity) == min_size[name] or policy == POLICY_RESTRICTED)
                for h in hints[name]
            ]
        elif name in seen:
            hints[name] = []
    return hints


def _available_cpus_or_none(node: NodeState) -> CPUSet | None:
    """The node's available CPUs; None where working them out errs (each allocation then errs itself)."""
    try:
        return available_cpus(node)[0]
    except ResourceError:
        return None


def _count(mask: BitMask | None) -> int:
    return 0 if mask is None else mask.count()
