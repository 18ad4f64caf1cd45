"""Which CPUs NodeNUMAResource gives a cpuset pod, as koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` chooses them (``nodenumaresource/cpu_accumulator.go``:
``takePreferredCPUs``, ``takeCPUs`` and the ``cpuAccumulator``).

Determinism. Go builds every grouping here by ranging over maps (the allocatable ``CPUDetails``, CPUs per
core, cores per node or socket), so its intermediate slices come in random order; the answer does not depend
on it because:

- every ``sort.Slice`` over cores, NUMA nodes, sockets or CPUs ends in an id comparison (a total order), so
  Python's ``sorted`` with the same key gives the same slice;
- the CPUs of one core are ``sort.Ints``-ed before use, and a core's node and socket are read from its first
  CPU in map order: all CPUs of a core share them in any real topology (here: its lowest CPU);
- the two ``sort.Slice`` calls of the whole-core fallback compare lengths only; their input is the
  socket order of ``freeCoresInSocket`` (total), and Go's ``sort.Slice`` on up to 12 elements is insertion
  sort, which is stable: :func:`go_sort_slice` reproduces that (more than 12 sockets would go through pdqsort,
  which is not modelled and raises).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TypeVar

from kubeletemu.cpumanager.cpuset import CPUSet
from kubeletemu.scheduler.koordinator import extension as ext
from kubeletemu.scheduler.koordinator.cpu_topology import CPUInfo, CPUTopology
from kubeletemu.scheduler.koordinator.scoring import MOST_ALLOCATED

ERR_NOT_ENOUGH_CPUS = "not enough cpus available to satisfy request"
ERR_FAILED_TO_ALLOCATE = "failed to allocate cpus"
# Go's sort.Slice runs insertion sort on slices this short (pdqsort's cut-off).
_INSERTION_SORT_MAX = 12

T = TypeVar("T")


class AccumulatorError(Exception):
    """The ``error`` ``takeCPUs`` returns; ``str()`` is its text."""


def go_sort_slice(items: list[T], less: Callable[[T, T], bool]) -> list[T]:
    """``sort.Slice(items, less)`` for a ``less`` that is not a total order: Go's insertion sort (pdqsort
    below its cut-off), which keeps equal elements in place."""
    if len(items) > _INSERTION_SORT_MAX:
        raise NotImplementedError("sort.Slice over more than 12 sockets (pdqsort) is not modelled")
    out = list(items)
    for i in range(1, len(out)):
        j = i
        while j > 0 and less(out[j], out[j - 1]):
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return out


def _group(items: Iterable[tuple[int, int]]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for key, value in items:
        groups.setdefault(key, []).append(value)
    return groups


class CPUAccumulator:
    """``cpuAccumulator``: the CPUs still allocatable (with reference counts when ``maxRefCount`` > 1),
    the cores and NUMA nodes made exclusive, the count still needed and the result so far."""

    def __init__(
        self,
        topology: CPUTopology,
        max_ref_count: int,
        available: CPUSet,
        allocated: Mapping[int, CPUInfo],
        needed: int,
        exclusive_policy: str,
        strategy: str,
    ) -> None:
        """``newCPUAccumulator``."""
        self.topology = topology
        self.max_ref_count = max_ref_count
        self.exclusive_cores = {
            i.core for i in allocated.values() if i.exclusive_policy == ext.CPU_EXCLUSIVE_PCPU_LEVEL
        }
        self.exclusive_nodes = {
            i.node for i in allocated.values() if i.exclusive_policy == ext.CPU_EXCLUSIVE_NUMA_NODE_LEVEL
        }
        self.exclusive_policy = exclusive_policy
        self.exclusive = exclusive_policy in (ext.CPU_EXCLUSIVE_PCPU_LEVEL, ext.CPU_EXCLUSIVE_NUMA_NODE_LEVEL)
        self.most_allocated = strategy == MOST_ALLOCATED
        self.allocatable: dict[int, CPUInfo] = {}
        for cpu in sorted(available):
            info = topology.details.get(cpu)
            if info is None:
                continue
            if max_ref_count > 1:
                held = allocated.get(cpu)
                info = replace(info, ref_count=held.ref_count if held is not None else 0)
            self.allocatable[cpu] = info
        self.needed = needed
        self.result: set[int] = set()

    # ---- bookkeeping ---------------------------------------------------------------------------------

    def take(self, cpus: Iterable[int]) -> None:
        """``take``."""
        for cpu in cpus:
            self.result.add(cpu)
            self.allocatable.pop(cpu, None)
            self.needed -= 1
            info = self.topology.details.get(cpu)
            if self.exclusive and info is not None:
                if self.exclusive_policy == ext.CPU_EXCLUSIVE_PCPU_LEVEL:
                    self.exclusive_cores.add(info.core)
                else:
                    self.exclusive_nodes.add(info.node)

    def needs(self, n: int) -> bool:
        return self.needed >= n

    def is_satisfied(self) -> bool:
        return self.needed < 1

    def is_failed(self) -> bool:
        return self.needed > len(self.allocatable)

    def _pcpu_exclusive(self, info: CPUInfo) -> bool:
        """``isCPUExclusivePCPULevel``."""
        return self.exclusive_policy == ext.CPU_EXCLUSIVE_PCPU_LEVEL and info.core in self.exclusive_cores

    def _numa_exclusive(self, info: CPUInfo) -> bool:
        """``isCPUExclusiveNUMANodeLevel``."""
        return (
            self.exclusive_policy == ext.CPU_EXCLUSIVE_NUMA_NODE_LEVEL and info.node in self.exclusive_nodes
        )

    def _by_strategy(self, free: int) -> int:
        """Sort key of a free count: ascending under MostAllocated, descending otherwise."""
        return free if self.most_allocated else -free

    def _core_ref_count(self, core: int) -> int:
        """``getCoreRefCount`` over the allocatable CPUs."""
        return sum(i.ref_count for i in self.allocatable.values() if i.core == core)

    def _by_ref_count(self, cpus: list[int]) -> list[int]:
        """``sort.Ints`` then, with ``maxRefCount`` > 1, ``sortCPUsByRefCount``."""
        if self.max_ref_count > 1:
            return sorted(cpus, key=lambda c: (self.allocatable[c].ref_count, c))
        return sorted(cpus)

    def _extract_cpu(self, cpus: list[int]) -> list[int]:
        """``extractCPU``: the first CPU of each core."""
        seen: set[int] = set()
        out = []
        for cpu in cpus:
            core = self.topology.details[cpu].core
            if core not in seen:
                seen.add(core)
                out.append(cpu)
        return out

    def _sorted_cores(self, cores: list[int], cpus_in_cores: Mapping[int, list[int]]) -> list[int]:
        """``sortCores``: most free CPUs first, then (``maxRefCount`` > 1) fewest references, then id."""

        def key(core: int) -> tuple[int, int, int]:
            refs = self._core_ref_count(core) if self.max_ref_count > 1 else 0
            return (-len(cpus_in_cores[core]), refs, core)

        return sorted(cores, key=key)

    def _free_cores(self, filter_full: bool, filter_exclusive: bool) -> dict[int, list[int]]:
        cpus_in_cores = _group(
            (info.core, cpu)
            for cpu, info in self.allocatable.items()
            if not (filter_exclusive and self._numa_exclusive(info))
        )
        per_core = self.topology.cpus_per_core()
        return {c: cpus for c, cpus in cpus_in_cores.items() if not filter_full or len(cpus) == per_core}

    def _cores_flattened(
        self, groups: dict[int, list[int]], cpus_in_cores: dict[int, list[int]]
    ) -> dict[int, list[int]]:
        return {
            group: [
                cpu
                for core in self._sorted_cores(cores, cpus_in_cores)
                for cpu in sorted(cpus_in_cores[core])
            ]
            for group, cores in groups.items()
        }

    # ---- groupings -----------------------------------------------------------------------------------

    def free_cores_in_node(self, filter_full: bool, filter_exclusive: bool) -> list[list[int]]:
        """``freeCoresInNode``: per NUMA node the CPUs of its (whole) free cores, cores sorted; nodes by
        free CPUs there, then free CPUs on their socket (fewest first under MostAllocated), then id."""
        socket_free: dict[int, int] = {}
        for info in self.allocatable.values():
            if not (filter_exclusive and self._numa_exclusive(info)):
                socket_free[info.socket] = socket_free.get(info.socket, 0) + 1
        cpus_in_cores = self._free_cores(False, filter_exclusive)
        kept = self._free_cores(filter_full, filter_exclusive)
        nodes = _group((self.allocatable[min(cpus)].node, core) for core, cpus in kept.items())
        cpus_in_nodes = self._cores_flattened(nodes, cpus_in_cores)

        def key(node: int) -> tuple[int, int, int]:
            socket = self.allocatable[cpus_in_nodes[node][0]].socket
            return (self._by_strategy(len(cpus_in_nodes[node])), self._by_strategy(socket_free[socket]), node)

        return [cpus_in_nodes[n] for n in sorted(cpus_in_nodes, key=key)]

    def free_cores_in_socket(self, filter_full: bool) -> list[list[int]]:
        """``freeCoresInSocket``: per socket the CPUs of its (whole) free cores, cores sorted; sockets by
        free CPUs listed (fewest first under MostAllocated), then id."""
        cpus_in_cores = self._free_cores(False, False)
        kept = self._free_cores(filter_full, False)
        sockets = _group((self.allocatable[min(cpus)].socket, core) for core, cpus in kept.items())
        cpus_in_sockets = self._cores_flattened(sockets, cpus_in_cores)
        order = sorted(cpus_in_sockets, key=lambda s: (self._by_strategy(len(cpus_in_sockets[s])), s))
        return [cpus_in_sockets[s] for s in order]

    def free_cpus_in_node(self, filter_exclusive: bool) -> list[list[int]]:
        """``freeCPUsInNode``: per NUMA node its free CPUs (one per core when filtering exclusivity); nodes
        by free CPUs, then free CPUs on their socket (fewest first under MostAllocated), then id."""
        node_free: dict[int, int] = {}
        socket_free: dict[int, int] = {}
        pairs = []
        for cpu, info in self.allocatable.items():
            if filter_exclusive and (self._pcpu_exclusive(info) or self._numa_exclusive(info)):
                continue
            pairs.append((info.node, cpu))
            node_free[info.node] = node_free.get(info.node, 0) + 1
            socket_free[info.socket] = socket_free.get(info.socket, 0) + 1
        cpus_in_nodes: dict[int, list[int]] = {}
        for node, cpus in _group(pairs).items():
            ordered = self._by_ref_count(cpus)
            cpus_in_nodes[node] = self._extract_cpu(ordered) if filter_exclusive else ordered

        def key(node: int) -> tuple[int, int, int]:
            socket = self.allocatable[cpus_in_nodes[node][0]].socket
            return (self._by_strategy(node_free[node]), self._by_strategy(socket_free[socket]), node)

        return [cpus_in_nodes[n] for n in sorted(cpus_in_nodes, key=key)]

    def free_cpus_in_socket(self, filter_exclusive: bool) -> list[list[int]]:
        """``freeCPUsInSocket``: per socket its free CPUs (one per core when filtering exclusivity, which
        here skips PCPU-level exclusive cores only); sockets by CPUs listed, then id."""
        pairs = [
            (info.socket, cpu)
            for cpu, info in self.allocatable.items()
            if not (filter_exclusive and self._pcpu_exclusive(info))
        ]
        cpus_in_sockets: dict[int, list[int]] = {}
        for socket, cpus in _group(pairs).items():
            ordered = self._by_ref_count(cpus)
            cpus_in_sockets[socket] = self._extract_cpu(ordered) if filter_exclusive else ordered
        order = sorted(cpus_in_sockets, key=lambda s: (self._by_strategy(len(cpus_in_sockets[s])), s))
        return [cpus_in_sockets[s] for s in order]

    def free_cpus(self, filter_exclusive: bool) -> list[int]:
        """``freeCPUs``: cores by CPUs of the result on their socket (most first), free CPUs on their
        socket, then on their node (by strategy), free CPUs on the core (fewest first), socket id,
        references (``maxRefCount`` > 1), core id; each core's CPUs in order."""
        cpus_in_cores: dict[int, list[int]] = {}
        core_socket: dict[int, int] = {}
        core_node: dict[int, int] = {}
        node_free: dict[int, int] = {}
        socket_free: dict[int, int] = {}
        for cpu, info in self.allocatable.items():
            if filter_exclusive and (self._pcpu_exclusive(info) or self._numa_exclusive(info)):
                continue
            cpus_in_cores.setdefault(info.core, []).append(cpu)
            core_socket[info.core] = info.socket
            core_node[info.core] = info.node
            node_free[info.node] = node_free.get(info.node, 0) + 1
            socket_free[info.socket] = socket_free.get(info.socket, 0) + 1
        colo = {
            s: sum(
                1 for c in self.result if (i := self.topology.details.get(c)) is not None and i.socket == s
            )
            for s in socket_free
        }

        def key(core: int) -> tuple[int, ...]:
            socket, node = core_socket[core], core_node[core]
            refs = self._core_ref_count(core) if self.max_ref_count > 1 else 0
            return (
                -colo[socket],
                self._by_strategy(socket_free[socket]),
                self._by_strategy(node_free[node]),
                len(cpus_in_cores[core]),
                socket,
                refs,
                core,
            )

        return [
            cpu for core in sorted(cpus_in_cores, key=key) for cpu in self._by_ref_count(cpus_in_cores[core])
        ]

    def spread_cpus(self, cpus: list[int]) -> list[int]:
        """``spreadCPUs``: rounds taking the first not-yet-seen core's CPU each, until all are placed."""
        if len(cpus) <= self.topology.cpus_per_core():
            return cpus
        out: list[int] = []
        pending = list(cpus)
        while pending:
            seen: set[int] = set()
            later = []
            for cpu in pending:
                core = self.topology.details[cpu].core
                if core in seen:
                    later.append(cpu)
                else:
                    seen.add(core)
                    out.append(cpu)
            pending = later
        return out


