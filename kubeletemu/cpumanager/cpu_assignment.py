"""``cpu_assignment.go``: the CPU accumulator and the take-by-topology algorithms of the static policy.

The kubelet re-scans its ``CPUDetails`` map for every query, which is quadratic; this accumulator keeps
free-CPU counters per NUMA node, socket, core and uncore cache (and per pair of them) up to date on every
take, so each ordering is built from the counters. The orderings, and therefore the results, are the
kubelet's, including its quirks:

* an element is "free" when all of its CPUs in the full topology are still free;
* the hierarchical orders are concatenations of per-parent sorts, so with NUMA nodes that span sockets
  (or the reverse) an element can be listed twice, and taking it twice still counts twice against the
  request, as ``cpuAccumulator.take`` does;
* the NUMA-distributed search keeps slices that later combinations overwrite (see ``go_semantics``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from kubeletemu.cpumanager.errors import CPUAllocationError, CPUManagerError, KubeletHangError
from kubeletemu.cpumanager.go_semantics import SliceView, final_combination_positions, iterate_combinations_go
from kubeletemu.cpumanager.topology import CPUTopology, _DetailsIndex
from kubeletemu.golang import go_round

CPU_SORTING_STRATEGY_PACKED: Final = "packed"
CPU_SORTING_STRATEGY_SPREAD: Final = "spread"
CPU_SORTING_STRATEGIES = (CPU_SORTING_STRATEGY_PACKED, CPU_SORTING_STRATEGY_SPREAD)


def _index(topo: CPUTopology) -> _DetailsIndex:
    return topo.cpu_details._index


class CPUAccumulator:
    """``cpuAccumulator``: the free CPUs (``details``), the result so far and the CPUs still needed."""

    def __init__(
        self,
        topo: CPUTopology,
        available: Iterable[int],
        num_cpus: int,
        cpu_sorting_strategy: str = CPU_SORTING_STRATEGY_PACKED,
    ) -> None:
        _check_strategy(cpu_sorting_strategy)
        self.topo = topo
        self._idx = _index(topo)
        infos = topo.cpu_details
        # details = topo.CPUDetails.KeepOnly(available): CPUs outside the topology are dropped.
        self.free: set[int] = {cpu for cpu in available if cpu in infos}
        self.result: set[int] = set()
        self.needed = num_cpus
        # The header counts decide the hierarchy, as in newCPUAccumulator.
        self.numa_first = topo.num_sockets >= topo.num_numa_nodes
        self.packed = cpu_sorting_strategy == CPU_SORTING_STRATEGY_PACKED
        # Eight counters from one pass over the distinct (numa, socket, core, uncore) keys.
        numa: dict[int, int] = {}
        socket: dict[int, int] = {}
        core: dict[int, int] = {}
        uncore: dict[int, int] = {}
        numa_socket: dict[tuple[int, int], int] = {}
        socket_core: dict[tuple[int, int], int] = {}
        numa_core: dict[tuple[int, int], int] = {}
        numa_uncore: dict[tuple[int, int], int] = {}
        keys = self._idx.keys
        for (n, s, c, u), k in Counter(keys[cpu] for cpu in self.free).items():
            numa[n] = numa.get(n, 0) + k
            socket[s] = socket.get(s, 0) + k
            core[c] = core.get(c, 0) + k
            uncore[u] = uncore.get(u, 0) + k
            numa_socket[n, s] = numa_socket.get((n, s), 0) + k
            socket_core[s, c] = socket_core.get((s, c), 0) + k
            numa_core[n, c] = numa_core.get((n, c), 0) + k
            numa_uncore[n, u] = numa_uncore.get((n, u), 0) + k
        self._numa, self._socket, self._core, self._uncore = numa, socket, core, uncore
        self._numa_socket, self._socket_core = numa_socket, socket_core
        self._numa_core, self._numa_uncore = numa_core, numa_uncore

    def _count(self, cpu: int, delta: int) -> None:
        n, s, c, u = self._idx.keys[cpu]
        numa, socket, core, uncore = self._numa, self._socket, self._core, self._uncore
        numa[n] = numa.get(n, 0) + delta
        socket[s] = socket.get(s, 0) + delta
        core[c] = core.get(c, 0) + delta
        uncore[u] = uncore.get(u, 0) + delta
        pairs = self._numa_socket
        pairs[n, s] = pairs.get((n, s), 0) + delta
        pairs = self._socket_core
        pairs[s, c] = pairs.get((s, c), 0) + delta
        pairs = self._numa_core
        pairs[n, c] = pairs.get((n, c), 0) + delta
        pairs = self._numa_uncore
        pairs[n, u] = pairs.get((n, u), 0) + delta

    # -- bookkeeping -------------------------------------------------------------------------------

    def take(self, cpus: Iterable[int]) -> None:
        """``take``: add to the result, drop from the free CPUs, and count |cpus| against the request
        (even CPUs taken before, as the kubelet does)."""
        chosen = set(cpus)
        self.result |= chosen
        for cpu in chosen:
            if cpu in self.free:
                self.free.discard(cpu)
                self._count(cpu, -1)
        self.needed -= len(chosen)

    def needs_at_least(self, count: int) -> bool:
        return self.needed >= count

    def is_satisfied(self) -> bool:
        return self.needed < 1

    def is_failed(self) -> bool:
        return self.needed > len(self.free)

    def free_cpus_in_numa(self, numa: int) -> set[int]:
        """``details.CPUsInNUMANodes(numa)``."""
        return self.free & self._idx.cpus_by_numa.get(numa, frozenset())

    def free_count_in_numa(self, numa: int) -> int:
        return self._numa.get(numa, 0)

    def available_numa_nodes(self) -> set[int]:
        """``details.NUMANodes()``."""
        return {n for n, count in self._numa.items() if count > 0}

    # -- orderings ---------------------------------------------------------------------------------

    @staticmethod
    def _sorted(ids: Iterable[int], counts: Mapping[int, int]) -> list[int]:
        """``cpuAccumulator.sort``: by free CPUs ascending, then by id."""
        return sorted(ids, key=lambda i: (counts.get(i, 0), i))

    def _present(
        self, candidates: Iterable[int], parent: int, pairs: Mapping[tuple[int, int], int]
    ) -> list[int]:
        return [c for c in candidates if pairs.get((parent, c), 0) > 0]

    def sort_available_numa_nodes(self) -> list[int]:
        if self.numa_first:
            return self._sorted([n for n, c in self._numa.items() if c > 0], self._numa)
        result: list[int] = []
        for socket in self.sort_available_sockets():
            numas = [
                n for n in self._idx.numas_by_socket.get(socket, ()) if self._numa_socket.get((n, socket), 0)
            ]
            result.extend(self._sorted(numas, self._numa))
        return result

    def sort_available_sockets(self) -> list[int]:
        if not self.numa_first:
            return self._sorted([s for s, c in self._socket.items() if c > 0], self._socket)
        result: list[int] = []
        for numa in self.sort_available_numa_nodes():
            sockets = self._present(self._idx.sockets_by_numa.get(numa, ()), numa, self._numa_socket)
            result.extend(self._sorted(sockets, self._socket))
        return result

    def sort_available_cores(self) -> list[int]:
        result: list[int] = []
        if self.numa_first:
            for socket in self.sort_available_sockets():
                cores = self._present(self._idx.cores_by_socket.get(socket, ()), socket, self._socket_core)
                result.extend(self._sorted(cores, self._core))
        else:
            for numa in self.sort_available_numa_nodes():
                cores = self._present(self._idx.cores_by_numa.get(numa, ()), numa, self._numa_core)
                result.extend(self._sorted(cores, self._core))
        return result

    def sort_available_uncore_caches(self) -> list[int]:
        result: list[int] = []
        for numa in self.sort_available_numa_nodes():
            uncores = self._present(self._idx.uncores_by_numa.get(numa, ()), numa, self._numa_uncore)
            result.extend(self._sorted(uncores, self._uncore))
        return result

    def sort_available_cpus_packed(self) -> list[int]:
        """Core by core in core order, each core's free CPUs ascending."""
        result: list[int] = []
        for core in self.sort_available_cores():
            result.extend(sorted(self.free & self._idx.cpus_by_core.get(core, frozenset())))
        return result

    def sort_available_cpus_spread(self) -> list[int]:
        """Socket by socket in socket order, each socket's free CPUs ascending (siblings apart)."""
        result: list[int] = []
        for socket in self.sort_available_sockets():
            result.extend(sorted(self.free & self._idx.cpus_by_socket.get(socket, frozenset())))
        return result

    def _is_whole(
        self, element: int, counts: Mapping[int, int], totals: Mapping[int, frozenset[int]]
    ) -> bool:
        return counts.get(element, 0) == len(totals.get(element, ()))

    def free_numa_nodes(self) -> list[int]:
        return [
            n
            for n in self.sort_available_numa_nodes()
            if self._is_whole(n, self._numa, self._idx.cpus_by_numa)
        ]

    def free_sockets(self) -> list[int]:
        idx = self._idx
        return [
            s for s in self.sort_available_sockets() if self._is_whole(s, self._socket, idx.cpus_by_socket)
        ]

    def free_uncore_caches(self) -> list[int]:
        idx = self._idx
        return [
            u
            for u in self.sort_available_uncore_caches()
            if self._is_whole(u, self._uncore, idx.cpus_by_uncore)
        ]

    def free_cores(self) -> list[int]:
        return [
            c for c in self.sort_available_cores() if self._is_whole(c, self._core, self._idx.cpus_by_core)
        ]

    def free_cpus(self) -> list[int]:
        """``freeCPUs``: the free CPUs in the strategy's order."""
        return self.sort_available_cpus_packed() if self.packed else self.sort_available_cpus_spread()

    # -- taking whole elements ---------------------------------------------------------------------

    def _take_whole(self, elements: list[int], totals: Mapping[int, frozenset[int]]) -> None:
        for element in elements:
            cpus = totals.get(element, frozenset())
            if self.needs_at_least(len(cpus)):
                self.take(cpus)

    def take_full_numa_nodes(self) -> None:
        self._take_whole(self.free_numa_nodes(), self._idx.cpus_by_numa)

    def take_full_sockets(self) -> None:
        self._take_whole(self.free_sockets(), self._idx.cpus_by_socket)

    def take_full_first_level(self) -> None:
        if self.numa_first:
            self.take_full_numa_nodes()
        else:
            self.take_full_sockets()

    def take_full_second_level(self) -> None:
        if self.numa_first:
            self.take_full_sockets()
        else:
            self.take_full_numa_nodes()

    def take_full_uncore(self) -> None:
        self._take_whole(self.free_uncore_caches(), self._idx.cpus_by_uncore)

    def take_partial_uncore(self, uncore: int) -> None:
        """``takePartialUncore``: the lowest cores of the uncore cache that cover the need, exactly."""
        per_core = self.topo.cpus_per_core()
        if per_core == 0:
            raise CPUAllocationError("cannot align by uncore cache: the topology declares no cores")
        cores_needed = (self.needed + per_core - 1) // per_core
        idx = self._idx
        # details.CoresNeededInUncoreCache: cores with a free CPU in this uncore, lowest ids first.
        cores = sorted(
            {
                self.topo.cpu_details[cpu].core_id
                for cpu in self.free & idx.cpus_by_uncore.get(uncore, frozenset())
            }
        )[:cores_needed]
        chosen: set[int] = set()
        for core in cores:
            chosen |= self.free & idx.cpus_by_core.get(core, frozenset())
        if self.needed % 2 != 0 and per_core > 1:
            ordered = sorted(chosen)
            if len(ordered) > self.needed:
                # The kubelet drops exactly one CPU (the highest), however many are over.
                ordered = ordered[:-1]
            chosen = set(ordered)
        if self.needed == len(chosen):
            self.take(chosen)

    def take_uncore_cache(self) -> None:
        """``takeUncoreCache``: whole uncore caches while they fit, else one partial uncore cache."""
        for uncore in self.sort_available_uncore_caches():
            size = len(self._idx.cpus_by_uncore.get(uncore, ()))
            if self.needs_at_least(size):
                self.take_full_uncore()
            if self.is_satisfied():
                return
            self.take_partial_uncore(uncore)
            if self.is_satisfied():
                return

    def take_full_cores(self) -> None:
        self._take_whole(self.free_cores(), self._idx.cpus_by_core)

    def take_remaining_cpus(self) -> None:
        for cpu in self.free_cpus():
            self.take((cpu,))
            if self.is_satisfied():
                return

    def range_numa_nodes_needed_to_satisfy(self, cpu_group_size: int) -> tuple[int, int]:
        """``rangeNUMANodesNeededToSatisfy``: the (min, max) number of NUMA nodes worth trying."""
        idx = self._idx
        num_numa_nodes = len(idx.cpus_by_numa)
        num_available = len(self.available_numa_nodes())
        num_cpus = len(self.topo.cpu_details)
        groups = (num_cpus - 1) // cpu_group_size + 1
        groups_per_numa = (groups - 1) // num_numa_nodes + 1
        groups_needed = (self.needed - 1) // cpu_group_size + 1
        return (groups_needed - 1) // groups_per_numa + 1, min(groups_needed, num_available)


