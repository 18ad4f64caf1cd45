"""The NodeResourceTopology nfd-topology-updater publishes, as ``sigs.k8s.io/node-feature-discovery`` v0.19.0
builds it (``pkg/resourcemonitor``: ``podresourcesscanner.go`` ``Scan``, ``noderesourcesaggregator.go``
``Aggregate``; ``pkg/nfd-topology-updater``: ``updateNodeResourceTopology``).

Where it differs from resource-topology-exporter (:mod:`kubeletemu.podresources.nrt`):

* **charged pods**: only pods whose Pod object is Guaranteed, or that hold a device; their CPUs only when
  the pod is Guaranteed and some container requests an integral CPU amount (``hasIntegralCPUs``:
  ``Value()*1000 == MilliValue()``);
* **available**: each allocated CPU or device id is looked up in an id → NUMA node map built from
  ``GetAllocatableResources`` (a device on two nodes maps to the *last* one listed) and takes 1 from that
  node, without a floor; a memory block is drained from its NUMA nodes in listed order (a node at 0 is
  skipped), not charged in full to each;
* **capacity**: ``cpu`` is allocatable plus the node's CPUs that are not allocatable; ``memory`` is the
  node's MemTotal, each ``hugepages-<size>`` ``nr_hugepages`` times the size (every size), else allocatable;
* **attributes**: ``topologyManagerPolicy``, ``topologyManagerScope``, then ``nodeTopologyPodsFingerprint``
  over *all* listed pods, only when List is non-empty. No method attribute, no annotations. Attributes are
  updated in place by name, so once the node has no pods the object keeps the last fingerprint written
  (``previous_fingerprint``); a first write with no pods has none;
* ``topologyPolicies``: the deprecated single value from policy and scope (``SingleNUMANodeContainerLevel``,
  ``None``…), which RTE leaves unset.

Zones, resources and costs come in the fixed order of :mod:`~kubeletemu.podresources.nrt` (the updater
emits Go map order). The ``cpu_core``/``cpu_atom`` attributes of hybrid CPUs never appear: v0.19.0 globs
``<sysfs>/sys/devices/cpu_*/cpus``, one ``sys`` too many.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu.emulator import NodeEmulator
from kubeletemu.memorymanager.quantity_format import hugepage_resource_name
from kubeletemu.pod import Pod, QOSClass, compute_qos
from kubeletemu.podresources import nrt, view
from kubeletemu.podresources.fingerprint import ATTRIBUTE, METHOD_ALL, compute, select_pods

# Counters of one NUMA node: resource name -> amount, as nrt.Counters.
_Available = dict[int, dict[str, int]]


def has_integral_cpus(pod: Pod) -> bool:
    """``checkPodExclusiveCPUs``: some init or app container's cpu request is a whole number of cores,
    as ``cpuQuantity.Value()*1000 == cpuQuantity.MilliValue()`` (both round up) decides."""
    for container in pod.all_containers():
        request = container.requests.get(nrt.CPU)
        if request is not None and math.ceil(request.amount) * 1000 == math.ceil(request.amount * 1000):
            return True
    return False


def device_numa_map(
    response: v1.AllocatableResourcesResponse, cpu_numa: Mapping[int, int]
) -> dict[str, dict[str, int]]:
    """``makeResourceMap``: resource -> device id -> NUMA node; the last node listed for an id wins."""
    out: dict[str, dict[str, int]] = {}
    for dev in response.devices:
        per = out.setdefault(dev.resource_name, {})
        for node in dev.topology.nodes:
            for device_id in dev.device_ids:
                per[device_id] = node.ID
    cpus = out.setdefault(nrt.CPU, {})
    for cpu in response.cpu_ids:
        if cpu in cpu_numa:
            cpus[str(cpu)] = cpu_numa[cpu]
    return out


def _take_ids(
    available: _Available, ids_numa: Mapping[str, Mapping[str, int]], name: str, ids: Iterable[str]
) -> None:
    """``updateAvailable``: 1 off the mapped node per id; unknown resources, ids and nodes are skipped."""
    per = ids_numa.get(name)
    if per is None:
        return
    for device_id in ids:
        node = per.get(device_id)
        if node is None or node not in available or name not in available[node]:
            continue
        available[node][name] -= 1


def _drain_memory(available: _Available, name: str, size: int, nodes: Iterable[int]) -> None:
    """``updateMemoryAvailable``: the block's size drained from its nodes in order."""
    for node in nodes:
        if size == 0:
            return
        if node not in available:
            continue
        if name not in available[node]:
            return
        free = available[node][name]
        if free == 0:
            continue
        taken = min(size, free)
        available[node][name] = free - taken
        size -= taken


