"""The machine as the kubelet's managers read it (cadvisor ``MachineInfo`` + ``topology.Discover``).

Built from hostprobe's kubelet view, so the emulator sees what a real kubelet would on the same host:
cadvisor's node order and positional distance rows, the kubelet's core ids, uncore cache ids and header
counts, per-node memory and pre-allocated hugepages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hostprobe.model import HostTopology, PciDevice
from kubeletemu.cpumanager import CPUInfo, CPUTopology
from kubeletemu.memorymanager import MachineInfo, NUMANode


@dataclass(frozen=True)
class Machine:
    cpu_topology: CPUTopology
    # (node id, distance row as cadvisor reports it) in cadvisor order: what NewManager reads.
    numa_topology: tuple[tuple[int, tuple[int, ...] | None], ...]
    memory: MachineInfo
    pci_devices: tuple[PciDevice, ...] = ()
    host: HostTopology | None = None

    @property
    def numa_node_ids(self) -> list[int]:
        return [node_id for node_id, _ in self.numa_topology]

    @classmethod
    def from_host(cls, host: HostTopology) -> Machine:
        view = host.kubelet_view
        cpus = [
            CPUInfo(c.cpu_id, c.core_id, c.socket_id, c.numa_node_id, c.uncore_cache_id) for c in view.cpus
        ]
        topology = CPUTopology(
            cpus,
            num_cpus=view.num_cpus,
            num_cores=view.num_cores,
            num_sockets=view.num_sockets,
            num_numa_nodes=view.num_numa_nodes,
            num_uncore_cache=view.num_uncore_caches,
        )
        memory = MachineInfo(
            (NUMANode(node.id, node.memory_bytes, dict(node.hugepages)) for node in view.nodes),
            memory_capacity=view.memory_capacity_bytes,
        )
        numa = tuple((node.id, node.distances) for node in view.nodes)
        return cls(topology, numa, memory, tuple(host.pci_devices), host)

    def distances(self, node_id: int) -> dict[int, int]:
        """Distances from a node keyed by node id (the kernel's positional row mapped to ids)."""
        if self.host is not None:
            try:
                return dict(self.host.node(node_id).distances)
            except KeyError:
                pass
        row = dict(self.numa_topology).get(node_id)
        return {} if row is None else dict(zip(self.numa_node_ids, row, strict=False))

    def cpus_of(self, node_ids: Sequence[int]) -> list[int]:
        return sorted(self.cpu_topology.cpu_details.cpus_in_numa_nodes(*node_ids))
