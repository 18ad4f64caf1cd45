"""A node for mixed admissions: Topology Manager + device, CPU and memory managers, registered in the
kubelet's order (device manager, CPU manager, memory manager), with the emulator's release on rejection.

Machine: 2 NUMA nodes. Node n has cores 4n..4n+3, each with two threads (2c, 2c+1): CPUs 0-7 on node
0, 8-15 on node 1; 1 CPU reserved (kube-reserved cpu 1). Memory per node 8Gi with 512 x 2Mi and 2 x 1Gi
hugepages; 512Mi reserved per node, so 4.5Gi of ``memory``, 1Gi of ``hugepages-2Mi`` and 2Gi of
``hugepages-1Gi`` allocatable per node. Devices: ``example.com/nic`` nic0, nic1 on node 0 and nic2 on
node 1; ``example.com/gpu`` gpu0 on node 1 only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubeletemu import cpumanager, memorymanager, topologymanager
from kubeletemu.admission import PodAdmitResult
from kubeletemu.cpumanager import CPUInfo, CPUTopology
from kubeletemu.devicemanager import DeviceManager
from kubeletemu.pod import Container, Pod
from kubeletemu.quantity import Quantity
from kubeletemu.topologymanager import TopologyHint
from kubeletemu.versions.version import MASTER
from tests.memorymanager.fixtures import EVICTION, KUBE_RESERVED, MACHINE, RESERVED

NIC = "example.com/nic"
GPU = "example.com/gpu"

TOPOLOGY = CPUTopology(CPUInfo(cpu, cpu // 2, cpu // 8, cpu // 8) for cpu in range(16))


@dataclass
class Node:
    policy: str
    scope: str
    # The Device Manager's hints follow the kubelet version (kubernetes#138244 from 1.36).
    kubelet_version: str = MASTER
    tm: topologymanager.TopologyManager = field(init=False)
    devices: DeviceManager = field(init=False)
    cpus: cpumanager.CPUManager = field(init=False)
    memory: memorymanager.MemoryManager = field(init=False)

    def __post_init__(self) -> None:
        self.tm = topologymanager.new_manager([(0, None), (1, None)], self.policy, self.scope, {})
        self.devices = DeviceManager([0, 1], self.tm, kubelet_version=self.kubelet_version)
        self.devices.register_resource(
            NIC,
            [
                {"id": "nic0", "numaNodes": [0]},
                {"id": "nic1", "numaNodes": [0]},
                {"id": "nic2", "numaNodes": [1]},
            ],
        )
        self.devices.register_resource(GPU, [{"id": "gpu0", "numaNodes": [1]}])
        self.cpus = cpumanager.new_manager(
            "static", None, TOPOLOGY, self.tm, node_allocatable_cpu_reservation=Quantity.parse("1")
        )
        self.memory = memorymanager.new_manager(
            "Static",
            MACHINE,
            self.tm,
            reserved_memory=RESERVED,
            kube_reserved=KUBE_RESERVED,
            eviction_hard_memory_available=EVICTION,
        )
        for provider in (self.devices, self.cpus, self.memory):
            self.tm.add_hint_provider(provider)

    def admit(self, pod: Pod) -> PodAdmitResult:
        result = self.tm.admit(pod)
        if not result.admit:
            self.remove(pod.uid)
        return result

    def remove(self, pod_uid: str) -> None:
        for manager in (self.devices, self.cpus, self.memory):
            manager.remove_pod(pod_uid)
        self.tm.remove_pod(pod_uid)

    def affinity(self, pod_uid: str, container: str) -> TopologyHint:
        return self.tm.get_affinity(pod_uid, container)

    def cpu_ids(self, pod_uid: str, container: str) -> list[int]:
        return sorted(self.cpus.get_exclusive_cpus(pod_uid, container))

    def memory_blocks(self, pod_uid: str, container: str) -> set[tuple[tuple[int, ...], str, int]]:
        return {(b.numa_affinity, b.type, b.size) for b in self.memory.get_memory(pod_uid, container)}

    def device_ids(self, pod_uid: str, container: str) -> dict[str, set[str]]:
        return {r: set(ids) for r, ids in self.devices.get_devices(pod_uid, container).items()}


def container(name: str, cpu: str = "1", memory: str = "1Gi", **extra: str | int) -> Container:
    resources = {"cpu": Quantity.parse(cpu), "memory": Quantity.parse(memory)}
    names = {"hp2": "hugepages-2Mi", "hp1g": "hugepages-1Gi", "nic": NIC, "gpu": GPU}
    resources.update({names[k]: Quantity.parse(v) for k, v in extra.items()})
    return Container(name, requests=resources, limits=resources)


def pod(uid: str, *containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod(name=uid, namespace="default", uid=uid, containers=containers, init_containers=init)
