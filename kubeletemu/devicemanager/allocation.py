"""Which devices a container gets (``devicesToAllocate`` / ``filterByAffinity`` in ``manager.go``).

Go iterates sets in random order; we use the plugin's device order (registration order) wherever the
kubelet leaves the choice open, and the plugin's own order for its preferred list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubeletemu.devicemanager.devices import NODE_WITHOUT_TOPOLOGY, Device, PreferredAllocationFunc
from kubeletemu.devicemanager.errors import DeviceAllocationError
from kubeletemu.topologymanager.hint import TopologyHint


def _ordered(ids: Iterable[str], order: Mapping[str, int]) -> list[str]:
    return sorted(ids, key=lambda d: (order.get(d, len(order)), d))


def filter_by_affinity(
    available: Iterable[str],
    all_devices: Mapping[str, Device],
    hint: TopologyHint,
) -> tuple[list[str], list[str], list[str]]:
    """``filterByAffinity``: (aligned, unaligned, no-affinity), each in allocation order.

    Nodes are ranked: in the hint first, then other real nodes, then the fake node -1; within a rank by
    ascending device count (ties: node id). A device lands in the first ranked node that holds it.
    """
    order = {d: i for i, d in enumerate(all_devices)}
    available_list = _ordered(available, order)
    has_topology = any(d.has_topology for d in all_devices.values())
    if not has_topology or hint.affinity is None:
        return [], [], available_list
    mask = hint.affinity
    per_node: dict[int, set[str]] = {}
    for dev_id in available_list:
        device = all_devices.get(dev_id)
        if device is None or not device.has_topology:
            per_node.setdefault(NODE_WITHOUT_TOPOLOGY, set()).add(dev_id)
            continue
        for node in device.numa_node_ids():
            per_node.setdefault(node, set()).add(dev_id)

    def rank(node: int) -> tuple[int, int, int]:
        if node != NODE_WITHOUT_TOPOLOGY and mask.is_set(node):
            group = 0
        elif node != NODE_WITHOUT_TOPOLOGY:
            group = 1
        else:
            group = 2
        return group, len(per_node[node]), node

    nodes = sorted(per_node, key=rank)
    aligned: list[str] = []
    unaligned: list[str] = []
    no_affinity: list[str] = []
    for dev_id in available_list:
        for node in nodes:
            if dev_id in per_node[node]:
                if node == NODE_WITHOUT_TOPOLOGY:
                    no_affinity.append(dev_id)
                elif mask.is_set(node):
                    aligned.append(dev_id)
                else:
                    unaligned.append(dev_id)
                break
    return aligned, unaligned, no_affinity


@dataclass
class PreferredAllocationCall:
    """What the kubelet passed to the plugin's ``GetPreferredAllocation`` (recorded for inspection)."""

    available: list[str]
    must_include: list[str]
    size: int


def _short(required: int, needed: int) -> DeviceAllocationError:
    return DeviceAllocationError(
        "unexpectedly allocated less resources than required. "
        f"Requested: {required}, Got: {required - needed}"
    )


def devices_to_allocate(
    *,
    pod_uid: str,
    container: str,
    resource: str,
    required: int,
    reusable: Iterable[str],
    existing: set[str] | None,
    healthy: set[str] | None,
    in_use: set[str],
    all_devices: Mapping[str, Device],
    hint: TopologyHint,
    get_preferred_allocation: PreferredAllocationFunc | None = None,
    on_preferred_call: Callable[[PreferredAllocationCall], None] | None = None,
) -> list[str]:
    """``devicesToAllocate``: the new devices for one resource of one container (empty: nothing to do).

    ``existing`` is what the container already holds, ``healthy`` None means the resource never
    registered, ``in_use`` is ``allocatedDevices[resource]``: it is updated in place as devices are
    taken (and, as in the kubelet, not rolled back when a later step fails).
    """
    needed = required
    if existing is not None:
        needed -= len(existing)
        if needed != 0:
            raise DeviceAllocationError(
                f'pod "{pod_uid}" container "{container}" changed request for resource "{resource}" '
                f"from {len(existing)} to {required}"
            )
    if healthy is None:
        raise DeviceAllocationError(f"cannot allocate unregistered device {resource}")
    if not healthy:
        raise DeviceAllocationError(
            f"no healthy devices present; cannot allocate unhealthy devices {resource}"
        )
    if existing is not None and not existing <= healthy:
        raise DeviceAllocationError(
            "previously allocated devices are no longer healthy; "
            f"cannot allocate unhealthy devices {resource}"
        )
    if needed == 0:
        return []

    order = {d: i for i, d in enumerate(all_devices)}
    allocated: list[str] = []
    allocated_set: set[str] = set()

    def allocate_remaining_from(devices: Sequence[str]) -> bool:
        nonlocal needed
        for dev_id in devices:
            if dev_id in allocated_set:
                continue
            in_use.add(dev_id)
            allocated.append(dev_id)
            allocated_set.add(dev_id)
            needed -= 1
            if needed == 0:
                return True
        return False

    def preferred(available: Iterable[str]) -> list[str]:
        if get_preferred_allocation is None:
            return []
        call = PreferredAllocationCall(_ordered(available, order), _ordered(allocated_set, order), required)
        if on_preferred_call is not None:
            on_preferred_call(call)
        answer = get_preferred_allocation(call.available, call.must_include, call.size)
        return list(dict.fromkeys(answer or ()))

    if allocate_remaining_from(_ordered(reusable, order)):
        return allocated
    available = _ordered(healthy - in_use, order)
    if len(available) < needed:
        raise DeviceAllocationError(
            f"requested number of devices unavailable for {resource}. "
            f"Requested: {needed}, Available: {len(available)}"
        )
    aligned, unaligned, no_affinity = filter_by_affinity(available, all_devices, hint)
    aligned_set = set(aligned)
    if needed < len(aligned):
        plugin_choice = preferred(aligned_set | allocated_set)
        if allocate_remaining_from([d for d in plugin_choice if d in aligned_set]):
            return allocated
        if allocate_remaining_from(aligned):
            return allocated
        raise _short(required, needed)
    if allocate_remaining_from(aligned):
        return allocated
    available_set = set(available)
    plugin_choice = preferred(available_set | allocated_set)
    if allocate_remaining_from([d for d in plugin_choice if d in available_set]):
        return allocated
    if allocate_remaining_from(unaligned):
        return allocated
    if allocate_remaining_from(no_affinity):
        return allocated
    raise _short(required, needed)
