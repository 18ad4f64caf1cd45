"""DeviceShare's GPU allocator (``allocator_gpu.go``: ``GPUAllocator.Allocate``, ``allocateByPartition``,
``selectPartitionByBinPack``, ``allocateByDeviceTopology``, ``allocateFromScope``), at
koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``.

Whole GPUs go by the node's partition table when it has one (the Device's ``gpu-partitions`` annotation or
the built-in NVIDIA Hopper table the Node's GPU model picks), else by the topology tree (the deepest scope —
PCIe switch, then NUMA node, then node — with enough free GPUs, preferring scopes already in use), else in
minor order. Not modelled: GPU shared-resource templates (never enforced here) and the device scorer
(``scoreDevice``): shared GPUs then tie at score 0 and the first free one in the scope wins. Partition
candidates with equal bin-pack scores keep table order (Go's ``sort.Slice`` is not stable).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubeletemu.scheduler.framework import UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE, Status
from kubeletemu.scheduler.koordinator.deviceshare import api
from kubeletemu.scheduler.koordinator.deviceshare.node_device import (
    DeviceResources,
    GPUPartitionIndexer,
    GPUTopologyScope,
    NodeDevice,
    designated_gpu_partition_indexer,
)
from kubeletemu.scheduler.koordinator.deviceshare.requests import GPURequirements
from kubeletemu.scheduler.koordinator.deviceshare.resourcelist import is_zero, less_than_or_equal

ERR_NO_GPU_REQUIREMENTS = "No GPU Requirements"
ERR_INSUFFICIENT_PARTITIONED_DEVICE = "Insufficient Partitioned GPU Devices"
ERR_INSUFFICIENT_TOPOLOGY_SCOPED_GPU_DEVICES = "Insufficient Topology Scoped GPU Devices"
ERR_INSUFFICIENT_GPU_DEVICES = "Insufficient GPU Devices"
ERR_NODE_MISSING_GPU_PARTITION_TABLE = "node(s) missing GPU Partition Table"
ERR_UNSUPPORTED_GPU_REQUESTS = "node(s) Unsupported number of GPU requests"
ERR_UNSUPPORTED_MULTI_SHARED_GPU = "node(s) Unsupported Multi-Shared GPU"
ERR_NODE_MISSING_GPU_DEVICE_TOPOLOGY_TREE = "node(s) missing GPU Device Topology Tree"


@dataclass(frozen=True)
class AllocateContext:
    used_minors_hash: int
    free: DeviceResources
    total: DeviceResources


def _status(code: str, reason: str) -> Status:
    return Status(code, (reason,))


def allocate_gpus(
    requirements: GPURequirements | None,
    original: NodeDevice,
    filtered: NodeDevice,
    node_labels: Mapping[str, str],
    desired: int,
    max_desired: int,
    default_allocate: object,
) -> tuple[list[api.DeviceAllocation], Status]:
    """``GPUAllocator.Allocate`` on the filtered devices; ``default_allocate`` is the callable of the last
    resort (``defaultAllocateDevices`` for the GPU type)."""
    if requirements is None:
        return [], _status(UNSCHEDULABLE, ERR_NO_GPU_REQUIREMENTS)
    honor = filtered.node_honor_gpu_partition
    indexer = filtered.gpu_partition_indexer
    if indexer is None:
        indexer, honor = designated_gpu_partition_indexer(node_labels)
    honor = requirements.honor_gpu_partition or honor
    filtered_total = filtered.total.get(api.GPU, {})
    real_used = {m for m in original.used.get(api.GPU, {}) if m not in filtered_total}
    real_used |= set(filtered.used.get(api.GPU, {}))
    context = AllocateContext(
        used_minors_hash=api.hash_minors(real_used),
        free=filtered.free.get(api.GPU, {}),
        total={m: r for m, r in filtered_total.items() if not is_zero(r)},
    )
    allocations, status = _by_partition(honor, requirements, indexer, context)
    if not status.ok:
        return [], status
    if allocations:
        return allocations, status
    allocations, status = _by_device_topology(requirements, filtered.gpu_topology_scope, context)
    if not status.ok:
        return [], status
    if allocations:
        return allocations, status
    assert callable(default_allocate)
    result: tuple[list[api.DeviceAllocation], Status] = default_allocate(requirements.requests_per_gpu)
    return result


def _by_partition(
    honor: bool, requirements: GPURequirements, indexer: GPUPartitionIndexer | None, context: AllocateContext
) -> tuple[list[api.DeviceAllocation], Status]:
    """``allocateByPartition``: its failures only count when the partition policy is honoured."""
    allocations, status = _partition(requirements, indexer, context)
    return allocations, status if honor else Status()


def _partition(
    requirements: GPURequirements, indexer: GPUPartitionIndexer | None, context: AllocateContext
) -> tuple[list[api.DeviceAllocation], Status]:
    if requirements.gpu_shared:
        return [], Status()
    if indexer is None:
        return [], _status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NODE_MISSING_GPU_PARTITION_TABLE)
    groups = indexer.get(requirements.number_of_gpus)
    if not groups:
        return [], _status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_UNSUPPORTED_GPU_REQUESTS)
    total_hash = api.hash_minors(context.total)
    feasible: list[api.GPUPartition] = []
    for group in groups:
        for partition in group.partitions:
            h = partition.minors_hash
            if h & context.used_minors_hash or total_hash & h != h:
                continue
            if requirements.ring_bus_bandwidth is not None and (
                partition.ring_bus_bandwidth is None
                or requirements.ring_bus_bandwidth > partition.ring_bus_bandwidth
            ):
                continue
            feasible.append(partition)
        if feasible or requirements.restricted_gpu_partition:
            break
    if not feasible:
        return [], _status(UNSCHEDULABLE, ERR_INSUFFICIENT_PARTITIONED_DEVICE)
    chosen = _bin_pack(context.used_minors_hash, feasible, indexer, requirements.number_of_gpus)
    return [api.DeviceAllocation(m, dict(requirements.requests_per_gpu)) for m in chosen.minors], Status()


def _bin_pack(
    used_hash: int, feasible: list[api.GPUPartition], indexer: GPUPartitionIndexer, desired: int
) -> api.GPUPartition:
    """``selectPartitionByBinPack``: the partition leaving the most large partitions free."""
    if len(feasible) == 1:
        return feasible[0]
    weights = {8: 10000, 4: 100, 2: 1}
    scored = []
    for partition in feasible:
        score = 0
        taken = used_hash | partition.minors_hash
        for count in (8, 4, 2):
            if count < desired or not indexer.get(count):
                continue
            for p in indexer[count][0].partitions:
                if not p.minors_hash & taken:
                    score += weights[count] * p.allocation_score
        scored.append((score, partition))
    return max(scored, key=lambda s: s[0])[1]


def _by_device_topology(
    requirements: GPURequirements, scope: GPUTopologyScope | None, context: AllocateContext
) -> tuple[list[api.DeviceAllocation], Status]:
    """``allocateByDeviceTopology``: an UnschedulableAndUnresolvable failure is dropped unless the pod
    requires a topology scope."""
    allocations, status = _topology(requirements, scope, context)
    if requirements.required_topology_scope == "" and status.code == UNSCHEDULABLE_AND_UNRESOLVABLE:
        return allocations, Status()
    return allocations, status


def _topology(
    requirements: GPURequirements, scope: GPUTopologyScope | None, context: AllocateContext
) -> tuple[list[api.DeviceAllocation], Status]:
    if scope is None:
        return [], _status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NODE_MISSING_GPU_DEVICE_TOPOLOGY_TREE)
    if requirements.gpu_shared and requirements.number_of_gpus > 1:
        return [], _status(UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_UNSUPPORTED_MULTI_SHARED_GPU)
    result = _from_scope(requirements, scope, context, 0, 0, {})
    if result is None:
        reason = (
            ERR_INSUFFICIENT_TOPOLOGY_SCOPED_GPU_DEVICES
            if requirements.required_topology_scope
            else ERR_INSUFFICIENT_GPU_DEVICES
        )
        return [], _status(UNSCHEDULABLE, reason)
    return result.allocations, Status()


@dataclass(frozen=True)
class _ScopeResult:
    allocations: list[api.DeviceAllocation]
    not_empties: int
    depth: int
    score: int


def _from_scope(
    requirements: GPURequirements,
    scope: GPUTopologyScope,
    context: AllocateContext,
    not_empties: int,
    depth: int,
    devices: dict[int, bool],
) -> _ScopeResult | None:
    """``allocateFromScope``: ``devices`` caches whether each minor fits (shared across the walk)."""
    if len(scope.minors) < requirements.number_of_gpus:
        return None
    depth += 1
    if scope.minors_hash & context.used_minors_hash:
        not_empties += 1
    best: _ScopeResult | None = None
    for child in scope.children:
        if len(child.minors) < requirements.number_of_gpus:
            continue
        found = _from_scope(requirements, child, context, not_empties, depth, devices)
        if found is None or not found.allocations:
            continue
        if best is None:
            best = found
            continue
        if best.depth < found.depth or (best.depth == found.depth and best.not_empties < found.not_empties):
            best = found
        if (
            requirements.gpu_shared
            and best.depth == found.depth
            and best.not_empties == found.not_empties
            and best.score < found.score
        ):
            best = found
    if best is not None and best.allocations:
        return best
    if requirements.required_topology_scope_level > scope.level:
        return None
    candidates: list[int] = []
    best_shared, best_shared_score = -1, -1
    satisfied = False
    for minor in scope.minors:
        if minor not in devices:
            devices[minor] = less_than_or_equal(requirements.requests_per_gpu, context.free.get(minor)) and (
                minor in context.total
            )
        if not devices[minor]:
            continue
        if not requirements.gpu_shared:
            candidates.append(minor)
            if len(candidates) == requirements.number_of_gpus:
                satisfied = True
                break
            continue
        satisfied = True
        if best_shared_score < 0:  # every device scores 0 without a scorer: the first one wins
            best_shared, best_shared_score = minor, 0
    if not satisfied:
        return None
    if requirements.gpu_shared:
        candidates.append(best_shared)
    allocations = [api.DeviceAllocation(m, dict(requirements.requests_per_gpu)) for m in candidates]
    return _ScopeResult(allocations, not_empties, depth, best_shared_score)
