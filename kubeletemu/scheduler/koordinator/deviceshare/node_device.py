"""A node's devices as DeviceShare's cache holds them (``device_cache.go``: ``nodeDevice``,
``buildDeviceResources``, ``resetDeviceFree``, ``filter``, ``filterFreeDevicesByPCIe``;
``numa_topology.go``: ``newNUMATopology``; ``allocator_gpu_helper.go``: ``GetGPUTopologyScope``,
``GetGPUPartitionIndexer``), at koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``.

Total: each device of the ``Device`` object with its resources (an unhealthy one with none). Used: the sum of
the ``device-allocated`` annotations of the node's non-terminated pods (an annotation that fails to decode
is skipped, as the pod event handler logs and skips it). A device used but absent from the Device object
is in the total with no resources, as ``resetDeviceFree`` leaves it. A node has a device cache entry when it
has a Device object or a pod holding devices; without one, DeviceShare leaves the node alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from kubeletemu.pod import Pod
from kubeletemu.scheduler.framework import NodeInfo, memo
from kubeletemu.scheduler.koordinator.deviceshare import api
from kubeletemu.scheduler.koordinator.deviceshare.resourcelist import (
    ResourceList,
    add,
    is_zero,
    subtract_non_negative,
)
from kubeletemu.scheduler.koordinator.extension import AnnotationError
from kubeletemu.scheduler.objects import Device, DeviceInfo
from kubeletemu.scheduler.pod_phase import is_pod_terminated

DeviceResources = dict[int, ResourceList]


@dataclass(frozen=True)
class PCIe:
    socket: int
    node: int
    pcie: str
    devices: Mapping[str, tuple[int, ...]]


@dataclass(frozen=True)
class NUMATopology:
    """``NUMATopology``: per NUMA node its PCIe switches and their devices (devices without topology or
    with ``nodeID`` -1 are not in it)."""

    nodes: Mapping[int, tuple[PCIe, ...]] = field(default_factory=dict)
    device_to_node: Mapping[str, Mapping[int, int]] = field(default_factory=dict)


def numa_topology(infos: Sequence[DeviceInfo]) -> NUMATopology:
    """``newNUMATopology``."""
    by_pcie: dict[tuple[int, int, str], dict[str, list[int]]] = {}
    to_node: dict[str, dict[int, int]] = {}
    for info in infos:
        if info.topology is None or info.topology.node_id == -1:
            continue
        key = (info.topology.socket_id, info.topology.node_id, info.topology.pcie_id)
        by_pcie.setdefault(key, {}).setdefault(info.type, []).append(info.minor)
        to_node.setdefault(info.type, {})[info.minor] = info.topology.node_id
    nodes: dict[int, list[PCIe]] = {}
    for (socket, node, pcie), devices in by_pcie.items():
        nodes.setdefault(node, []).append(PCIe(socket, node, pcie, {t: tuple(m) for t, m in devices.items()}))
    return NUMATopology({n: tuple(p) for n, p in nodes.items()}, to_node)


@dataclass(frozen=True)
class GPUTopologyScope:
    """A node of ``GetGPUTopologyScope``'s tree: Node → NUMA nodes (by id) → PCIe switches (by id)."""

    level: int
    minors_resources: DeviceResources
    minors: tuple[int, ...]
    minors_hash: int
    children: tuple[GPUTopologyScope, ...] = ()


def _scope(
    level: int, resources: DeviceResources, children: tuple[GPUTopologyScope, ...] = ()
) -> GPUTopologyScope:
    return GPUTopologyScope(level, resources, tuple(sorted(resources)), api.hash_minors(resources), children)


def gpu_topology_scope(infos: Sequence[DeviceInfo], resources: DeviceResources) -> GPUTopologyScope | None:
    """``GetGPUTopologyScope``: None without GPUs or when one has no topology."""
    if not infos or any(i.topology is None for i in infos):
        return None
    numa: dict[int, DeviceResources] = {}
    pcie: dict[int, dict[str, DeviceResources]] = {}
    for info in infos:
        assert info.topology is not None
        node = info.topology.node_id
        numa.setdefault(node, {})[info.minor] = resources.get(info.minor, {})
        pcie.setdefault(node, {}).setdefault(info.topology.pcie_id, {})[info.minor] = resources.get(
            info.minor, {}
        )
    children = tuple(
        _scope(
            api.TOPOLOGY_SCOPE_LEVEL[api.SCOPE_NUMA_NODE],
            numa[node],
            tuple(
                _scope(api.TOPOLOGY_SCOPE_LEVEL[api.SCOPE_PCIE], pcie[node][p]) for p in sorted(pcie[node])
            ),
        )
        for node in sorted(numa)
    )
    return _scope(api.TOPOLOGY_SCOPE_LEVEL[api.SCOPE_NODE], resources, children)


