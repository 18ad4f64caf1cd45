"""DeviceShare's ``AutopilotAllocator`` (``device_allocator.go``: ``Prepare``, ``Allocate``,
``filterNodeDevice``, ``calcRequestsAndCountByDeviceType``, ``tryJointAllocate``, ``jointAllocate``,
``validateJointAllocation``, ``allocateDevices``, ``defaultAllocateDevices``, ``allocateVF``;
``devicehandler_default.go`` / ``devicehandler_gpu.go``: ``CalcDesiredRequestsAndCount``;
``device_resources.go``: ``sortDeviceResourcesByMinor``, ``sortDeviceResourcesByPreferredPCIe``), at
koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``.

An allocator restricted to ``numa_nodes`` only sees devices on those NUMA nodes (and devices whose NUMA node
is -1). Device types are visited in name order where Go ranges over a map. Without a scorer (Filter and the
hints) devices go in minor order; the Reserve-time scorer (``DeviceShareArgs.scoringStrategy``) is not
modelled, so Reserve picks in minor order too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from kubeletemu.bitmask import BitMask
from kubeletemu.scheduler.framework import UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE, Status
from kubeletemu.scheduler.koordinator.deviceshare import api
from kubeletemu.scheduler.koordinator.deviceshare.gpu import allocate_gpus
from kubeletemu.scheduler.koordinator.deviceshare.node_device import NodeDevice
from kubeletemu.scheduler.koordinator.deviceshare.requests import PreFilterState
from kubeletemu.scheduler.koordinator.deviceshare.resourcelist import (
    ResourceList,
    is_zero,
    less_than_or_equal,
    value,
)
from kubeletemu.scheduler.objects import DeviceInfo

ERR_JOINT_ALLOCATE_VIOLATION = "node(s) Device Joint-Allocate rules violation"
ERR_INSUFFICIENT_PRIMARY_DEVICE = "node(s) Insufficient primary device"
HANDLED_TYPES = (api.FPGA, api.GPU, api.RDMA)
DEFAULT_HANDLER_RESOURCE = {api.RDMA: api.RESOURCE_RDMA, api.FPGA: api.RESOURCE_FPGA}


def insufficient(device_type: str) -> str:
    return f"Insufficient {device_type} devices"


def _status(code: str, *reasons: str) -> Status:
    return Status(code, reasons)


Allocations = dict[str, list[api.DeviceAllocation]]


def desired_requests_and_count(
    device_type: str, requests: ResourceList, node: NodeDevice, state: PreFilterState
) -> tuple[ResourceList, int, Status]:
    """The type's ``DeviceHandler.CalcDesiredRequestsAndCount``."""
    total = node.total.get(device_type, {})
    if not total:
        return {}, 0, _status(UNSCHEDULABLE_AND_UNRESOLVABLE, insufficient(device_type))
    if device_type == api.GPU:
        gpu = state.gpu_requirements
        assert gpu is not None
        return gpu.requests_per_gpu, gpu.number_of_gpus, Status()
    name = DEFAULT_HANDLER_RESOURCE[device_type]
    hint = state.hints.get(device_type)
    amount = value(requests.get(name, Fraction(0)))
    desired = 1
    out = requests
    if amount > 100 and amount % 100 == 0:
        desired = amount // 100
        out = {name: Fraction(amount // desired)}
    elif hint is not None and hint.allocate_strategy == api.APPLY_FOR_ALL:
        desired = len(total)
        if hint.selector is not None:
            desired = sum(1 for i in node.infos.get(device_type, ()) if hint.selector.matches(i.labels))
        if desired == 0:
            return {}, 0, _status(UNSCHEDULABLE_AND_UNRESOLVABLE, insufficient(device_type))
    elif hint is not None and hint.allocate_strategy == api.REQUESTS_AS_COUNT:
        desired = amount
        out = {name: Fraction(100 if hint.exclusive_policy == api.DEVICE_LEVEL else 1)}
    return out, desired, Status()


@dataclass
class AutopilotAllocator:
    """One allocation attempt; ``numa_nodes`` None: no NUMA restriction."""

    state: PreFilterState
    node: NodeDevice
    node_labels: Mapping[str, str]
    numa_nodes: BitMask | None = None
    reserve_phase: bool = False
    requests_per_instance: dict[str, ResourceList] | None = None
    desired_count: dict[str, int] = field(default_factory=dict)

    def prepare(self) -> Status:
        """``Prepare``: requests and count per device type, once."""
        if self.requests_per_instance is not None:
            return Status()
        state, node = self.state, self.node
        per_instance: dict[str, ResourceList] = {}
        counts: dict[str, int] = {}
        for device_type in sorted(state.pod_requests):
            requests = state.pod_requests[device_type]
            if is_zero(requests) or device_type not in HANDLED_TYPES:
                continue
            if (
                state.primary_device_type not in ("", device_type)
                and state.pod_fits_secondary_device_well_planned
                and node.secondary_device_well_planned
                and not self.reserve_phase
            ):
                continue
            out, count, status = desired_requests_and_count(device_type, requests, node, state)
            if not status.ok:
                return status
            per_instance[device_type] = out
            counts[device_type] = count
        for device_type in per_instance:
            hint = state.hints.get(device_type)
            if _must_allocate_vf(hint) and not any(i.vf_groups for i in node.infos.get(device_type, ())):
                return _status(UNSCHEDULABLE_AND_UNRESOLVABLE, f"Insufficient {device_type} VirtualFunctions")
        self.requests_per_instance = per_instance
        self.desired_count = counts
        return Status()

    def allocate(self) -> tuple[Allocations, Status]:
        """``Allocate`` with no required, preferred or preemptible devices."""
        status = self.prepare()
        if not status.ok:
            return {}, status
        assert self.requests_per_instance is not None
        filtered = self._filter_node_device()
        allocations: Allocations = {}
        if len(self.requests_per_instance) > 1:
            allocations, status = self._try_joint_allocate(filtered)
            if not status.ok:
                return {}, status
        for device_type in sorted(self.requests_per_instance):
            if device_type in allocations:
                continue
            found, status = self._allocate_type(filtered, device_type, self.desired_count[device_type], None)
            if not status.ok:
                return {}, status
            if found:
                allocations[device_type] = found
        if not allocations:
            return {}, _status(UNSCHEDULABLE, *(insufficient(t) for t in sorted(self.requests_per_instance)))
        return allocations, Status()

    def _filter_node_device(self) -> NodeDevice:
        """``filterNodeDevice``."""
        assert self.requests_per_instance is not None
        if self.numa_nodes is None and not self.state.has_selectors:
            return self.node
        devices: dict[str, list[int]] = {}
        for device_type in self.requests_per_instance:
            hint = self.state.hints.get(device_type)
            selector = hint.selector if hint is not None else None
            minors = []
            for info in self.node.infos.get(device_type, ()):
                if self.numa_nodes is not None:
                    t = info.topology
                    if t is None or (t.node_id != -1 and not self.numa_nodes.is_set(t.node_id)):
                        continue
                if selector is None or selector.matches(info.labels):
                    minors.append(info.minor)
            if minors:
                devices[device_type] = minors
        return self.node.filter(devices, self.state.hints)

    def _try_joint_allocate(self, node: NodeDevice) -> tuple[Allocations, Status]:
        """``tryJointAllocate``: the primary type first, the others preferring its PCIe switches."""
        joint = self.state.joint_allocate
        if joint is None or not joint.device_types:
            return {}, Status()
        assert self.requests_per_instance is not None
        primary = joint.device_types[0]
        found, status = self._allocate_type(node, primary, self.desired_count.get(primary, 0), None)
        if not status.ok:
            return {}, status
        if not found:
            return {}, _status(UNSCHEDULABLE, ERR_INSUFFICIENT_PRIMARY_DEVICE)
        result: Allocations = {primary: found}
        secondaries = joint.device_types[1:]
        if secondaries:
            pcies = _pcies(node, primary, found)
            for device_type in secondaries:
                desired = self.desired_count.get(device_type, 0)
                if joint.required_scope == api.SAME_PCIE and desired < len(pcies):
                    desired = len(pcies)
                more, status = self._allocate_type(node, device_type, desired, pcies)
                if not status.ok:
                    return {}, status
                if more:
                    result[device_type] = more
        if joint.required_scope == api.SAME_PCIE and len(joint.device_types) > 1:
            want = _pcies(node, primary, result.get(primary, []))
            for device_type in secondaries:
                if _pcies(node, device_type, result.get(device_type, [])) != want:
                    return {}, _status(UNSCHEDULABLE, ERR_JOINT_ALLOCATE_VIOLATION)
        return result, Status()

    def _allocate_type(
        self, node: NodeDevice, device_type: str, desired: int, preferred_pcies: set[str] | None
    ) -> tuple[list[api.DeviceAllocation], Status]:
        """``allocateDevices``: the GPU allocator for GPUs, ``defaultAllocateDevices`` otherwise."""
        assert self.requests_per_instance is not None
        max_desired = max(desired, len(preferred_pcies or ()))
        desired = desired or 1
        max_desired = max(max_desired, desired)
        requests = self.requests_per_instance.get(device_type, {})
        if device_type == api.GPU:
            return allocate_gpus(
                self.state.gpu_requirements,
                self.node,
                node,
                self.node_labels,
                desired,
                max_desired,
                lambda per_gpu: self._default(node, api.GPU, per_gpu, desired, max_desired, None),
            )
        return self._default(node, device_type, requests, desired, max_desired, preferred_pcies)

    def _default(
        self,
        node: NodeDevice,
        device_type: str,
        requests: ResourceList,
        desired: int,
        max_desired: int,
        preferred_pcies: set[str] | None,
    ) -> tuple[list[api.DeviceAllocation], Status]:
        """``defaultAllocateDevices``: free devices in minor order (the preferred PCIe switches' devices
        first, round-robin across switches), each taking the per-instance request, with a VF when the
        hint has a VF selector."""
        free = node.free.get(device_type, {})
        infos = {i.minor: i for i in node.infos.get(device_type, ())}
        hint = self.state.hints.get(device_type)
        order = sorted(free)
        if preferred_pcies:
            order = _by_preferred_pcie(order, preferred_pcies, infos)
        vf_taken = node.allocated_vfs.get(device_type, {})
        allocations: list[api.DeviceAllocation] = []
        for minor in order:
            resources = free[minor]
            if is_zero(resources) or not less_than_or_equal(requests, resources):
                continue
            vfs: tuple[api.VirtualFunctionRef, ...] = ()
            if _must_allocate_vf(hint):
                assert hint is not None
                vf = _allocate_vf(infos.get(minor), vf_taken.get(minor, set()), hint.vf_selector)
                if vf is None:
                    continue
                vfs = (vf,)
            allocations.append(api.DeviceAllocation(minor, dict(requests), vfs))
            if len(allocations) == max_desired:
                break
        if len(allocations) < desired:
            return [], _status(UNSCHEDULABLE, insufficient(device_type))
        return allocations, Status()


class GPUTotalMemError(ValueError):
    """``fillGPUTotalMem``'s error: an allocated GPU the node has no healthy total for."""


def fill_gpu_total_mem(allocations: Allocations, node: NodeDevice) -> None:
    """``fillGPUTotalMem`` (``devicehandler_gpu.go``, called by ``Reserve``): every allocated GPU holding
    only one of ``gpu-memory`` / ``gpu-memory-ratio`` gets the other from the device's total memory —
    bytes as ``ratio * total / 100`` (integer), a ratio as the truncated float ``bytes / total * 100``.
    Raises :class:`GPUTotalMemError` for a minor without a healthy total, after filling the ones before it,
    as the Go loop does."""
    gpus = allocations.get(api.GPU)
    totals = node.total.get(api.GPU)
    if gpus is None or totals is None:
        return
    for i, allocation in enumerate(gpus):
        total = totals.get(allocation.minor)
        if is_zero(total):
            raise GPUTotalMemError(f"no healthy gpu device with minor {allocation.minor} of allocation")
        assert total is not None
        resources = dict(allocation.resources)
        memory = resources.get(api.RESOURCE_GPU_MEMORY)
        ratio = resources.get(api.RESOURCE_GPU_MEMORY_RATIO)
        if memory is not None and ratio is not None:
            continue
        total_memory = value(total.get(api.RESOURCE_GPU_MEMORY, Fraction(0)))
        if memory is not None:
            # float64 division as Go does it; a zero total gives +Inf/NaN, which int64() turns into a
            # platform-defined value: not reproduced (a GPU without memory is not a real device).
            resources[api.RESOURCE_GPU_MEMORY_RATIO] = Fraction(
                int(value(memory) / total_memory * 100) if total_memory else 0
            )
        else:
            amount = value(ratio) if ratio is not None else 0
            resources[api.RESOURCE_GPU_MEMORY] = Fraction(amount * total_memory // 100)
        gpus[i] = api.DeviceAllocation(allocation.minor, resources, allocation.vfs)


def _must_allocate_vf(hint: api.DeviceHint | None) -> bool:
    return hint is not None and hint.vf_selector is not None


def _allocate_vf(
    info: DeviceInfo | None, taken: set[str], selector: api.LabelSelector | None
) -> api.VirtualFunctionRef | None:
    """``allocateVF``: the free VF with the lowest bus id among the groups the selector matches."""
    if info is None:
        return None
    remaining = [
        vf
        for group in info.vf_groups
        if selector is None or selector.matches(group.labels)
        for vf in group.vfs
        if vf.bus_id not in taken
    ]
    if not remaining:
        return None
    vf = min(remaining, key=lambda v: v.bus_id)
    return api.VirtualFunctionRef(vf.minor, vf.bus_id)


def _pcies(node: NodeDevice, device_type: str, allocations: list[api.DeviceAllocation]) -> set[str]:
    """``newPreferredPCIes``: the PCIe switches of the allocated devices."""
    out = set()
    for allocation in allocations:
        for info in node.infos.get(device_type, ()):
            if info.minor == allocation.minor and info.topology is not None:
                out.add(info.topology.pcie_id)
                break
    return out


def _by_preferred_pcie(order: list[int], preferred: set[str], infos: Mapping[int, DeviceInfo]) -> list[int]:
    """``sortDeviceResourcesByPreferredPCIe``: the i-th device of every preferred switch, for i = 0, 1, …
    (each round in minor order), then the rest in minor order."""
    groups: dict[str, list[int]] = {}
    rest = []
    for minor in order:
        info = infos.get(minor)
        if info is not None and info.topology is not None and info.topology.pcie_id in preferred:
            groups.setdefault(info.topology.pcie_id, []).append(minor)
        else:
            rest.append(minor)
    out = []
    for i in range(max((len(g) for g in groups.values()), default=0)):
        out.extend(sorted(g[i] for g in groups.values() if i < len(g)))
    return out + rest
