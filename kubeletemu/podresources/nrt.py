"""The NodeResourceTopology (``topology.node.k8s.io/v1alpha2``) an exporter publishes from podresources.

The aggregation is resource-topology-exporter's (``pkg/resourcemonitor/resourcemonitor.go``, ``Scan``):

* **allocatable** per NUMA node from ``GetAllocatableResources``, normalised into counters
  (``NormalizeContainerDevices`` + ``ContainerDevicesToPerNUMAResourceCounters``): allocatable CPUs counted
  on their node; each memory block of nonzero size adds its full size to *every* node it lists; each
  device entry adds its id count to every node of its topology (no topology: not counted);
* **allocated** the same way from ``List`` (all listed pods; CPUs are exclusive-only already);
* one zone per NUMA node, ``node-<id>``, type ``Node``, costs = the node's distances; resources are the
  node's *allocatable* counters: capacity from the machine (0 or missing: the allocatable; below the
  allocatable: raised to it), available = allocatable - allocated clamped at 0; a node with no
  allocatable entry at all gets ``cpu`` 0/0 with its CPU count as capacity. Memory and hugepages appear
  only when ``GetAllocatableResources`` reports memory (static memory manager), CPUs only under the
  static CPU manager;
* attributes: ``nodeTopologyPodsFingerprint``, ``nodeTopologyPodsFingerprintMethod``,
  ``topologyManagerScope``, ``topologyManagerPolicy`` (RTE's order; no Topology Manager policy options,
  which RTE does not publish); annotation ``topology.node.k8s.io/fingerprint`` (the legacy location RTE
  still fills).

Capacity (``updateNodeCapacity``, read once from sysfs): ``cpu`` the node's logical CPUs, ``memory`` its
MemTotal (pre-allocated hugepages included, so capacity - allocatable is the reservation plus the
hugepages: RTE v0.24.0's value, checked against the real exporter in tests/e2e/test_exporters.py),
``hugepages-2Mi`` and ``hugepages-1Gi`` ``nr_hugepages`` x size (RTE reads no other size: those fall back to
the allocatable). Zones are in node-id order and resources in a fixed order (cpu, memory, hugepages by page
size, devices by name) where the exporters emit Go map order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.emulator import NodeEmulator
from kubeletemu.memorymanager.quantity_format import (
    QuantityFormat,
    canonical_string,
    hugepage_resource_name,
)
from kubeletemu.node_topology import hugepage_size_bytes
from kubeletemu.podresources import view
from kubeletemu.podresources.fingerprint import (
    ANNOTATION,
    ATTRIBUTE,
    ATTRIBUTE_METHOD,
    METHOD_WITH_EXCLUSIVE_RESOURCES,
    METHODS_PUBLISHED,
    UnsupportedMethodError,
    parse_method,
)

API_VERSION = "topology.node.k8s.io/v1alpha2"
KIND = "NodeResourceTopology"
ZONE_TYPE_NODE = "Node"
CPU = "cpu"
MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"
ATTRIBUTE_POLICY = "topologyManagerPolicy"
ATTRIBUTE_SCOPE = "topologyManagerScope"
# RTE annotates every object it writes with what triggered the scan: its ticker (periodic) or an event on
# its notify file (reactive).
ANNOTATION_RTE_UPDATE = "k8stopoawareschedwg/rte-update"
RTE_UPDATE_PERIODIC = "periodic"
RTE_UPDATE_REACTIVE = "reactive"
RTE_UPDATES = (RTE_UPDATE_PERIODIC, RTE_UPDATE_REACTIVE)

# NUMA node -> resource name -> amount (RTE's perNUMAResourceCounter).
Counters = dict[int, dict[str, int]]


@dataclass(frozen=True)
class ResourceInfo:
    name: str
    capacity: int
    allocatable: int
    available: int


@dataclass(frozen=True)
class CostInfo:
    name: str
    value: int


@dataclass(frozen=True)
class AttributeInfo:
    name: str
    value: str


@dataclass(frozen=True)
class Zone:
    name: str
    type: str
    costs: tuple[CostInfo, ...] = ()
    resources: tuple[ResourceInfo, ...] = ()
    attributes: tuple[AttributeInfo, ...] = ()

    def resource(self, name: str) -> ResourceInfo | None:
        return next((r for r in self.resources if r.name == name), None)


@dataclass(frozen=True)
class NodeResourceTopology:
    name: str
    zones: tuple[Zone, ...]
    attributes: tuple[AttributeInfo, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    # The deprecated list, which koordlet still fills (RTE does not).
    topology_policies: tuple[str, ...] = ()

    def zone(self, name: str) -> Zone | None:
        return next((z for z in self.zones if z.name == name), None)

    def attribute(self, name: str) -> str | None:
        """``attribute.Get``: the first attribute of that name."""
        return next((a.value for a in self.attributes if a.name == name), None)

    def to_manifest(self) -> dict[str, Any]:
        """The object as ``kubectl apply`` takes it, keys in the Go types' field order.

        Amounts are ``resource.NewQuantity(v, DecimalSI)`` strings (``"4"``, ``"2k"``, ``"8589934592"``).
        """
        metadata: dict[str, Any] = {"name": self.name}
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        manifest: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata}
        if self.topology_policies:
            manifest["topologyPolicies"] = list(self.topology_policies)
        manifest["zones"] = [_zone_manifest(z) for z in self.zones]
        if self.attributes:
            manifest["attributes"] = [{"name": a.name, "value": a.value} for a in self.attributes]
        return manifest


def quantity(value: int) -> str:
    """``resource.NewQuantity(value, resource.DecimalSI).String()``."""
    return canonical_string(value, QuantityFormat.DECIMAL_SI)


def _zone_manifest(zone: Zone) -> dict[str, Any]:
    out: dict[str, Any] = {"name": zone.name, "type": zone.type}
    if zone.costs:
        out["costs"] = [{"name": c.name, "value": c.value} for c in zone.costs]
    if zone.attributes:
        out["attributes"] = [{"name": a.name, "value": a.value} for a in zone.attributes]
    out["resources"] = [
        {
            "name": r.name,
            "capacity": quantity(r.capacity),
            "allocatable": quantity(r.allocatable),
            "available": quantity(r.available),
        }
        for r in zone.resources
    ]
    return out


def zone_name(node_id: int) -> str:
    """``makeZoneName`` / ``numanode.IDToName``."""
    return f"node-{node_id}"


def is_memory(name: str) -> bool:
    return name == MEMORY or name.startswith(HUGEPAGES_PREFIX)


def normalize(
    devices: Iterable[v1.ContainerDevices],
    memory: Iterable[v1.ContainerMemory],
    cpu_ids: Iterable[int],
    cpu_numa: Mapping[int, int],
    into: Counters | None = None,
) -> Counters:
    """``NormalizeContainerDevices`` + ``ContainerDevicesToPerNUMAResourceCounters``, accumulating."""
    counters: Counters = {} if into is None else into
    for dev in devices:
        for node in dev.topology.nodes:
            per = counters.setdefault(node.ID, {})
            per[dev.resource_name] = per.get(dev.resource_name, 0) + len(dev.device_ids)
    for cpu in cpu_ids:
        numa = cpu_numa.get(cpu)
        if numa is None:  # RTE warns and skips a CPU it cannot place
            continue
        per = counters.setdefault(numa, {})
        per[CPU] = per.get(CPU, 0) + 1
    for block in memory:
        if block.size == 0:
            continue
        for node in block.topology.nodes:
            per = counters.setdefault(node.ID, {})
            per[block.memory_type] = per.get(block.memory_type, 0) + block.size
    return counters


def allocatable_counters(response: v1.AllocatableResourcesResponse, cpu_numa: Mapping[int, int]) -> Counters:
    return normalize(response.devices, response.memory, response.cpu_ids, cpu_numa)


def allocated_counters(pods: Iterable[v1.PodResources], cpu_numa: Mapping[int, int]) -> Counters:
    counters: Counters = {}
    for pod in pods:
        for container in pod.containers:
            normalize(container.devices, container.memory, container.cpu_ids, cpu_numa, counters)
    return counters


def resource_order(name: str) -> tuple[int, int, str]:
    """The fixed order of a zone's resources: cpu, memory, hugepages by page size, then devices by name."""
    if name == CPU:
        return (0, 0, name)
    if name == MEMORY:
        return (1, 0, name)
    if name.startswith(HUGEPAGES_PREFIX):
        return (2, hugepage_size_bytes(name) or 0, name)
    return (3, 0, name)