@dataclass(frozen=True)
class PartitionsOfScore:
    allocation_score: int
    partitions: tuple[api.GPUPartition, ...]


GPUPartitionIndexer = Mapping[int, tuple[PartitionsOfScore, ...]]


def gpu_partition_indexer(
    table: Mapping[int, Sequence[api.GPUPartition]] | None,
) -> GPUPartitionIndexer | None:
    """``GetGPUPartitionIndexer``: per number of GPUs, partitions grouped by allocation score, ascending."""
    if table is None:
        return None
    out: dict[int, tuple[PartitionsOfScore, ...]] = {}
    for count, partitions in table.items():
        groups: dict[int, list[api.GPUPartition]] = {}
        for p in partitions:
            groups.setdefault(p.allocation_score, []).append(p)
        out[count] = tuple(PartitionsOfScore(s, tuple(groups[s])) for s in sorted(groups))
    return out


def _hopper() -> GPUPartitionIndexer:
    """``GPUPartitionIndexOfNVIDIAHopper``: 8 GPUs, NVLink pairs, quads and the whole board."""
    table = {n: [api.GPUPartition(tuple(range(i, i + n)), 1) for i in range(0, 8, n)] for n in (1, 2, 4, 8)}
    indexer = gpu_partition_indexer(table)
    assert indexer is not None
    return indexer


HOPPER_INDEXER = _hopper()
HOPPER_MODELS = ("H100", "H800", "H20")


def designated_gpu_partition_indexer(labels: Mapping[str, str]) -> tuple[GPUPartitionIndexer | None, bool]:
    """``GetDesignatedGPUPartitionIndexer``: the Node's GPU model picks a built-in table (NVIDIA Hopper);
    the second value is the Node's partition policy being Honor."""
    vendor = labels.get(api.LABEL_GPU_VENDOR, "")
    indexer = None
    if vendor in ("", api.GPU_VENDOR_NVIDIA) and labels.get(api.LABEL_GPU_MODEL, "") in HOPPER_MODELS:
        indexer = HOPPER_INDEXER
    return indexer, api.gpu_partition_policy_honor(labels)