def _not_enough(num_cpus: int, available: int) -> CPUAllocationError:
    return CPUAllocationError(
        f"not enough cpus available to satisfy request: requested={num_cpus}, available={available}"
    )


def _take_packed(
    topo: CPUTopology, available: set[int], num_cpus: int, strategy: str, prefer_align_by_uncore_cache: bool
) -> set[int]:
    if num_cpus < 1:
        # The accumulator would be satisfied at once (allocateCPUs asks for 0 remaining CPUs whenever
        # the aligned ones sufficed): skip building it.
        _check_strategy(strategy)
        return set()
    acc = CPUAccumulator(topo, available, num_cpus, strategy)
    if acc.is_satisfied():
        return acc.result
    if acc.is_failed():
        raise _not_enough(num_cpus, len(available))
    # 1. Whole NUMA nodes and sockets, the higher level of the hierarchy first.
    acc.take_full_first_level()
    if acc.is_satisfied():
        return acc.result
    acc.take_full_second_level()
    if acc.is_satisfied():
        return acc.result
    # 2. Whole, then partial, uncore caches.
    if prefer_align_by_uncore_cache:
        acc.take_uncore_cache()
        if acc.is_satisfied():
            return acc.result
    # 3. Whole cores, unless CPUs are to be spread over cores.
    if strategy != CPU_SORTING_STRATEGY_SPREAD:
        acc.take_full_cores()
        if acc.is_satisfied():
            return acc.result
    # 4. Single threads, filling partially used cores first.
    acc.take_remaining_cpus()
    if acc.is_satisfied():
        return acc.result
    raise CPUAllocationError("failed to allocate cpus")