@dataclass(frozen=True)
class NodeCapacity:
    """What an exporter reads from sysfs about one NUMA node."""

    node_id: int
    num_cpus: int
    # memory and hugepages-<size>: bytes.
    memory: Mapping[str, int] = field(default_factory=dict)
    # destination node id -> distance.
    distances: Mapping[int, int] = field(default_factory=dict)


def zones(
    nodes: Sequence[NodeCapacity],
    allocatable: Counters,
    allocated: Counters,
) -> tuple[Zone, ...]:
    """RTE's per-node zone building (``Scan``), over ``nodes`` in the given order."""
    out = []
    for node in nodes:
        capacity: dict[str, int] = {CPU: node.num_cpus, **node.memory}
        counters = allocatable.get(node.node_id)
        if not counters:
            # No allocatable entry: the node exists, so all its CPUs count as reserved.
            counters = {CPU: 0}
        used = allocated.get(node.node_id, {})
        resources = []
        for name in sorted(counters, key=resource_order):
            alloc = counters[name]
            cap = capacity.get(name, 0)
            if cap == 0:
                cap = alloc
            cap = max(cap, alloc)
            resources.append(ResourceInfo(name, cap, alloc, max(0, alloc - used.get(name, 0))))
        costs = tuple(CostInfo(zone_name(dst), dist) for dst, dist in sorted(node.distances.items()))
        out.append(Zone(zone_name(node.node_id), ZONE_TYPE_NODE, costs, tuple(resources)))
    return tuple(out)


