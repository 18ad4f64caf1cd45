"""NodeNUMAResource's CPU topology, as koordinator-sh/koordinator ``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``
builds it (``pkg/scheduler/plugins/nodenumaresource/cpu_topology.go``) from koordlet's
``node.koordinator.sh/cpu-topology`` annotation.

Core ids are made unique per socket (``socket << 16 | core``); counts are of distinct sockets, (socket,
node) pairs and (socket, node, core) triples, so ``CPUsPerCore`` etc. are integer divisions of totals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kubeletemu.cpumanager.cpuset import CPUSet


@dataclass(frozen=True)
class CPUInfo:
    cpu: int
    core: int
    node: int
    socket: int
    ref_count: int = 0
    exclusive_policy: str = ""


@dataclass(frozen=True)
class CPUTopology:
    num_cpus: int = 0
    num_cores: int = 0
    num_nodes: int = 0
    num_sockets: int = 0
    details: dict[int, CPUInfo] = field(default_factory=dict)

    def is_valid(self) -> bool:
        """``IsValid``: every count non-zero."""
        return bool(self.num_sockets and self.num_nodes and self.num_cores and self.num_cpus)

    def cpus_per_core(self) -> int:
        return self.num_cpus // self.num_cores if self.num_cores else 0

    def cpus_per_node(self) -> int:
        return self.num_cpus // self.num_nodes if self.num_nodes else 0

    def cpus_per_socket(self) -> int:
        return self.num_cpus // self.num_sockets if self.num_sockets else 0

    def cpus(self) -> CPUSet:
        return CPUSet(self.details)

    def cpus_in_numa_nodes(self, *nodes: int, only: CPUSet | None = None) -> CPUSet:
        return CPUSet(
            c for c, info in self.details.items() if info.node in nodes and (only is None or c in only.elems)
        )


def build_cpu_topology(entries: Iterable[tuple[int, int, int, int]]) -> CPUTopology:
    """``CPUTopologyBuilder``: ``entries`` are (socket, node, core, cpu) in report order; a repeated CPU id
    keeps its last entry but every entry counts towards the socket/node/core tallies."""
    sockets: set[int] = set()
    nodes: set[tuple[int, int]] = set()
    cores: set[tuple[int, int, int]] = set()
    details: dict[int, CPUInfo] = {}
    for socket, node, core, cpu in entries:
        core_id = socket << 16 | core
        details[cpu] = CPUInfo(cpu, core_id, node, socket)
        sockets.add(socket)
        nodes.add((socket, node))
        cores.add((socket, node, core_id))
    return CPUTopology(len(details), len(cores), len(nodes), len(sockets), details)


def cpu_topology_for_test(
    num_sockets: int, nodes_per_socket: int, cores_per_node: int, cpus_per_core: int
) -> CPUTopology:
    """``buildCPUTopologyForTest`` (cpu_accumulator_test.go): ids numbered socket by socket, node by node,
    core by core; the conformance tables name topologies this way."""
    details: dict[int, CPUInfo] = {}
    node_id = core_id = cpu_id = 0
    for socket in range(num_sockets):
        for _ in range(nodes_per_socket):
            for _ in range(cores_per_node):
                for _ in range(cpus_per_core):
                    details[cpu_id] = CPUInfo(cpu_id, core_id, node_id, socket)
                    cpu_id += 1
                core_id += 1
            node_id += 1
    return CPUTopology(
        num_cpus=cpus_per_core * cores_per_node * nodes_per_socket * num_sockets,
        num_cores=cores_per_node * nodes_per_socket * num_sockets,
        num_nodes=nodes_per_socket * num_sockets,
        num_sockets=num_sockets,
        details=details,
    )
