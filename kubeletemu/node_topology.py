"""Per-NUMA-node capacity, allocatable and free resources, as the managers account for them.

CPUs: allocatable is what the CPU manager may hand out exclusively (all CPUs minus the reserved ones under
the static policy), free is the part of it still in the shared pool. Memory and hugepages come from the
static memory manager's tables; without it the kubelet keeps no per-node accounting, so allocatable and
free equal the node's total. Devices: the device plugins' healthy devices, and those not yet allocated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubeletemu.containermanager import ContainerManager
from kubeletemu.memorymanager import POLICY_STATIC
from kubeletemu.quantity import Quantity, QuantityError

MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"


@dataclass(frozen=True)
class ResourceAmounts:
    total: int
    allocatable: int
    free: int


@dataclass(frozen=True)
class NUMANodeReport:
    id: int
    cpu_ids: tuple[int, ...]
    allocatable_cpu_ids: tuple[int, ...]
    free_cpu_ids: tuple[int, ...]
    memory: ResourceAmounts
    hugepages: dict[int, ResourceAmounts]  # page size in bytes -> bytes
    distances: dict[int, int]
    devices: dict[str, tuple[str, ...]]  # resource -> healthy device ids on this node
    free_devices: dict[str, tuple[str, ...]]


@dataclass(frozen=True)
class NodeTopologyReport:
    numa_nodes: tuple[NUMANodeReport, ...]
    reserved_cpu_ids: tuple[int, ...]
    shared_pool_cpu_ids: tuple[int, ...]
    topology_manager_policy: str
    topology_manager_scope: str
    topology_manager_options: dict[str, str]
    cpu_manager_policy: str
    memory_manager_policy: str
    kubelet_start_errors: tuple[str, ...] = field(default=())


def hugepage_size_bytes(resource: str) -> int | None:
    """``hugepages-2Mi`` -> 2097152."""
    if not resource.startswith(HUGEPAGES_PREFIX):
        return None
    try:
        return Quantity.parse(resource[len(HUGEPAGES_PREFIX) :]).value()
    except QuantityError:
        return None


def node_topology(cm: ContainerManager) -> NodeTopologyReport:
    machine = cm.machine
    reserved = cm.cpus.get_reserved_cpus()
    allocatable = cm.cpus.get_allocatable_cpus()
    shared = cm.cpus.get_default_cpu_set()
    tables = cm.memory.memory_tables() if cm.memory.policy_name == POLICY_STATIC else {}
    all_devices = cm.devices.get_allocatable_devices()
    nodes = []
    for mem_node in machine.memory.nodes:
        node_cpus = set(machine.cpus_of([mem_node.id]))
        table = tables.get(mem_node.id, {})
        if MEMORY in table:
            t = table[MEMORY]
            memory = ResourceAmounts(t.total, t.allocatable, t.free)
        else:
            memory = ResourceAmounts(mem_node.memory, mem_node.memory, mem_node.memory)
        hugepages: dict[int, ResourceAmounts] = {}
        for size_kib, pages in sorted(mem_node.hugepages.items()):
            size = size_kib * 1024
            total = size * pages
            hp = next((v for k, v in table.items() if hugepage_size_bytes(k) == size), None)
            hugepages[size] = (
                ResourceAmounts(hp.total, hp.allocatable, hp.free)
                if hp is not None
                else ResourceAmounts(total, total, total)
            )
        devices: dict[str, tuple[str, ...]] = {}
        free_devices: dict[str, tuple[str, ...]] = {}
        for resource, ids in sorted(all_devices.items()):
            here = sorted(dev for dev, numa in ids.items() if numa and mem_node.id in numa)
            if here:
                taken = cm.devices.allocated_devices.get(resource, set())
                devices[resource] = tuple(here)
                free_devices[resource] = tuple(d for d in here if d not in taken)
        nodes.append(
            NUMANodeReport(
                id=mem_node.id,
                cpu_ids=tuple(sorted(node_cpus)),
                allocatable_cpu_ids=tuple(sorted(node_cpus & set(allocatable))),
                free_cpu_ids=tuple(sorted(node_cpus & set(allocatable) & set(shared))),
                memory=memory,
                hugepages=hugepages,
                distances=machine.distances(mem_node.id),
                devices=devices,
                free_devices=free_devices,
            )
        )
    kubelet = cm.config.kubelet
    return NodeTopologyReport(
        numa_nodes=tuple(nodes),
        reserved_cpu_ids=tuple(sorted(reserved)),
        shared_pool_cpu_ids=tuple(sorted(shared)),
        topology_manager_policy=cm.topology_manager_policy,
        topology_manager_scope=cm.topology_manager_scope,
        topology_manager_options=dict(cm.topology_manager_options),
        cpu_manager_policy=kubelet.cpu_manager_policy,
        memory_manager_policy=kubelet.memory_manager_policy,
        kubelet_start_errors=cm.kubelet_start_errors(),
    )
