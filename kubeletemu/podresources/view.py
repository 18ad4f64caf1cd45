"""What the kubelet's podresources server answers, computed from the emulated node.

Mirrors ``pkg/kubelet/apis/podresources/server_v1.go`` / ``server_v1alpha1.go`` over the container
manager's providers (``container_manager_linux.go``: ``GetCPUs`` = ``GetExclusiveCPUs``,
``GetAllocatableCPUs``, ``GetMemory`` / ``containerMemoryFromBlock``, ``GetAllocatableMemory``,
``GetDevices`` / ``containerDevicesFromResourceDeviceInstances``, ``GetAllocatableDevices``):

* **List** (v1): ``UpdateAllocatedDevices()`` first; then every *active* pod (admitted, not Succeeded or
  Failed; all pods when ``KubeletPodResourcesListUseActivePods`` is off), in the pod manager's order
  (ours: admission order). Containers are the restartable init containers, then the app containers, each
  in spec order; ordinary init containers are never reported. Per container: exclusive CPUs only (empty
  for shared-pool containers and under the ``none`` policy), the static memory manager's blocks (one per
  resource type, topology always present), and device-plugin devices as one entry per (resource, device,
  NUMA node) with a single id (a device without topology: one entry without ``topology``).
* **Get** (v1): gate ``KubeletPodResourcesGet`` (on by default since 1.34), else "PodResources API Get
  method disabled"; the pod is looked up by namespace/name among all known pods, not only active ones;
  a miss is "pod <name> in namespace <namespace> not found".
* **GetAllocatableResources** (v1): all CPUs minus reserved (static policy; empty under ``none``), one
  memory block per NUMA node and resource with nonzero allocatable (static memory manager), and every
  healthy device in the List shape.
* **List** (v1alpha1): every known pod, app containers only, devices only (resource and ids of the v1
  entries, so a device on two NUMA nodes appears twice).

Per kubelet version (``kubeletVersion``; rows in ``versions/data/behaviours/podresources.json``): the three
gates above take that version's defaults and locks (``Get`` off in 1.33, on from 1.34, locked on from 1.36;
``List`` of every pod in 1.33, whose kubelet has no ``KubeletPodResourcesListUseActivePods``); the pod-level
``PodResources.cpu_ids`` and ``memory`` of KEP-5526 (kubernetes#138738) are served from 1.37 — the kubelet
staging ``api.proto`` has no field 4/5 before — so a 1.36 kubelet's pod-level allocation
(``PodLevelResourceManagers``, alpha) is not reported. The same PR made 1.37's ``GetCPUs`` / ``GetMemory``
(``container_manager_linux.go`` at v1.37.2) report a container's CPUs or memory only at
``ResourceIsolationContainer`` (the CPU and Memory Managers' ``GetResourceIsolationLevel``): with the gate on,
a container of a pod whose pod-level resources are set lists no CPUs unless it qualifies for exclusive CPUs
(equivalent Guaranteed, integral CPU limit) and no memory unless it is equivalent Guaranteed; its share of
the pod's pool shows only in the pod's fields. 1.36 lists that share on every container holding it
(``GetExclusiveCPUs`` / ``GetMemory`` of the state's entry). ``ClaimResource.share_id`` (1.35) and
``dynamic_resources`` never occur: the emulator has no DRA driver.

Pure engine: protobuf messages, no gRPC. Call it under the daemon's lock so a read sees one node.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubeletemu._proto.podresources.v1 import api_pb2 as v1
from kubeletemu._proto.podresources.v1alpha1 import api_pb2 as v1alpha1
from kubeletemu.config import Config
from kubeletemu.cpumanager.pod_requests import (
    is_container_equivalent_qos_guaranteed,
    resources_qualify_for_exclusive_cpus,
)
from kubeletemu.cpumanager.policy_options import POD_LEVEL_RESOURCE_MANAGERS_GATE
from kubeletemu.emulator import NodeEmulator
from kubeletemu.memorymanager.state.state import Block
from kubeletemu.pod import Container, Pod, is_pod_level_resources_set
from kubeletemu.podresources.fingerprint import (
    METHOD_WITH_EXCLUSIVE_RESOURCES,
    TERMINAL_PHASES,
    PodInfo,
    Status,
    compute,
    fingerprint_pods,
    select_pods,
)
from kubeletemu.versions.behaviours import in_effect
from kubeletemu.versions.gates import default_gates, effective_gates
from kubeletemu.versions.version import MASTER

GATE_GET = "KubeletPodResourcesGet"
GATE_DYNAMIC_RESOURCES = "KubeletPodResourcesDynamicResources"
GATE_LIST_USE_ACTIVE_PODS = "KubeletPodResourcesListUseActivePods"
# The registry rows (versions/data/behaviours/podresources.json) of the pod-level fields and of the
# containers sharing the pod's pool (both from 1.37, kubernetes#138738).
POD_LEVEL_FIELDS = "podresources.pod-level-resources"
CONTAINER_ISOLATION = "podresources.container-isolation-level"
# Defaults in master (Get and DynamicResources GA and locked since 1.36, ListUseActivePods on since 1.34),
# from the kubelet's versioned feature specs; ``gate`` reads the configured kubeletVersion's.
DEFAULT_GATES: Mapping[str, bool] = default_gates(
    MASTER, (GATE_GET, GATE_DYNAMIC_RESOURCES, GATE_LIST_USE_ACTIVE_PODS)
)


class PodResourcesError(Exception):
    """An error the kubelet returns from a podresources method (a plain ``fmt.Errorf``: gRPC UNKNOWN)."""


class GetDisabledError(PodResourcesError):
    def __init__(self) -> None:
        super().__init__("PodResources API Get method disabled")


class PodResourcesNotFoundError(PodResourcesError):
    def __init__(self, name: str, namespace: str) -> None:
        # fmt.Errorf("pod %s in namespace %s not found", req.PodName, req.PodNamespace): name first.
        super().__init__(f"pod {name} in namespace {namespace} not found")


def gate(config: Config, name: str) -> bool:
    """A gate as the configured kubelet version sees it; a gate that version does not know is off (its
    behaviour predates the gate, e.g. ``List`` returning every pod before 1.34)."""
    gates = effective_gates(config.emulator.kubelet_version, config.kubelet.feature_gates)
    return bool(gates.get(name, False))


def node_name(config: Config) -> str:
    """The EmulatorConfiguration's ``nodeName``, else the host name lowercased (``nodeutil.GetHostname``)."""
    return config.emulator.node_name or socket.gethostname().strip().lower()


