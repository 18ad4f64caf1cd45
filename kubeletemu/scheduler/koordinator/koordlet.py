"""The NodeResourceTopology koordlet publishes for an emulated node, as koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` builds it (``pkg/koordlet/statesinformer/impl/
states_noderesourcetopology.go``: ``calcNodeTopo``, ``calTopologyZoneList``, ``calCPUTopology``,
``calGuaranteedCpu``, ``getTopologyPolicy``; ``pkg/util/resource.go``: ``GenNodeZoneName``).

- Zones ``node-<id>`` of type ``Node`` with cpu (the NUMA node's logical CPUs), memory (its MemTotal) and
  ``hugepages-2Mi``/``hugepages-1Gi`` at 0 (the ``HugePageReport`` gate is off by default); capacity,
  allocatable and available are equal — koordlet reports the hardware, not the kubelet's allocatable.
- ``topologyPolicies``: one entry from the kubelet's policy *and scope*: ``SingleNUMANodePodLevel``,
  ``SingleNUMANodeContainerLevel``, ``RestrictedPodLevel``, ``BestEffortContainerLevel``…, else ``None``.
  The scheduler only recognises ``SingleNUMANodePodLevel`` of these (it looks for ``BestEffort`` and
  ``Restricted``, which koordlet never writes).
- Annotations: ``node.koordinator.sh/cpu-topology`` (every CPU: id, core, socket, node, by id),
  ``kubelet.koordinator.sh/cpu-manager-policy`` (policy, options, and the static policy's reserved CPUs),
  ``node.koordinator.sh/pod-cpu-allocs`` (the kubelet checkpoint's exclusive CPUs of pods without a
  Koordinator LS/BE label or cpuset, ``managedByKubelet``; ``null`` when none), the LS and BE shared pools
  (the CPUs no kubelet-pinned pod holds, less Koordinator cpusets: all of them for LS, LSE ones for
  BE, per NUMA node).

Core ids are kubeletemu's (unique per machine); koordlet reports lscpu's, which the scheduler turns into
``socket << 16 | core`` either way, so the grouping into cores is the same. The CPU basic-info annotation
and the node-reservation / system-QoS copies of the Node's annotations are not produced.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import CPUSetError
from kubeletemu.pod import Pod
from kubeletemu.podresources import view
from kubeletemu.quantity import Quantity
from kubeletemu.scheduler.koordinator import extension as ext
from kubeletemu.scheduler.objects import NodeResourceTopology, ResourceInfo, Zone

if TYPE_CHECKING:
    from kubeletemu.emulator import NodeEmulator

ZONE_TYPE = "Node"
# getTopologyPolicy: (kubelet policy, scope) → the v1alpha1 name koordlet writes.
_POLICIES = {
    ("single-numa-node", "container"): "SingleNUMANodeContainerLevel",
    ("restricted", "container"): "RestrictedContainerLevel",
    ("best-effort", "container"): "BestEffortContainerLevel",
    ("single-numa-node", "pod"): "SingleNUMANodePodLevel",
    ("restricted", "pod"): "RestrictedPodLevel",
    ("best-effort", "pod"): "BestEffortPodLevel",
}


def topology_policy(policy: str, scope: str) -> str:
    """``getTopologyPolicy``."""
    return _POLICIES.get((policy, scope), "None")


def _resource(name: str, amount: int) -> ResourceInfo:
    quantity = Quantity(amount)
    return ResourceInfo(name, quantity, quantity, quantity)


def _pools(cpus: Mapping[int, tuple[int, int]], free: CPUSet) -> str:
    """``covertCPUsToSharePool``: per NUMA node (by id), its socket and the free CPUs."""
    by_node: dict[int, list[int]] = {}
    for cpu in sorted(free):
        by_node.setdefault(cpus[cpu][0], []).append(cpu)
    pools = [
        {"socket": cpus[ids[0]][1], "node": node, "cpuset": str(CPUSet(ids))}
        for node, ids in sorted(by_node.items())
    ]
    return json.dumps(pools, separators=(",", ":"))


def koordlet_node_resource_topology(emulator: NodeEmulator) -> NodeResourceTopology:
    """The NRT koordlet would publish for ``emulator``'s node now, as the scheduler reads it."""
    machine = emulator.machine
    details = machine.cpu_topology.cpu_details
    kubelet = emulator.config.kubelet
    cpus = {cpu: (info.numa_node_id, info.socket_id) for cpu, info in details.items()}

    zones = []
    for node in sorted(machine.memory.nodes, key=lambda n: n.id):
        count = sum(1 for numa, _ in cpus.values() if numa == node.id)
        resources = (
            _resource("cpu", count),
            _resource("hugepages-1Gi", 0),
            _resource("hugepages-2Mi", 0),
            _resource("memory", node.memory),
        )
        zones.append(Zone(name=f"node-{node.id}", type=ZONE_TYPE, resources=resources))

    policy: dict[str, object] = {"policy": kubelet.cpu_manager_policy}
    if kubelet.cpu_manager_policy_options:
        policy["options"] = dict(kubelet.cpu_manager_policy_options)
    allocs: list[dict[str, object]] = []
    pinned = CPUSet()
    if kubelet.cpu_manager_policy == "static":
        policy["reservedCPUs"] = str(emulator.cm.cpus.get_reserved_cpus())
        pods = {pod.uid: pod for pod, _ in emulator.pods()}
        for uid, containers in sorted(emulator.cm.cpus.get_assignments().items()):
            pod = pods.get(uid)
            if pod is not None and _managed_by_koordinator(pod):
                continue
            held = CPUSet().union(*containers.values())
            if held.is_empty():
                continue
            alloc: dict[str, object] = {}
            if pod is not None:
                alloc.update(namespace=pod.namespace, name=pod.name)
            alloc.update(uid=uid, cpuset=str(held), managedByKubelet=True)
            allocs.append(alloc)
            pinned = pinned.union(held)
    if not policy.get("reservedCPUs"):
        policy.pop("reservedCPUs", None)

    topology = {
        "detail": [
            {"id": cpu, "core": details[cpu].core_id, "socket": details[cpu].socket_id, "node": cpus[cpu][0]}
            for cpu in sorted(details)
        ]
    }
    ls_pool = be_pool = CPUSet(cpus).difference(pinned)
    for pod, _ in emulator.pods():
        held = _koordinator_cpuset(pod)
        ls_pool = ls_pool.difference(held)
        if ext.qos_class_raw(pod) == ext.QOS_LSE:
            be_pool = be_pool.difference(held)
    annotations = {
        ext.ANNOTATION_NODE_CPU_TOPOLOGY: json.dumps(topology, separators=(",", ":")),
        ext.ANNOTATION_NODE_CPU_SHARED_POOLS: _pools(cpus, ls_pool),
        ext.ANNOTATION_KUBELET_CPU_MANAGER_POLICY: json.dumps(policy, separators=(",", ":")),
        ext.ANNOTATION_NODE_BE_CPU_SHARED_POOLS: _pools(cpus, be_pool),
        ext.ANNOTATION_NODE_CPU_ALLOCS: json.dumps(allocs or None, separators=(",", ":")),
    }
    cm = emulator.cm
    return NodeResourceTopology(
        name=view.node_name(emulator.config),
        zones=tuple(zones),
        topology_policies=(topology_policy(cm.topology_manager_policy, cm.topology_manager_scope),),
        annotations=MappingProxyType(annotations),
    )


def _koordinator_cpuset(pod: Pod) -> CPUSet:
    """The cpuset of the pod's resource-status annotation; empty when absent or undecodable (logged)."""
    try:
        return CPUSet.parse(ext.resource_status(pod.annotations).cpuset)
    except (ext.AnnotationError, CPUSetError):
        return CPUSet()


def _managed_by_koordinator(pod: Pod) -> bool:
    """``calGuaranteedCpu``: pods labelled LS or BE, or with a Koordinator cpuset, are koordlet's."""
    return ext.qos_class_raw(pod) in (ext.QOS_LS, ext.QOS_BE) or not _koordinator_cpuset(pod).is_empty()