def take_cpus(
    topology: CPUTopology,
    max_ref_count: int,
    available: CPUSet,
    allocated: Mapping[int, CPUInfo],
    needed: int,
    bind_policy: str,
    exclusive_policy: str,
    strategy: str,
) -> CPUSet:
    """``takeCPUs``; raises :class:`AccumulatorError`."""
    acc = CPUAccumulator(topology, max_ref_count, available, allocated, needed, exclusive_policy, strategy)
    if acc.is_satisfied():
        return CPUSet(acc.result)
    if acc.is_failed():
        raise AccumulatorError(ERR_NOT_ENOUGH_CPUS)
    full = bind_policy == ext.CPU_BIND_FULL_PCPUS
    if (full or topology.cpus_per_core() == 1) and _take_whole_cores(acc):
        return CPUSet(acc.result)
    if not full and _take_in_one_group(acc):
        return CPUSet(acc.result)
    for filter_exclusive in (True, False):
        for cpu in acc.spread_cpus(acc.free_cpus(filter_exclusive)):
            if acc.needs(1):
                acc.take([cpu])
            if acc.is_satisfied():
                return CPUSet(acc.result)
    raise AccumulatorError(ERR_FAILED_TO_ALLOCATE)


def _take_first_fitting(acc: CPUAccumulator, groups: list[list[int]], spread: bool) -> bool:
    for cpus in groups:
        if len(cpus) >= acc.needed:
            acc.take((acc.spread_cpus(cpus) if spread else cpus)[: acc.needed])
            return True
    return False


