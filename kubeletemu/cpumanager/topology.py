"""The CPU topology model (``cpumanager/topology``): CPUInfo, CPUDetails queries, CPUTopology, Discover.

The kubelet's allocator reads the *declared* header counts of ``CPUTopology`` (``NumSockets >=
NumNUMANodes`` picks NUMA-first or socket-first, ``NumCPUs / NumCores`` is the CPU group size), so a
count given explicitly is kept verbatim even when it disagrees with the CPU rows; ``None`` derives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.cpumanager.errors import TopologyError

# One CPU as a plain row: [cpu id, core id, socket id, NUMA node id, uncore cache id].
CPURow = Sequence[int]


@dataclass(frozen=True, slots=True)
class CPUInfo:
    """``topology.CPUInfo`` plus its CPU id. ``core_id`` is platform-unique (lowest thread id)."""

    cpu_id: int
    core_id: int
    socket_id: int
    numa_node_id: int
    uncore_cache_id: int = 0


def _group(pairs: Iterable[tuple[int, int]]) -> dict[int, frozenset[int]]:
    grouped: dict[int, set[int]] = {}
    for key, value in pairs:
        grouped.setdefault(key, set()).add(value)
    return {key: frozenset(values) for key, values in grouped.items()}


class CPUDetails(Mapping[int, CPUInfo]):
    """``topology.CPUDetails``: CPU id -> CPUInfo, with the kubelet's set-valued queries.

    Every query returns a ``CPUSet`` of ids (CPU, core, socket, NUMA node or uncore cache ids, as the
    kubelet's do). The indexes are built once, on first use.
    """

    def __init__(self, infos: Mapping[int, CPUInfo]) -> None:
        self._infos = dict(infos)

    def __getitem__(self, cpu: int) -> CPUInfo:
        return self._infos[cpu]

    def __iter__(self) -> Iterator[int]:
        return iter(self._infos)

    def __len__(self) -> int:
        return len(self._infos)

    @cached_property
    def _index(self) -> _DetailsIndex:
        return _DetailsIndex(self._infos.values())

    def keep_only(self, cpus: CPUSet | Iterable[int]) -> CPUDetails:
        """``KeepOnly``: the details of the given CPUs that exist here."""
        keep = cpus.elems if isinstance(cpus, CPUSet) else frozenset(cpus)
        return CPUDetails({cpu: info for cpu, info in self._infos.items() if cpu in keep})

    def cpus(self) -> CPUSet:
        return CPUSet(self._infos)

    def numa_nodes(self) -> CPUSet:
        return CPUSet(self._index.cpus_by_numa)

    def sockets(self) -> CPUSet:
        return CPUSet(self._index.cpus_by_socket)

    def cores(self) -> CPUSet:
        return CPUSet(self._index.cpus_by_core)

    def uncore_caches(self) -> CPUSet:
        return CPUSet(self._index.cpus_by_uncore)

    def cpus_in_numa_nodes(self, *ids: int) -> CPUSet:
        return self._lookup(self._index.cpus_by_numa, ids)

    def cpus_in_sockets(self, *ids: int) -> CPUSet:
        return self._lookup(self._index.cpus_by_socket, ids)

    def cpus_in_cores(self, *ids: int) -> CPUSet:
        return self._lookup(self._index.cpus_by_core, ids)

    def cpus_in_uncore_caches(self, *ids: int) -> CPUSet:
        return self._lookup(self._index.cpus_by_uncore, ids)

    def sockets_in_numa_nodes(self, *ids: int) -> CPUSet:
        return self._lookup(self._index.sockets_by_numa, ids)

    def numa_nodes_in_sockets(self, *ids: int) -> CPUSet:
        return self._lookup(self._index.numas_by_socket, ids)

    def cores_in_sockets(self, *ids: int) -> CPUSet:
        return self._lookup(self._index.cores_by_socket, ids)

    def cores_in_numa_nodes(self, *ids: int) -> CPUSet:
        return self._lookup(self._index.cores_by_numa, ids)

    def uncore_in_numa_nodes(self, *ids: int) -> CPUSet:
        return self._lookup(self._index.uncores_by_numa, ids)

    def cores_needed_in_uncore_cache(self, num_cores_needed: int, *ids: int) -> CPUSet:
        """``CoresNeededInUncoreCache``: all cores of the uncore caches, or the lowest ``n`` ids."""
        cores = self._lookup(self._index.cores_by_uncore, ids)
        if cores.size() <= num_cores_needed:
            return cores
        return CPUSet(cores.list()[:num_cores_needed])

    def are_numa_nodes_in_same_socket(self, numa_nodes: Iterable[int]) -> bool:
        """``AreNUMANodesInSameSocket``: false for an unknown node; true for zero or one socket."""
        nodes = list(numa_nodes)
        known = self._index.cpus_by_numa
        if any(node not in known for node in nodes):
            return False
        return self.sockets_in_numa_nodes(*nodes).size() <= 1

    @staticmethod
    def _lookup(index: Mapping[int, frozenset[int]], ids: Sequence[int]) -> CPUSet:
        if len(ids) == 1:
            return CPUSet(index.get(ids[0], frozenset()))
        return CPUSet(frozenset().union(*(index.get(i, frozenset()) for i in ids)))


class _DetailsIndex:
    """Group-by tables over a set of CPUInfos; both CPUDetails and the allocator read them."""

    def __init__(self, infos: Iterable[CPUInfo]) -> None:
        rows = list(infos)
        # (numa, socket, core, uncore) per CPU: what the allocator's counters are keyed by.
        self.keys = {i.cpu_id: (i.numa_node_id, i.socket_id, i.core_id, i.uncore_cache_id) for i in rows}
        self.cpus_by_numa = _group((i.numa_node_id, i.cpu_id) for i in rows)
        self.cpus_by_socket = _group((i.socket_id, i.cpu_id) for i in rows)
        self.cpus_by_core = _group((i.core_id, i.cpu_id) for i in rows)
        self.cpus_by_uncore = _group((i.uncore_cache_id, i.cpu_id) for i in rows)
        self.sockets_by_numa = _group((i.numa_node_id, i.socket_id) for i in rows)
        self.numas_by_socket = _group((i.socket_id, i.numa_node_id) for i in rows)
        self.cores_by_socket = _group((i.socket_id, i.core_id) for i in rows)
        self.cores_by_numa = _group((i.numa_node_id, i.core_id) for i in rows)
        self.uncores_by_numa = _group((i.numa_node_id, i.uncore_cache_id) for i in rows)
        self.cores_by_uncore = _group((i.uncore_cache_id, i.core_id) for i in rows)


@dataclass(frozen=True, slots=True)
class DiscoveredCore:
    """One physical core as cadvisor reports it (``MachineInfo.Topology[node].Cores[i]``)."""

    numa_node_id: int
    socket_id: int
    threads: Sequence[int]
    uncore_cache_ids: Sequence[int] = ()


class CPUTopology:
    """``topology.CPUTopology``: the header counts plus the per-CPU details."""

    def __init__(
        self,
        cpus: Iterable[CPUInfo],
        *,
        num_cpus: int | None = None,
        num_cores: int | None = None,
        num_sockets: int | None = None,
        num_numa_nodes: int | None = None,
        num_uncore_cache: int | None = None,
    ) -> None:
        infos: dict[int, CPUInfo] = {}
        for info in cpus:
            if not isinstance(info, CPUInfo):
                raise TopologyError(f"expected CPUInfo rows, got {info!r}")
            if min(info.cpu_id, info.core_id, info.socket_id, info.numa_node_id, info.uncore_cache_id) < 0:
                raise TopologyError(f"negative id in {info}")
            if info.cpu_id in infos:
                raise TopologyError(f"CPU {info.cpu_id} is listed twice")
            infos[info.cpu_id] = info
        for name, value in (
            ("num_cpus", num_cpus),
            ("num_cores", num_cores),
            ("num_sockets", num_sockets),
            ("num_numa_nodes", num_numa_nodes),
            ("num_uncore_cache", num_uncore_cache),
        ):
            if value is not None and value < 0:
                raise TopologyError(f"{name} must not be negative, got {value}")
        self.cpu_details = CPUDetails(infos)
        index = self.cpu_details._index
        self.num_cpus = len(infos) if num_cpus is None else num_cpus
        self.num_cores = len(index.cpus_by_core) if num_cores is None else num_cores
        self.num_sockets = len(index.cpus_by_socket) if num_sockets is None else num_sockets
        self.num_numa_nodes = len(index.cpus_by_numa) if num_numa_nodes is None else num_numa_nodes
        self.num_uncore_cache = len(index.cpus_by_uncore) if num_uncore_cache is None else num_uncore_cache

    @classmethod
    def from_rows(
        cls,
        rows: Iterable[CPURow],
        *,
        num_cpus: int | None = None,
        num_cores: int | None = None,
        num_sockets: int | None = None,
        num_numa_nodes: int | None = None,
        num_uncore_cache: int | None = None,
    ) -> CPUTopology:
        """From ``[cpu, core, socket, numa, uncore]`` rows (the uncore id may be left out: 0)."""
        infos = []
        for row in rows:
            values = list(row)
            if len(values) not in (4, 5) or not all(isinstance(v, int) for v in values):
                raise TopologyError(f"a CPU row is [cpu, core, socket, numa(, uncore)] integers, got {row!r}")
            infos.append(CPUInfo(*values))
        return cls(
            infos,
            num_cpus=num_cpus,
            num_cores=num_cores,
            num_sockets=num_sockets,
            num_numa_nodes=num_numa_nodes,
            num_uncore_cache=num_uncore_cache,
        )

    @classmethod
    def discover(cls, cores: Iterable[DiscoveredCore], num_cpus: int, num_sockets: int) -> CPUTopology:
        """``topology.Discover`` over cadvisor's cores (``num_cpus`` is ``MachineInfo.NumCores``).

        Core id = lowest thread id; uncore id = the first uncore cache, else the socket id. The NUMA
        node and uncore counts are derived; the core count is the number of cores given.
        """
        if num_cpus == 0:
            raise TopologyError("could not detect number of cpus")
        infos: dict[int, CPUInfo] = {}
        num_cores = 0
        for core in cores:
            num_cores += 1
            threads = list(core.threads)
            if not threads:
                raise TopologyError("no cpus provided")
            if len(set(threads)) != len(threads):
                raise TopologyError("cpus provided are not unique")
            core_id = min(threads)
            uncore = core.uncore_cache_ids[0] if core.uncore_cache_ids else core.socket_id
            for cpu in threads:
                # A thread listed under two cores: the later core wins, as the kubelet's map assignment does.
                infos[cpu] = CPUInfo(cpu, core_id, core.socket_id, core.numa_node_id, uncore)
        return cls(infos.values(), num_cpus=num_cpus, num_cores=num_cores, num_sockets=num_sockets)

    def to_rows(self) -> list[list[int]]:
        return [
            [i.cpu_id, i.core_id, i.socket_id, i.numa_node_id, i.uncore_cache_id]
            for _, i in sorted(self.cpu_details.items())
        ]

    def cpus_per_core(self) -> int:
        """``CPUsPerCore``: header NumCPUs / NumCores (integer), 0 without cores."""
        if self.num_cores == 0:
            return 0
        return self.num_cpus // self.num_cores

    def cpu_core_id(self, cpu: int) -> int:
        return self._info(cpu).core_id

    def cpu_socket_id(self, cpu: int) -> int:
        return self._info(cpu).socket_id

    def cpu_numa_node_id(self, cpu: int) -> int:
        return self._info(cpu).numa_node_id

    def _info(self, cpu: int) -> CPUInfo:
        info = self.cpu_details.get(cpu)
        if info is None:
            raise TopologyError(f"unknown CPU ID: {cpu}")
        return info

    def check_alignment_uncore_cache(self, cpus: Iterable[int]) -> bool:
        """``CheckAlignment(...).UncoreCache``: at most one CPU, or all known and in one uncore cache."""
        cpu_list = list(cpus)
        if len(cpu_list) <= 1:
            return True
        if any(c not in self.cpu_details for c in cpu_list):
            return False
        return len({self.cpu_details[c].uncore_cache_id for c in cpu_list}) == 1

    def __repr__(self) -> str:
        return (
            f"CPUTopology(num_cpus={self.num_cpus}, num_cores={self.num_cores}, "
            f"num_sockets={self.num_sockets}, num_numa_nodes={self.num_numa_nodes}, "
            f"num_uncore_cache={self.num_uncore_cache}, cpus={len(self.cpu_details)})"
        )