def is_active(pod: Pod) -> bool:
    """The slice of ``GetActivePods`` we can tell: admitted and not in a terminal phase."""
    return pod.phase not in TERMINAL_PHASES


# ---- the providers' message shapes --------------------------------------------------------------------


def _numa(node: int) -> v1.TopologyInfo:
    return v1.TopologyInfo(nodes=[v1.NUMANode(ID=node)])


def container_devices(devices: Mapping[str, Mapping[str, Sequence[int] | None]]) -> list[v1.ContainerDevices]:
    """``containerDevicesFromResourceDeviceInstances``: one entry per (resource, device, NUMA node).

    ``None`` is a device without topology: one entry with no ``topology``. A non-nil topology with no
    nodes yields no entry at all, as the kubelet's loop over zero nodes does.
    """
    out: list[v1.ContainerDevices] = []
    for resource, ids in devices.items():
        for device_id, nodes in ids.items():
            if nodes is None:
                out.append(v1.ContainerDevices(resource_name=resource, device_ids=[device_id]))
                continue
            out.extend(
                v1.ContainerDevices(resource_name=resource, device_ids=[device_id], topology=_numa(node))
                for node in nodes
            )
    return out


def container_memory(blocks: Iterable[Block]) -> list[v1.ContainerMemory]:
    """``containerMemoryFromBlock``: the topology is always set, even with no nodes."""
    return [
        v1.ContainerMemory(
            memory_type=block.type,
            size=block.size,
            topology=v1.TopologyInfo(nodes=[v1.NUMANode(ID=n) for n in block.numa_affinity]),
        )
        for block in blocks
    ]


def _assigned_devices(emulator: NodeEmulator, pod_uid: str, name: str) -> list[v1.ContainerDevices]:
    # getContainerDevices: a device recorded without topology comes back with no nodes.
    per_resource = emulator.cm.devices.get_devices(pod_uid, name)
    return container_devices(
        {res: {dev: (nodes or None) for dev, nodes in ids.items()} for res, ids in per_resource.items()}
    )


