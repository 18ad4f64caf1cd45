"""DeviceShare as a NUMA hint provider (``topology_hint.go``: ``GetPodTopologyHints``,
``generateTopologyHints``, ``Allocate``, ``hashAllocateResult``, ``calcTotalDevicesByNUMA``), at
koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``.

For every subset of the NUMA nodes that hold devices (``IterateBitMasks`` order), the allocator is run
restricted to it; a feasible subset is a hint for every requested device type, preferred when it is as
narrow as the narrowest feasible one, scored 500 when its GPUs are the ones the whole-node allocation picks
(``hashAllocateResult`` looks at GPU minors only, so without GPUs every hint scores 500). The whole-node
attempt's failure is the provider's status. Reservations are not modelled; of designated allocations (a
scheduling hint naming DeviceShare) only their hints are (``generateDesignatedHints``,
:func:`designated_hints`): PreFilter does not keep them yet, so the plugin never takes that path.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubeletemu.bitmask import BitMask, BitMaskError, iterate_bitmasks
from kubeletemu.scheduler.framework import UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE, Status
from kubeletemu.scheduler.koordinator.deviceshare import api
from kubeletemu.scheduler.koordinator.deviceshare.allocator import Allocations, AutopilotAllocator
from kubeletemu.scheduler.koordinator.deviceshare.node_device import NodeDevice, NUMATopology
from kubeletemu.scheduler.koordinator.deviceshare.requests import PreFilterState
from kubeletemu.scheduler.koordinator.merge import NUMATopologyHint

ERR_INSUFFICIENT_NUMA_SCOPED_DEVICES = "Insufficient NUMA Scoped Devices"
ERR_DESIGNATED_ALLOCATION_LACK_NUMA = "Designated Allocation Lack NUMA Node ID"
DEFAULT_NUMA_SCORE = 500

Hints = dict[str, list[NUMATopologyHint]]


def _gpu_hash(allocations: Allocations) -> int:
    return api.hash_minors(a.minor for a in allocations.get(api.GPU, []))


def _total_by_numa(node: NodeDevice, numa_nodes: list[int]) -> dict[str, int]:
    """``calcTotalDevicesByNUMA``: every device on those NUMA nodes, used or not, healthy or not."""
    out: dict[str, int] = {}
    for n in numa_nodes:
        for pcie in node.topology.nodes.get(n, ()):
            for device_type, minors in pcie.devices.items():
                out[device_type] = out.get(device_type, 0) + len(minors)
    return out


def topology_hints(
    state: PreFilterState, node: NodeDevice, node_labels: Mapping[str, str]
) -> tuple[Hints | None, Status]:
    """``generateTopologyHints``: (hints, status); None hints with a success status is a nil map."""
    allocator = AutopilotAllocator(state, node, node_labels)
    numa_nodes = sorted(node.topology.nodes)
    min_affinity: dict[str, int] | None = None
    unsatisfied = Status()
    best: Allocations = {}
    feasible: list[tuple[BitMask, Allocations]] = []
    for mask in iterate_bitmasks(numa_nodes):
        allocator.numa_nodes = mask
        status, result, counted = _try(allocator, node, mask)
        if counted and min_affinity is None:
            assert allocator.requests_per_instance is not None
            min_affinity = {t: len(numa_nodes) for t in allocator.requests_per_instance}
        if mask.count() == len(numa_nodes):
            unsatisfied, best = status, result
        if status.ok and result:
            assert min_affinity is not None
            for t in min_affinity:
                min_affinity[t] = min(min_affinity[t], mask.count())
            feasible.append((mask, result))
    best_hash = _gpu_hash(best)
    hints: Hints = {}
    for mask, result in feasible:
        score = DEFAULT_NUMA_SCORE if _gpu_hash(result) == best_hash else 0
        for t in min_affinity or {}:
            hints.setdefault(t, []).append(NUMATopologyHint(mask, score=score))
    for t, size in (min_affinity or {}).items():
        if t not in hints:
            return None, unsatisfied
        hints[t] = [
            NUMATopologyHint(
                h.affinity, preferred=h.affinity is not None and h.affinity.count() == size, score=h.score
            )
            for h in hints[t]
        ]
    if not unsatisfied.ok:
        return None, unsatisfied
    return hints, Status()


def designated_hints(
    allocations: api.DeviceAllocations, topology: NUMATopology
) -> tuple[Hints | None, Status]:
    """``generateDesignatedHints``: every type of the designated allocation gets one preferred hint, scored
    500, over the NUMA nodes of all its devices (every type's, together); a device the NUMA topology does
    not place (unknown type or minor, or ``nodeID`` -1) is Unschedulable."""
    numa_nodes: set[int] = set()
    for device_type, items in allocations.items():
        by_minor = topology.device_to_node.get(device_type)
        for item in items:
            if by_minor is None or item.minor not in by_minor:
                return None, Status(UNSCHEDULABLE, (ERR_DESIGNATED_ALLOCATION_LACK_NUMA,))
            numa_nodes.add(by_minor[item.minor])
    try:
        affinity = BitMask.of(*numa_nodes)
    except BitMaskError as err:
        return None, Status(UNSCHEDULABLE, (str(err),))
    hint = NUMATopologyHint(affinity, preferred=True, score=DEFAULT_NUMA_SCORE)
    return {device_type: [hint] for device_type in allocations}, Status()


def _try(allocator: AutopilotAllocator, node: NodeDevice, mask: BitMask) -> tuple[Status, Allocations, bool]:
    """One subset: Prepare, the count check (every device on the subset counts), then the allocation; the
    flag says the count check was passed."""
    status = allocator.prepare()
    if not status.ok:
        return status, {}, False
    totals = _total_by_numa(node, mask.bits())
    for device_type in sorted(allocator.desired_count):
        wanted = allocator.desired_count[device_type]
        if device_type in totals and totals[device_type] < wanted:
            return Status(UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_INSUFFICIENT_NUMA_SCOPED_DEVICES,)), {}, False
    allocations, status = allocator.allocate()
    return status, allocations, True


def allocate_with_affinity(
    state: PreFilterState, node: NodeDevice, node_labels: Mapping[str, str], affinity: NUMATopologyHint
) -> Status:
    """``Allocate`` (the Topology Manager's call after the merge): an allocation must fit the affinity."""
    allocator = AutopilotAllocator(state, node, node_labels, numa_nodes=affinity.affinity)
    return allocator.allocate()[1]
