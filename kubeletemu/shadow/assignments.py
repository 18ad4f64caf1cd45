"""What a container holds exclusively, in one comparable shape for the checkpoints and for podresources.

The kubelet's checkpoints and its podresources ``List`` describe the same three things per container:
exclusive CPUs (``cpu_manager_state`` / ``cpu_ids``), memory blocks (``memory_manager_state`` / ``memory``)
and device-plugin devices (``kubelet_internal_checkpoint`` / ``devices``). An :class:`Assignment` holds
them sorted, so two descriptions of one allocation compare equal and hash alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.containermanager import ContainerAllocation
from kubeletemu.devicemanager.devices import NODE_WITHOUT_TOPOLOGY
from kubeletemu.shadow.sources import Checkpoints

# (memory type, size in bytes, NUMA nodes): a memory block as the memory manager records it.
MemoryBlockKey = tuple[str, int, tuple[int, ...]]
# (resource name, device ids): the devices of one resource.
DeviceKey = tuple[str, tuple[str, ...]]
# pod UID -> container name -> what it holds
KubeletAssignments = dict[str, dict[str, "Assignment"]]


@dataclass(frozen=True)
class Assignment:
    cpus: tuple[int, ...] = ()
    memory: tuple[MemoryBlockKey, ...] = ()
    devices: tuple[DeviceKey, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.cpus or self.memory or self.devices)

    @classmethod
    def of(
        cls,
        cpus: Iterable[int] = (),
        memory: Iterable[MemoryBlockKey] = (),
        devices: Mapping[str, Iterable[str]] | None = None,
    ) -> Assignment:
        per_resource = {r: tuple(sorted(set(ids))) for r, ids in (devices or {}).items()}
        return cls(
            tuple(sorted(set(cpus))),
            tuple(sorted(memory)),
            tuple(sorted((r, ids) for r, ids in per_resource.items() if ids)),
        )

    def memory_by_type(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for kind, size, _nodes in self.memory:
            totals[kind] = totals.get(kind, 0) + size
        return totals

    def device_ids(self) -> dict[str, tuple[str, ...]]:
        return dict(self.devices)


EMPTY = Assignment()


def from_checkpoints(checkpoints: Checkpoints) -> KubeletAssignments:
    """Every container the checkpoints hold something for, keyed by pod UID and container name."""
    cpus: dict[tuple[str, str], list[int]] = {}
    for uid, containers in checkpoints.cpu_assignments.items():
        for name, cpuset in containers.items():
            cpus[(uid, name)] = cpuset.list()
    memory: dict[tuple[str, str], list[MemoryBlockKey]] = {}
    for uid, blocks_by_name in checkpoints.memory.entries.items():
        for name, blocks in blocks_by_name.items():
            memory[(uid, name)] = [(b.type, b.size, tuple(b.numa_affinity)) for b in blocks]
    devices: dict[tuple[str, str], dict[str, set[str]]] = {}
    for entry in checkpoints.devices.entries or []:
        per_resource = devices.setdefault((entry.pod_uid, entry.container_name), {})
        ids = per_resource.setdefault(entry.resource_name, set())
        for numa_ids in entry.device_ids.values():
            ids.update(numa_ids)
    out: KubeletAssignments = {}
    for uid, name in sorted({*cpus, *memory, *devices}):
        assignment = Assignment.of(
            cpus.get((uid, name), ()), memory.get((uid, name), ()), devices.get((uid, name))
        )
        if assignment:
            out.setdefault(uid, {})[name] = assignment
    return out


def device_numa_nodes(checkpoints: Checkpoints) -> dict[tuple[str, str], tuple[int, ...]]:
    """(resource, device id) -> NUMA nodes, as the device checkpoint records them (none: no topology)."""
    nodes: dict[tuple[str, str], set[int]] = {}
    for entry in checkpoints.devices.entries or []:
        for node, ids in entry.device_ids.items():
            for device_id in ids:
                known = nodes.setdefault((entry.resource_name, device_id), set())
                if node != NODE_WITHOUT_TOPOLOGY:
                    known.add(node)
    return {key: tuple(sorted(ns)) for key, ns in nodes.items()}


def from_podresources(container: v1.ContainerResources) -> Assignment:
    devices: dict[str, set[str]] = {}
    for entry in container.devices:
        devices.setdefault(entry.resource_name, set()).update(entry.device_ids)
    return Assignment.of(
        container.cpu_ids,
        ((m.memory_type, m.size, tuple(n.ID for n in m.topology.nodes)) for m in container.memory),
        devices,
    )


def from_allocation(container: ContainerAllocation) -> Assignment:
    """What the emulator's resource allocator gave a container."""
    return Assignment.of(
        container.cpu_ids if container.exclusive_cpus else (),
        ((b.memory_type, b.size, tuple(b.numa_nodes)) for b in container.memory),
        {resource: ids.keys() for resource, ids in container.devices.items()},
    )