def reported_containers(pod: Pod) -> list[Container]:
    """Restartable init containers (sidecars) in spec order, then the app containers."""
    return [c for c in pod.init_containers if c.is_restartable_init] + list(pod.containers)


class _Snapshot:
    """The managers' assignments read once per request, so a List costs dictionary lookups per container.

    Messages are filled in place (``add``, not ``append``, which would copy). The ``bool`` the fill methods
    return is RTE's ``numalocality.Verify`` of the entry (a container with CPUs, a memory block on a NUMA
    node, or a device on one), taken from the same data.
    """

    def __init__(self, emulator: NodeEmulator) -> None:
        cm = emulator.cm
        self.emulator = emulator
        self.cpus = cm.cpus.get_assignments()
        self.pod_cpus = cm.cpus.state.get_pod_cpu_assignments()
        self.pod_memory = cm.memory.state.get_pod_memory_assignments()
        self.memory = cm.memory.state.get_memory_assignments()
        self.device_pods = cm.devices.pod_devices.pods()
        version = emulator.config.emulator.kubelet_version
        # PodResources.cpu_ids / memory (fields 4, 5) are served from 1.37 on; earlier protos lack them.
        self.pod_level_fields = in_effect(POD_LEVEL_FIELDS, version)
        # 1.37: GetResourceIsolationLevel decides what a container lists (PodLevelResourceManagers on).
        self.isolation_levels = in_effect(CONTAINER_ISOLATION, version) and gate(
            emulator.config, POD_LEVEL_RESOURCE_MANAGERS_GATE
        )

    def fill_container(self, msg: v1.ContainerResources, pod: Pod, container: Container) -> bool:
        """``getContainerResources``. Dynamic resources stay empty: the emulator has no DRA drivers."""
        pod_uid, name = pod.uid, container.name
        msg.name = name
        # ResourceIsolationPod (1.37): the container's share of the pod's pool is not its own to list.
        pod_pool = self.isolation_levels and is_pod_level_resources_set(pod)
        exclusive = False
        cpus = self.cpus.get(pod_uid, {}).get(name)
        if cpus and not (pod_pool and not resources_qualify_for_exclusive_cpus(container)):
            msg.cpu_ids.extend(cpus.list())
            exclusive = True
        blocks = self.memory.get(pod_uid, {}).get(name)
        if pod_pool and not is_container_equivalent_qos_guaranteed(container):
            blocks = None
        if blocks:
            msg.memory.extend(container_memory(blocks))
            exclusive = exclusive or any(b.numa_affinity for b in blocks)
        if pod_uid in self.device_pods:
            devices = _assigned_devices(self.emulator, pod_uid, name)
            msg.devices.extend(devices)
            exclusive = exclusive or any(d.HasField("topology") for d in devices)
        return exclusive

    def fill_pod(self, msg: v1.PodResources, pod: Pod) -> bool:
        msg.name = pod.name
        msg.namespace = pod.namespace
        exclusive = False
        add = msg.containers.add
        uid = pod.uid
        if uid in self.cpus or uid in self.memory or uid in self.device_pods:
            for c in reported_containers(pod):
                exclusive = self.fill_container(add(), pod, c) or exclusive
        else:  # most pods hold nothing: names only
            for c in reported_containers(pod):
                add(name=c.name)
        # KEP-5526 (master): a pod-level exclusive allocation (PodLevelResourceManagers) is reported on
        # the pod; RTE's numalocality does not look at it. A 1.36 kubelet allocates it but cannot say so.
        # Memory (field 5) is the pod entry's blocks in containerMemoryFromBlock's shape (GetPodMemory).
        if self.pod_level_fields:
            pod_cpus = self.pod_cpus.get(uid)
            if pod_cpus:
                msg.cpu_ids.extend(pod_cpus.list())
            pod_blocks = self.pod_memory.get(uid)
            if pod_blocks:
                msg.memory.extend(container_memory(pod_blocks))
        return exclusive


# ---- the methods ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListedPod:
    """A List entry with what an exporter knows of its pod when it picks the fingerprinted set."""

    pod: Pod
    resources: v1.PodResources
    info: PodInfo


