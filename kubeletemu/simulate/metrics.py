"""What a configuration's node looks like at the end of the stream: per-NUMA utilisation, the largest
single-NUMA free block, and how many containers ended up spread over several NUMA nodes.

CPU utilisation is the static CPU manager's exclusive CPUs over its allocatable CPUs (reserved excluded);
memory utilisation the static memory manager's reserved bytes over allocatable bytes. A manager without a
per-node accounting (policy none) reports nothing for its resource.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubeletemu.containermanager import ContainerAllocation
from kubeletemu.cpumanager.policy_static import StaticPolicy as StaticCPUPolicy
from kubeletemu.emulator import NodeEmulator
from kubeletemu.machine import Machine
from kubeletemu.memorymanager import POLICY_STATIC as MEMORY_POLICY_STATIC

MEMORY = "memory"


def percent(part: int, whole: int) -> float | None:
    return None if whole <= 0 else round(part * 100 / whole, 1)


@dataclass(frozen=True)
class NUMANodeUsage:
    node: int
    cpus_allocatable: int | None
    cpus_exclusive: int | None
    memory_allocatable: int | None
    memory_assigned: int | None

    @property
    def cpu_percent(self) -> float | None:
        if self.cpus_allocatable is None or self.cpus_exclusive is None:
            return None
        return percent(self.cpus_exclusive, self.cpus_allocatable)

    @property
    def memory_percent(self) -> float | None:
        if self.memory_allocatable is None or self.memory_assigned is None:
            return None
        return percent(self.memory_assigned, self.memory_allocatable)

    @property
    def free_cpus(self) -> int | None:
        if self.cpus_allocatable is None or self.cpus_exclusive is None:
            return None
        return self.cpus_allocatable - self.cpus_exclusive

    @property
    def free_memory(self) -> int | None:
        if self.memory_allocatable is None or self.memory_assigned is None:
            return None
        return self.memory_allocatable - self.memory_assigned

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "cpus": {
                "allocatable": self.cpus_allocatable,
                "exclusive": self.cpus_exclusive,
                "free": self.free_cpus,
                "percent": self.cpu_percent,
            },
            "memory": {
                "allocatable": self.memory_allocatable,
                "assigned": self.memory_assigned,
                "free": self.free_memory,
                "percent": self.memory_percent,
            },
        }


def numa_usage(node: NodeEmulator) -> tuple[NUMANodeUsage, ...]:
    cm = node.cm
    static_cpus = isinstance(cm.cpus.policy, StaticCPUPolicy)
    exclusive = cm.cpus.exclusive_cpus_per_numa() if static_cpus else {}
    allocatable = cm.cpus.allocatable_cpus_per_numa() if static_cpus else {}
    tables = cm.memory.memory_tables() if cm.memory.policy_name == MEMORY_POLICY_STATIC else {}
    usage = []
    for numa in node.machine.numa_node_ids:
        memory = tables.get(numa, {}).get(MEMORY)
        usage.append(
            NUMANodeUsage(
                node=numa,
                cpus_allocatable=allocatable.get(numa, 0) if static_cpus else None,
                cpus_exclusive=exclusive.get(numa, 0) if static_cpus else None,
                memory_allocatable=memory.allocatable if memory is not None else None,
                memory_assigned=memory.reserved if memory is not None else None,
            )
        )
    return tuple(usage)


def largest(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def container_numa_nodes(machine: Machine, container: ContainerAllocation) -> set[int]:
    """The NUMA nodes a container's exclusive resources sit on: pinned CPUs, memory blocks, devices."""
    nodes: set[int] = set()
    if container.exclusive_cpus:
        details = machine.cpu_topology.cpu_details
        for cpu in container.cpu_ids:
            info = details.get(cpu)
            if info is not None:
                nodes.add(info.numa_node_id)
    for block in container.memory:
        nodes.update(block.numa_nodes)
    for devices in container.devices.values():
        for numa in devices.values():
            nodes.update(numa)
    return nodes


def spread_containers(node: NodeEmulator) -> int:
    """Containers of the pods present whose exclusive resources span more than one NUMA node."""
    return sum(
        1
        for _, containers in node.pods()
        for container in containers
        if len(container_numa_nodes(node.machine, container)) > 1
    )