def _take_whole_cores(acc: CPUAccumulator) -> bool:
    """``takeCPUs``' FullPCPUs branch (also taken when cores have one CPU): one NUMA node, else one
    socket, by strategy; else whole sockets with the most free cores, then core by core from the sockets
    with the fewest. True when satisfied."""
    topology = acc.topology
    if acc.needed <= topology.cpus_per_node():
        for filter_exclusive in (True, False):
            if _take_first_fitting(acc, acc.free_cores_in_node(True, filter_exclusive), spread=False):
                return True
    if acc.needed <= topology.cpus_per_socket() and _take_first_fitting(
        acc, acc.free_cores_in_socket(True), spread=False
    ):
        return True
    sockets = go_sort_slice(acc.free_cores_in_socket(True), lambda a, b: len(a) > len(b))
    unsatisfied = []
    for cpus in sockets:
        if not acc.needs(len(cpus)):
            unsatisfied.append(cpus)
            continue
        acc.take(cpus)
        if acc.is_satisfied():
            return True
    per_core = topology.cpus_per_core()
    if acc.needs(per_core):
        for cpus in go_sort_slice(unsatisfied, lambda a, b: len(a) < len(b)):
            for i in range(0, len(cpus), per_core):
                acc.take(cpus[i : i + per_core])
                if acc.is_satisfied():
                    return True
                if not acc.needs(per_core):
                    break
    return False