@dataclass(frozen=True)
class Listing:
    """A v1 ``List`` answer and, entry by entry, the pods it lists."""

    response: v1.ListPodResourcesResponse
    pods: list[ListedPod]


def list_pods(emulator: NodeEmulator) -> Listing:
    """v1 ``List``, keeping each entry's pod."""
    emulator.cm.devices.update_allocated_devices()
    active_only = gate(emulator.config, GATE_LIST_USE_ACTIVE_PODS)
    snapshot = _Snapshot(emulator)
    response = v1.ListPodResourcesResponse()
    add = response.pod_resources.add
    pods = []
    known = [entry.pod for entry in emulator.registry]
    if not active_only:
        # Ended pods stay in the pod manager; what the managers have not swept yet is listed with them.
        known.extend(emulator.ended.values())
    for pod in known:
        if active_only and not is_active(pod):
            continue
        msg = add()
        exclusive = snapshot.fill_pod(msg, pod)
        pods.append(ListedPod(pod, msg, PodInfo(pod.namespace, pod.name, pod.phase, exclusive)))
    return Listing(response, pods)


def get_pod_resources(emulator: NodeEmulator, namespace: str, name: str) -> v1.GetPodResourcesResponse:
    """v1 ``Get``: raises :class:`GetDisabledError` or :class:`PodResourcesNotFoundError`."""
    if not gate(emulator.config, GATE_GET):
        raise GetDisabledError()
    # The pod manager keys pods by full name; a later pod of the same name replaces an earlier one.
    found = None
    for entry in emulator.registry:
        if entry.pod.namespace == namespace and entry.pod.name == name:
            found = entry.pod
    if found is None:
        raise PodResourcesNotFoundError(name, namespace)
    response = v1.GetPodResourcesResponse()
    _Snapshot(emulator).fill_pod(response.pod_resources, found)
    return response


def allocatable_resources(emulator: NodeEmulator) -> v1.AllocatableResourcesResponse:
    """v1 ``GetAllocatableResources``."""
    cm = emulator.cm
    return v1.AllocatableResourcesResponse(
        devices=container_devices(cm.devices.get_allocatable_devices()),
        cpu_ids=cm.cpus.get_allocatable_cpus().list(),
        memory=container_memory(cm.memory.get_allocatable_memory()),
    )


def list_v1alpha1(emulator: NodeEmulator) -> v1alpha1.ListPodResourcesResponse:
    """v1alpha1 ``List``: all known pods, app containers, ``v1DevicesToAlphaV1`` of their devices."""
    emulator.cm.devices.update_allocated_devices()
    return v1alpha1.ListPodResourcesResponse(
        pod_resources=[
            v1alpha1.PodResources(
                name=entry.pod.name,
                namespace=entry.pod.namespace,
                containers=[
                    v1alpha1.ContainerResources(
                        name=c.name,
                        devices=[
                            v1alpha1.ContainerDevices(resource_name=d.resource_name, device_ids=d.device_ids)
                            for d in _assigned_devices(emulator, entry.pod.uid, c.name)
                        ],
                    )
                    for c in entry.pod.containers
                ],
            )
            for entry in emulator.registry
        ]
    )


# ---- the fingerprint of what List reports ----------------------------------------------------------------


def node_fingerprint(
    emulator: NodeEmulator,
    method: str = METHOD_WITH_EXCLUSIVE_RESOURCES,
    listed: Sequence[ListedPod] | None = None,
) -> tuple[str, Status]:
    """The fingerprint an exporter computes from this node's List answer, with its trace.

    ``method`` is ``with-exclusive-resources`` (resource-topology-exporter's default), ``all``
    (nfd-topology-updater) or ``exclude-terminal``; anything else raises ``UnsupportedMethodError``.
    """
    if listed is None:
        listed = list_pods(emulator).pods
    return fingerprint_pods([p.info for p in listed], method, node_name=node_name(emulator.config))


def fingerprint_of(listed: Sequence[ListedPod], method: str) -> str:
    """The fingerprint alone (no trace), as cheap as it gets: what List responses carry as headers."""
    return compute(select_pods([p.info for p in listed], method))