def _check_strategy(strategy: str) -> None:
    if strategy not in CPU_SORTING_STRATEGIES:
        raise CPUManagerError(f"unknown CPU sorting strategy {strategy!r}; expected 'packed' or 'spread'")


def take_by_topology_numa_packed(
    topology: CPUTopology,
    available: Iterable[int],
    num_cpus: int,
    cpu_sorting_strategy: str = CPU_SORTING_STRATEGY_PACKED,
    prefer_align_by_uncore_cache: bool = False,
) -> list[int]:
    """``takeByTopologyNUMAPacked``: best fit by whole NUMA nodes/sockets, uncore caches, cores, threads.

    Returns the chosen CPU ids ascending; raises ``CPUAllocationError`` with the kubelet's text.
    """
    _check_strategy(cpu_sorting_strategy)
    cpus = set(available)
    return sorted(_take_packed(topology, cpus, num_cpus, cpu_sorting_strategy, prefer_align_by_uncore_cache))


def _standard_deviation(values: Sequence[int]) -> float:
    """``standardDeviation``: population deviation around the mean rounded to 3 decimals, itself rounded
    to 3 decimals (``math.Round(x*1000)/1000`` both times)."""
    count = len(values)
    mean = go_round(float(sum(values)) / count * 1000) / 1000
    total = 0.0
    for value in values:
        delta = value - mean
        total += delta * delta
    return go_round(math.sqrt(total / count) * 1000) / 1000