def _take_in_one_group(acc: CPUAccumulator) -> bool:
    """``takeCPUs``' non-FullPCPUs branch: spread CPUs of one NUMA node, else of one socket, by strategy.
    True when satisfied."""
    topology = acc.topology
    if acc.needed <= topology.cpus_per_node():
        for filter_exclusive in (True, False):
            if _take_first_fitting(acc, acc.free_cpus_in_node(filter_exclusive), spread=True):
                return True
    if acc.needed <= topology.cpus_per_socket():
        for filter_exclusive in (True, False):
            if _take_first_fitting(acc, acc.free_cpus_in_socket(filter_exclusive), spread=True):
                return True
    return False


def take_preferred_cpus(
    topology: CPUTopology,
    max_ref_count: int,
    available: CPUSet,
    preferred: CPUSet,
    allocated: Mapping[int, CPUInfo],
    needed: int,
    bind_policy: str,
    exclusive_policy: str,
    strategy: str,
) -> CPUSet:
    """``takePreferredCPUs``: the available preferred CPUs first, then the rest; raises
    :class:`AccumulatorError`."""
    result = CPUSet()
    preferred = available.intersection(preferred)
    if not preferred.is_empty():
        result = take_cpus(
            topology,
            max_ref_count,
            preferred,
            allocated,
            min(needed, preferred.size()),
            bind_policy,
            exclusive_policy,
            strategy,
        )
        needed -= result.size()
        available = available.difference(preferred)
    if needed > 0:
        result = result.union(
            take_cpus(
                topology, max_ref_count, available, allocated, needed, bind_policy, exclusive_policy, strategy
            )
        )
    return result
