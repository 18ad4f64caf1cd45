"""Devices per extended resource, as a device plugin advertises them (``pluginapi.Device``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubeletemu.devicemanager.errors import DeviceManagerError

# The fake NUMA node of devices without topology (``nodeWithoutTopology``).
NODE_WITHOUT_TOPOLOGY = -1

# A plugin's ``GetPreferredAllocation(available, mustInclude, size)``: the device ids it prefers.
PreferredAllocationFunc = Callable[[list[str], list[str], int], Sequence[str] | None]


@dataclass(frozen=True)
class Device:
    """``numa_nodes`` None: the plugin sent no ``Topology``; an empty tuple: a Topology with no nodes."""

    id: str
    numa_nodes: tuple[int, ...] | None = None
    healthy: bool = True

    @property
    def has_topology(self) -> bool:
        """Counts for ``deviceHasTopologyAlignment`` (non-nil and non-empty)."""
        return bool(self.numa_nodes)

    def numa_node_ids(self) -> list[int]:
        """``getNUMANodeIds``: nil topology -> no ids."""
        return list(self.numa_nodes or ())


def make_device(raw: Device | Mapping[str, object]) -> Device:
    """A device from ``{id, numaNodes}`` (the EmulatorConfiguration's static list) or a ``Device``."""
    if isinstance(raw, Device):
        return raw
    device_id = raw.get("id")
    if not isinstance(device_id, str) or not device_id:
        raise DeviceManagerError(f"device entry {dict(raw)!r}: 'id' must be a non-empty string")
    nodes = raw.get("numaNodes", raw.get("numa_nodes"))
    if nodes is None:
        numa: tuple[int, ...] | None = None
    elif isinstance(nodes, list | tuple) and all(
        isinstance(n, int) and not isinstance(n, bool) for n in nodes
    ):
        if any(n < 0 for n in nodes):
            raise DeviceManagerError(f"device {device_id}: NUMA node ids must be >= 0, got {list(nodes)}")
        numa = tuple(nodes)
    else:
        raise DeviceManagerError(f"device {device_id}: 'numaNodes' must be a list of integers, got {nodes!r}")
    healthy = raw.get("healthy", True)
    if not isinstance(healthy, bool):
        raise DeviceManagerError(f"device {device_id}: 'healthy' must be a boolean")
    return Device(device_id, numa, healthy)


def make_devices(raw: Iterable[Device | Mapping[str, object]], resource: str) -> list[Device]:
    devices = [make_device(d) for d in raw]
    seen: set[str] = set()
    for d in devices:
        if d.id in seen:
            raise DeviceManagerError(f"resource {resource}: duplicate device id {d.id!r}")
        seen.add(d.id)
    return devices


def is_extended_resource_name(name: str) -> bool:
    """``IsExtendedResourceName``: a domain-prefixed name outside ``kubernetes.io`` (no ``requests.``)."""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))