def _hand_out_remainder(values: list[int], slots: list[int], remainder: int, group: int, what: str) -> None:
    """Round-robin ``group`` CPUs per slot until ``remainder`` is gone (the kubelet's scoring loop).

    The kubelet loops ``for remainder > 0`` with no exit when no node can give a group any more; that
    state raises ``KubeletHangError`` here instead.
    """
    while remainder > 0:
        progressed = False
        for index in slots:
            if remainder == 0:
                break
            if values[index] < group:
                continue
            values[index] -= group
            remainder -= group
            progressed = True
        if not progressed:
            raise KubeletHangError(
                f"the kubelet would loop forever distributing {what}: {remainder} CPUs left and no NUMA "
                f"node of the subset has a group of {group} free"
            )


def take_by_topology_numa_distributed(
    topology: CPUTopology,
    available: Iterable[int],
    num_cpus: int,
    cpu_group_size: int,
    cpu_sorting_strategy: str = CPU_SORTING_STRATEGY_PACKED,
    align_by_socket: bool = False,
) -> list[int]:
    """``takeByTopologyNUMADistributed`` (KEP-2902): spread evenly over the fewest NUMA nodes.

    For k = min..max NUMA nodes, every k-combination is scored by the standard deviation of the free
    CPUs left per NUMA node (remainder groups handed out over the best subset); the best combination of
    the smallest workable k wins. Falls back to the packed algorithm when the request is not a multiple
    of ``cpu_group_size`` or no combination works. Returns ascending CPU ids.
    """
    _check_strategy(cpu_sorting_strategy)
    if cpu_group_size < 1:
        raise CPUAllocationError(f"invalid CPU group size {cpu_group_size}: the topology declares no cores")
    avail = set(available)
    return sorted(
        _take_distributed(topology, avail, num_cpus, cpu_group_size, cpu_sorting_strategy, align_by_socket)
    )