# node-feature-discovery pkg/topologypolicy: (scope, policy) -> v1alpha2.TopologyManagerPolicy.
_POD_SCOPE = {
    "single-numa-node": "SingleNUMANodePodLevel",
    "restricted": "RestrictedPodLevel",
    "best-effort": "BestEffortPodLevel",
}
_CONTAINER_SCOPE = {
    "single-numa-node": "SingleNUMANodeContainerLevel",
    "restricted": "RestrictedContainerLevel",
    "best-effort": "BestEffortContainerLevel",
}


def detect_topology_policy(policy: str, scope: str) -> str:
    """``topologypolicy.DetectTopologyPolicy``: the deprecated ``topologyPolicies`` value nfd-topology-updater
    writes (an unknown scope or policy is ``None``)."""
    table = _POD_SCOPE if scope == "pod" else _CONTAINER_SCOPE if scope == "container" else {}
    return table.get(policy, "None")


def attributes(fingerprint: str, method: str, policy: str, scope: str) -> tuple[AttributeInfo, ...]:
    """The scan's attributes (fingerprint, method), then ``makeAttributes``'s scope and policy: all RTE
    writes. It publishes no Topology Manager policy options, so ``topologyManagerMaxNUMANodes`` stays unset
    and NodeResourceTopologyMatch uses its default."""
    return (
        AttributeInfo(ATTRIBUTE, fingerprint),
        AttributeInfo(ATTRIBUTE_METHOD, method),
        AttributeInfo(ATTRIBUTE_SCOPE, scope),
        AttributeInfo(ATTRIBUTE_POLICY, policy),
    )


# The hugepage sizes RTE's updateNodeCapacity reads (sysinfo.HugepageSize2Mi, HugepageSize1Gi), in KiB.
RTE_HUGEPAGE_SIZES_KIB = (2048, 1048576)


def node_capacities(emulator: NodeEmulator) -> list[NodeCapacity]:
    """Per NUMA node (id order): logical CPUs, MemTotal, the 2Mi and 1Gi hugepage totals, distances."""
    machine = emulator.machine
    out = []
    for mem_node in sorted(machine.memory.nodes, key=lambda n: n.id):
        hugepages = {
            hugepage_resource_name(size_kib): size_kib * 1024 * pages
            for size_kib, pages in mem_node.hugepages.items()
            if pages and size_kib in RTE_HUGEPAGE_SIZES_KIB
        }
        out.append(
            NodeCapacity(
                node_id=mem_node.id,
                num_cpus=len(machine.cpus_of([mem_node.id])),
                memory={MEMORY: mem_node.memory, **hugepages},
                distances=machine.distances(mem_node.id),
            )
        )
    return out


def cpu_to_numa(emulator: NodeEmulator) -> dict[int, int]:
    details = emulator.machine.cpu_topology.cpu_details
    return {cpu: info.numa_node_id for cpu, info in details.items()}


def node_resource_topology(
    emulator: NodeEmulator,
    method: str = METHOD_WITH_EXCLUSIVE_RESOURCES,
    update: str = RTE_UPDATE_PERIODIC,
) -> NodeResourceTopology:
    """The object RTE would publish for this node right now, with the fingerprint selected by ``method``
    (one RTE accepts) and the scan trigger ``update`` in its ``rte-update`` annotation."""
    method = parse_method(method)
    if method not in METHODS_PUBLISHED:
        raise UnsupportedMethodError(method)  # RTE refuses it at start-up, in these words
    if update not in RTE_UPDATES:
        raise ValueError(f"rte-update {update!r}: expected {' or '.join(RTE_UPDATES)}")
    listing = view.list_pods(emulator)
    sign, _ = view.node_fingerprint(emulator, method, listing.pods)
    cpu_numa = cpu_to_numa(emulator)
    cm = emulator.cm
    return NodeResourceTopology(
        name=view.node_name(emulator.config),
        zones=zones(
            node_capacities(emulator),
            allocatable_counters(view.allocatable_resources(emulator), cpu_numa),
            allocated_counters(listing.response.pod_resources, cpu_numa),
        ),
        attributes=attributes(sign, method, cm.topology_manager_policy, cm.topology_manager_scope),
        annotations={ANNOTATION: sign, ANNOTATION_RTE_UPDATE: update},
    )