def _charge(available: _Available, ids_numa: Mapping[str, Mapping[str, int]], entry: view.ListedPod) -> None:
    """``Scan``'s per-pod filter and ``Aggregate``'s accounting of one listed pod."""
    resources = entry.resources
    guaranteed = compute_qos(entry.pod) == QOSClass.GUARANTEED
    has_device = any(c.devices for c in resources.containers)
    if not (guaranteed or has_device):
        return
    exclusive_cpus = guaranteed and has_integral_cpus(entry.pod)
    for container in resources.containers:
        if container.cpu_ids and exclusive_cpus:
            _take_ids(available, ids_numa, nrt.CPU, (str(c) for c in container.cpu_ids))
        for dev in container.devices:
            _take_ids(available, ids_numa, dev.resource_name, dev.device_ids)
        for block in container.memory:
            if block.size:
                _drain_memory(available, block.memory_type, block.size, [n.ID for n in block.topology.nodes])


def _memory_capacity(emulator: NodeEmulator) -> dict[int, dict[str, int]]:
    """``GetNumaMemoryResources``: MemTotal and every hugepage size's ``nr_hugepages`` x size per node."""
    return {
        node.id: {
            nrt.MEMORY: node.memory,
            **{hugepage_resource_name(kib): kib * 1024 * pages for kib, pages in node.hugepages.items()},
        }
        for node in emulator.machine.memory.nodes
    }


def zones(emulator: NodeEmulator, listing: view.Listing) -> tuple[nrt.Zone, ...]:
    """``Aggregate`` over the nodes in id order."""
    cpu_numa = nrt.cpu_to_numa(emulator)
    response = view.allocatable_resources(emulator)
    allocatable = nrt.allocatable_counters(response, cpu_numa)
    ids_numa = device_numa_map(response, cpu_numa)
    memory_capacity = _memory_capacity(emulator)
    allocatable_cpus = set(response.cpu_ids)
    capacities = nrt.node_capacities(emulator)
    available: _Available = {}
    capacity: dict[int, dict[str, int]] = {}
    for node in capacities:
        reserved = sum(1 for cpu in emulator.machine.cpus_of([node.node_id]) if cpu not in allocatable_cpus)
        counters = allocatable.get(node.node_id)
        if not counters:
            available[node.node_id] = {nrt.CPU: 0}
            capacity[node.node_id] = {nrt.CPU: reserved}
            continue
        available[node.node_id] = dict(counters)
        memory = memory_capacity.get(node.node_id, {})
        capacity[node.node_id] = {
            name: (
                alloc + reserved
                if name == nrt.CPU
                else memory.get(name, alloc)
                if nrt.is_memory(name)
                else alloc
            )
            for name, alloc in counters.items()
        }
    for entry in listing.pods:
        _charge(available, ids_numa, entry)
    out = []
    for node in capacities:
        names = sorted(available[node.node_id], key=nrt.resource_order)
        allocated = allocatable.get(node.node_id) or {nrt.CPU: 0}
        resources = tuple(
            nrt.ResourceInfo(
                name, capacity[node.node_id][name], allocated[name], available[node.node_id][name]
            )
            for name in names
        )
        costs = tuple(nrt.CostInfo(nrt.zone_name(dst), d) for dst, d in sorted(node.distances.items()))
        out.append(nrt.Zone(nrt.zone_name(node.node_id), nrt.ZONE_TYPE_NODE, costs, resources))
    return tuple(out)


def nfd_node_resource_topology(
    emulator: NodeEmulator, previous_fingerprint: str = ""
) -> nrt.NodeResourceTopology:
    """The object nfd-topology-updater would hold for this node now. ``previous_fingerprint``: the one it
    wrote last, which an empty List leaves in place (empty: none was written)."""
    listing = view.list_pods(emulator)
    cm = emulator.cm
    attributes = [
        nrt.AttributeInfo(nrt.ATTRIBUTE_POLICY, cm.topology_manager_policy),
        nrt.AttributeInfo(nrt.ATTRIBUTE_SCOPE, cm.topology_manager_scope),
    ]
    fingerprint = (
        compute(select_pods([p.info for p in listing.pods], METHOD_ALL))
        if listing.pods
        else previous_fingerprint
    )
    if fingerprint:
        attributes.append(nrt.AttributeInfo(ATTRIBUTE, fingerprint))
    return nrt.NodeResourceTopology(
        name=view.node_name(emulator.config),
        zones=zones(emulator, listing),
        attributes=tuple(attributes),
        topology_policies=(
            nrt.detect_topology_policy(cm.topology_manager_policy, cm.topology_manager_scope),
        ),
    )
