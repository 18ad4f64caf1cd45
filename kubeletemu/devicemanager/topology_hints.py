"""Device hints (``devicemanager/topology_hints.go``) and the requests they are built for."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from kubeletemu.bitmask import iterate_bitmasks
from kubeletemu.devicemanager.devices import Device
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager.hint import TopologyHint


def _node_bits(device: Device | None) -> int:
    """The device's NUMA nodes as an integer mask (0: no topology, touches no mask)."""
    bits = 0
    for node in device.numa_node_ids() if device is not None else ():
        bits |= 1 << node
    return bits


def device_numa_nodes(numa_nodes: Sequence[int], all_devices: Mapping[str, Device]) -> list[int]:
    """``deviceNUMANodes`` (kubernetes#138244, from 1.36): the NUMA ids of every device the plugin
    registered for the resource, allocated, healthy or not, kept only where the machine has that node (a
    plugin cannot widen the search beyond the machine's topology)."""
    machine = set(numa_nodes)
    return sorted({n for d in all_devices.values() for n in d.numa_node_ids() if n in machine})


def generate_device_topology_hints(
    numa_nodes: Sequence[int],
    all_devices: Mapping[str, Device],
    available: Iterable[str],
    reusable: Iterable[str],
    request: int,
    *,
    device_nodes_only: bool = False,
) -> list[TopologyHint]:
    """``generateDeviceTopologyHints``: every NUMA mask with enough devices, preferred at the smallest
    node count that the resource's devices (all of them, free or not) could ever satisfy.

    ``device_nodes_only`` is the 1.36 and later kubelet (kubernetes#138244, merged 2026-04 as commit
    3b5f150, released in v1.36.0): masks are enumerated over :func:`device_numa_nodes` instead of every
    machine node (all of them if the devices name none), which keeps the minimum size and the preferred
    flags; masks holding a node without devices are no longer hints at all. With 2 nodes and one device
    on node 1: ``{1}`` preferred, where 1.35 also gave ``{0,1}`` non-preferred. Read in
    ``pkg/kubelet/cm/devicemanager/topology_hints.go`` and its test of openshift/kubernetes v1.36.3 as
    vendored in openshift/microshift release-4.23 @ ab25d11482 ("Single Request, only one with alignment"
    expects ``{1}`` alone), v1.35.6 before OpenShift's own pick of the PR for the earlier form.
    ``mask.AnySet(device nodes)`` is evaluated as an AND of integer masks, precomputed once per device.
    """
    if device_nodes_only:
        numa_nodes = device_numa_nodes(numa_nodes, all_devices) or list(numa_nodes)
    min_affinity_size = len(numa_nodes)
    all_bits = [_node_bits(d) for d in all_devices.values()]
    available_bits = [_node_bits(all_devices.get(d)) for d in available]
    # Reusable devices without topology don't constrain the mask; with an empty node list they rule
    # every mask out (AnySet of nothing is false).
    reusable_bits = [
        _node_bits(device)
        for device in (all_devices.get(d) for d in reusable)
        if device is not None and device.numa_nodes is not None
    ]
    hints: list[TopologyHint] = []
    for mask in iterate_bitmasks(numa_nodes):
        value = mask.value
        count = mask.count()
        if count < min_affinity_size and sum(1 for b in all_bits if b & value) >= request:
            min_affinity_size = count
        if any(not b & value for b in reusable_bits):
            continue
        matching = len(reusable_bits) + sum(1 for b in available_bits if b & value)
        if matching < request:
            continue
        hints.append(TopologyHint(mask, False))
    return [
        TopologyHint(h.affinity, h.affinity.count() == min_affinity_size)
        for h in hints
        if h.affinity is not None
    ]


def get_container_device_request(
    container: Container, is_device_resource: Callable[[str], bool]
) -> dict[str, int]:
    """``getContainerDeviceRequest``: the container's limits of device-plugin resources."""
    return {name: q.value() for name, q in container.limits.items() if is_device_resource(name)}


def _add(into: dict[str, Quantity], more: Mapping[str, Quantity]) -> None:
    for name, q in more.items():
        into[name] = into[name] + q if name in into else q


def _max(into: dict[str, Quantity], other: Mapping[str, Quantity]) -> None:
    for name, q in other.items():
        if name not in into or into[name] < q:
            into[name] = q


def pod_limits(pod: Pod) -> dict[str, Quantity]:
    """``resource.PodLimits`` without overhead: sum of app containers and sidecars, max with each
    ordinary init container plus the sidecars started before it."""
    limits: dict[str, Quantity] = {}
    for ctr in pod.containers:
        _add(limits, ctr.limits)
    sidecars: dict[str, Quantity] = {}
    init_max: dict[str, Quantity] = {}
    for ctr in pod.init_containers:
        if ctr.is_restartable_init:
            _add(limits, ctr.limits)
            _add(sidecars, ctr.limits)
            _max(init_max, sidecars)
        else:
            tmp: dict[str, Quantity] = {}
            _add(tmp, ctr.limits)
            _add(tmp, sidecars)
            _max(init_max, tmp)
    _max(limits, init_max)
    return limits


def get_pod_device_request(pod: Pod, is_device_resource: Callable[[str], bool]) -> dict[str, int]:
    """``getPodDeviceRequest``: ``PodLimits`` restricted to device-plugin resources."""
    return {name: q.value() for name, q in pod_limits(pod).items() if is_device_resource(name)}