@dataclass
class NodeDevice:
    """``nodeDevice``: totals, use and free amounts per device type and minor."""

    total: dict[str, DeviceResources] = field(default_factory=dict)
    used: dict[str, DeviceResources] = field(default_factory=dict)
    free: dict[str, DeviceResources] = field(default_factory=dict)
    allocated_vfs: dict[str, dict[int, set[str]]] = field(default_factory=dict)
    infos: dict[str, tuple[DeviceInfo, ...]] = field(default_factory=dict)
    topology: NUMATopology = field(default_factory=NUMATopology)
    secondary_device_well_planned: bool = False
    node_honor_gpu_partition: bool = False
    gpu_partition_indexer: GPUPartitionIndexer | None = None
    gpu_topology_scope: GPUTopologyScope | None = None

    def reset_free(self) -> None:
        """``resetDeviceTotal`` + ``resetDeviceFree`` for every type."""
        for device_type in list(self.used):
            self.total.setdefault(device_type, {})
        for device_type, total in self.total.items():
            free = {m: dict(r) for m, r in total.items()}
            for minor, used in self.used.get(device_type, {}).items():
                total.setdefault(minor, {})
                free[minor] = subtract_non_negative(total[minor], used)
            self.free[device_type] = free

    def filter(self, devices: Mapping[str, Iterable[int]], hints: Mapping[str, api.DeviceHint]) -> NodeDevice:
        """``nodeDevice.filter`` (no preemptible or required device resources: none in one cycle).
        ``hints`` is read by the shipped code only for the PCIe-level exclusive policy, whose result it
        drops; kept for the signature."""
        total: dict[str, DeviceResources] = {}
        used: dict[str, DeviceResources] = {}
        for device_type, minors in devices.items():
            free_devices = self.free.get(device_type, {})
            if all(is_zero(v) for v in free_devices.values()):
                continue
            wanted = set(minors)
            # A PCIeLevel exclusive policy computes the minors of wholly free PCIe switches
            # (``filterFreeDevicesByPCIe``), but ``minors.Intersection(...)`` returns a new set that the
            # shipped code drops: the policy filters nothing (device_allocator_test.go
            # TestAutopilotAllocatorWithExclusivePolicyAndRequiredScope "allocate 3 GPU and 2 VF with
            # assigned devices" fails only this way).
            original = self.total.get(device_type, {})
            total_by_type: DeviceResources = {}
            used_by_type: DeviceResources = {}
            for minor, free in free_devices.items():
                if minor in wanted:
                    total_by_type[minor] = dict(original.get(minor, {}))
                    taken = subtract_non_negative(original.get(minor, {}), free)
                    if not is_zero(taken):
                        used_by_type[minor] = taken
            total[device_type] = total_by_type
            used[device_type] = used_by_type
        out = NodeDevice(
            total=total,
            used=used,
            allocated_vfs=self.allocated_vfs,
            infos=self.infos,
            topology=self.topology,
            secondary_device_well_planned=self.secondary_device_well_planned,
            node_honor_gpu_partition=self.node_honor_gpu_partition,
            gpu_partition_indexer=self.gpu_partition_indexer,
            gpu_topology_scope=self.gpu_topology_scope,
        )
        out.reset_free()
        return out


def build_node_device(device: Device | None, pods: Iterable[Pod]) -> NodeDevice | None:
    """The node's cache entry from its Device object and bound pods; None when it has neither."""
    used: dict[str, DeviceResources] = {}
    vfs: dict[str, dict[int, set[str]]] = {}
    any_pod = False
    for pod in pods:
        if is_pod_terminated(pod):
            continue
        try:
            allocations = api.device_allocations(pod.annotations)
        except AnnotationError:
            continue
        if not allocations:
            continue
        any_pod = True
        for device_type, items in allocations.items():
            by_minor = used.setdefault(device_type, {})
            for item in items:
                by_minor[item.minor] = add(by_minor.get(item.minor, {}), item.resources)
                if item.vfs:
                    vfs.setdefault(device_type, {}).setdefault(item.minor, set()).update(
                        v.bus_id for v in item.vfs
                    )
    if device is None and not any_pod:
        return None
    nd = NodeDevice(used=used, allocated_vfs=vfs)
    if device is not None:
        total: dict[str, DeviceResources] = {}
        infos: dict[str, list[DeviceInfo]] = {}
        for info in device.devices:
            resources: ResourceList = {k: q.amount for k, q in info.resources.items()} if info.health else {}
            total.setdefault(info.type, {})[info.minor] = resources
            infos.setdefault(info.type, []).append(info)
        nd.total = total
        nd.infos = {t: tuple(i) for t, i in infos.items()}
        nd.topology = numa_topology(device.devices)
        try:
            nd.gpu_partition_indexer = gpu_partition_indexer(api.gpu_partition_table(device.annotations))
        except AnnotationError:
            nd.gpu_partition_indexer = None  # logged by the scheduler; no table
        nd.node_honor_gpu_partition = api.gpu_partition_policy_honor(device.labels)
        nd.secondary_device_well_planned = (
            device.labels.get(api.LABEL_SECONDARY_DEVICE_WELL_PLANNED) == "true"
        )
        nd.gpu_topology_scope = gpu_topology_scope(nd.infos.get(api.GPU, ()), total.get(api.GPU, {}))
    nd.reset_free()
    return nd


def node_device(node: NodeInfo) -> NodeDevice | None:
    """The node's device cache entry, built once per NodeInfo (Filter and Reserve never change it)."""
    return memo(node, "_koord_node_device", lambda: build_node_device(node.device, node.pods))


def minor_resources(resources: Mapping[int, Mapping[str, Fraction]]) -> DeviceResources:
    return {m: dict(r) for m, r in resources.items()}