def _take_distributed(
    topo: CPUTopology, available: set[int], num_cpus: int, group: int, strategy: str, align_by_socket: bool
) -> set[int]:
    if num_cpus % group != 0 or num_cpus < 1:
        return _take_packed(topo, available, num_cpus, strategy, False)
    acc = CPUAccumulator(topo, available, num_cpus, strategy)
    if acc.is_satisfied():
        return acc.result
    if acc.is_failed():
        raise _not_enough(num_cpus, len(available))

    numas = acc.sort_available_numa_nodes()
    free = {numa: acc.free_count_in_numa(numa) for numa in numas}
    min_numas, max_numas = acc.range_numa_nodes_needed_to_satisfy(group)
    details = topo.cpu_details
    # The kubelet sums the deviations in Go map order, which is random; summing in ascending order
    # makes the score a function of the multiset of free counts, so symmetric candidates share it.
    balances: dict[tuple[int, ...], float] = {}

    def balance_of(values: Iterable[int]) -> float:
        key = tuple(sorted(values))
        balance = balances.get(key)
        if balance is None:
            balance = balances[key] = _standard_deviation(key)
        return balance

    for k in range(min_numas, max_numas + 1):
        best = _BestCombo()

        def consider(combo_view: SliceView, best: _BestCombo = best) -> bool:
            if best.balance == 0 and (not align_by_socket or best.in_one_socket):
                return True
            combo = combo_view.values()
            if sum(free.get(n, 0) for n in set(combo)) < num_cpus:
                return False
            if sum(free.get(n, 0) // group for n in combo) * group < num_cpus:
                return False
            distribution = num_cpus // len(combo) // group * group
            if align_by_socket:
                for numa in combo:
                    distribution = min(distribution, free.get(numa, 0) // group * group)
            if any(free.get(numa, 0) < distribution for numa in combo):
                return False
            after = dict(free)
            for numa in combo:
                after[numa] -= distribution
            remainder = num_cpus - distribution * len(combo)
            candidates = [numa for numa in combo if after[numa] >= group]

            if remainder == 0:
                local_balance, local_remainder = balance_of(after.values()), None
            else:
                local_balance, local_remainder = _best_remainder_subset(
                    candidates, after, remainder, group, balance_of
                )

            in_one_socket = align_by_socket and details.are_numa_nodes_in_same_socket(combo)
            better = local_balance < best.balance
            if align_by_socket and in_one_socket != best.in_one_socket:
                better = in_one_socket
            if better:
                best.balance = local_balance
                best.remainder = local_remainder
                best.combo = combo_view
                if align_by_socket:
                    best.in_one_socket = in_one_socket
            return False

        iterate_combinations_go(numas, k, consider)
        if best.combo is None:
            continue

        # The stored slices are read now: combinations built after them may have overwritten them.
        combo = best.combo.values()
        distribution = num_cpus // len(combo) // group * group
        for numa in combo:
            distribution = min(distribution, acc.free_count_in_numa(numa) // group * group)
        for numa in combo:
            acc.take(_take_packed_or_nothing(topo, acc.free_cpus_in_numa(numa), distribution, strategy))
        remainder = num_cpus - distribution * len(combo)
        subset = best.remainder or []
        while remainder > 0:
            progressed = False
            for numa in subset:
                if remainder == 0:
                    break
                if acc.free_count_in_numa(numa) < group:
                    continue
                acc.take(_take_packed_or_nothing(topo, acc.free_cpus_in_numa(numa), group, strategy))
                remainder -= group
                progressed = True
            if not progressed:
                raise KubeletHangError(
                    f"the kubelet would loop forever allocating the remainder: {remainder} CPUs left and no "
                    f"NUMA node in {subset} has a group of {group} free"
                )
        if acc.needed > 0:
            raise CPUAllocationError(f"accounting error, not enough CPUs allocated, remaining: {acc.needed}")
        if acc.needed < 0:
            raise CPUAllocationError(f"accounting error, too many CPUs allocated, remaining: {acc.needed}")
        return acc.result

    return _take_packed(topo, available, num_cpus, strategy, False)


class _BestCombo:
    __slots__ = ("balance", "combo", "in_one_socket", "remainder")

    def __init__(self) -> None:
        self.balance = math.inf
        self.combo: SliceView | None = None
        # The remainder subset as the kubelet will read it (already its final, possibly overwritten, content).
        self.remainder: list[int] | None = None
        self.in_one_socket = False


@functools.cache
def _subset_table(count: int, size: int) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """Every ``size``-subset of positions 0..count-1 in ``iterateCombinations`` order, each with the
    positions its slice holds once the whole iteration has run (``final_combination_positions``)."""
    return tuple(
        (positions, final_combination_positions(positions, count))
        for positions in itertools.combinations(range(count), size)
    )


def _best_remainder_subset(
    candidates: list[int],
    after: dict[int, int],
    remainder: int,
    group: int,
    balance_of: Callable[[Iterable[int]], float],
) -> tuple[float, list[int] | None]:
    """The remainder search of ``takeByTopologyNUMADistributed`` for one NUMA combination.

    The kubelet tries every subset of the candidates, largest first, hands the remainder out over it in
    groups, round-robin, and keeps the first subset with the strictly lowest standard deviation of free
    CPUs. A subset of at least ``remainder / group`` candidates (each has a group free) is served in one
    round by its first ``remainder / group`` members, so those subsets are scored once per distinct head.
    Smaller subsets may need several rounds and are handed out literally.

    Returns the best balance and the winning subset as the kubelet later reads its slice: the search
    never stops early, so that is the last sibling written into the same backing array.
    """
    base = list(after.values())
    slot = {numa: index for index, numa in enumerate(after)}
    slots = [slot[numa] for numa in candidates]
    count = len(candidates)
    heads = remainder // group
    one_round_safe = len(set(slots)) == count  # a NUMA id listed twice breaks the one-round argument
    # Scores by head (one-round subsets) and by the free counts of a subset's members, in order (the
    # hand-out depends on nothing else; the rest of ``base`` is the same for the whole combination).
    head_scores: dict[tuple[int, ...], float] = {}
    member_scores: dict[tuple[int, ...], float] = {}
    best_balance = math.inf
    best_final: tuple[int, ...] | None = None
    for size in range(count, 0, -1):
        one_round = size >= heads and one_round_safe
        for positions, final in _subset_table(count, size):
            if one_round:
                head = positions[:heads]
                balance = head_scores.get(head)
                if balance is None:
                    trial = base[:]
                    for position in head:
                        trial[slots[position]] -= group
                    balance = head_scores[head] = balance_of(trial)
            else:
                members = [slots[position] for position in positions]
                values = tuple([base[index] for index in members])
                if sum(values) < remainder:
                    continue
                cached = member_scores.get(values) if one_round_safe else None
                if cached is None:
                    trial = base[:]
                    left = remainder
                    while left > 0:  # the kubelet's round-robin, inlined: this is the hot loop
                        before = left
                        for index in members:
                            if left == 0:
                                break
                            if trial[index] >= group:
                                trial[index] -= group
                                left -= group
                        if left == before:
                            _hand_out_remainder(trial, members, left, group, "a remainder while scoring")
                    cached = balance_of(trial)
                    if one_round_safe:
                        member_scores[values] = cached
                balance = cached
            if balance < best_balance:
                best_balance, best_final = balance, final
    if best_final is None:
        return best_balance, None
    return best_balance, [candidates[position] for position in best_final]


def _take_packed_or_nothing(topo: CPUTopology, available: set[int], num_cpus: int, strategy: str) -> set[int]:
    """The distributed allocator ignores the packed allocator's errors (``cpus, _ :=``)."""
    try:
        return _take_packed(topo, available, num_cpus, strategy, False)
    except CPUAllocationError:
        return set()
