"""A literal transcription of ``takeByTopologyNUMADistributed`` for property tests.

It follows the kubelet's loops one to one: every remainder subset of every combination is handed out
and scored, and combinations are built by simulating Go's recursive ``append`` on a shared accumulator
(backing arrays, lengths and capacities). The production code computes the same result with tables and
caches; the tests hold the two equal on random machines.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kubeletemu.cpumanager.cpu_assignment import CPUAccumulator, _take_packed
from kubeletemu.cpumanager.errors import CPUAllocationError, KubeletHangError
from kubeletemu.cpumanager.topology import CPUTopology
from kubeletemu.golang import go_round


class GoSlice:
    """(backing array, length, capacity) with Go's ``append``."""

    def __init__(self, backing: list[int], length: int, capacity: int) -> None:
        self.backing, self.length, self.capacity = backing, length, capacity

    def append(self, value: int) -> GoSlice:
        if self.length < self.capacity:
            self.backing[self.length] = value
            return GoSlice(self.backing, self.length + 1, self.capacity)
        capacity = max(1, 2 * self.capacity)  # growslice for 8-byte elements below 256
        backing = self.backing[: self.length] + [value] + [0] * (capacity - self.length - 1)
        return GoSlice(backing, self.length + 1, capacity)

    def values(self) -> list[int]:
        return self.backing[: self.length]


def iterate_combinations_literal(items: list[int], size: int, visit: Callable[[GoSlice], bool]) -> None:
    """``iterateCombinations`` with its recursive helper, verbatim."""
    if size < 1:
        return

    def helper(k: int, start: int, accum: GoSlice) -> bool:
        if k == 0:
            return visit(accum)
        for index in range(start, len(items) - k + 1):
            if helper(k - 1, index + 1, accum.append(items[index])):
                return True
        return False

    helper(size, 0, GoSlice([], 0, 0))


def standard_deviation(values: list[int]) -> float:
    # Summed in ascending order, the order the production code fixes for Go's random map order.
    ordered = sorted(values)
    mean = go_round(float(sum(ordered)) / len(ordered) * 1000) / 1000
    total = 0.0
    for value in ordered:
        total += (value - mean) * (value - mean)
    return go_round(math.sqrt(total / len(ordered)) * 1000) / 1000


def take_distributed_literal(
    topo: CPUTopology, available: list[int], num_cpus: int, group: int, strategy: str, align_by_socket: bool
) -> list[int]:
    avail = set(available)
    if num_cpus % group != 0:
        return sorted(_take_packed(topo, avail, num_cpus, strategy, False))
    acc = CPUAccumulator(topo, avail, num_cpus, strategy)
    if acc.is_satisfied():
        return sorted(acc.result)
    if acc.is_failed():
        raise CPUAllocationError(
            f"not enough cpus available to satisfy request: requested={num_cpus}, available={len(avail)}"
        )
    numas = acc.sort_available_numa_nodes()
    min_numas, max_numas = acc.range_numa_nodes_needed_to_satisfy(group)

    def free(numa: int) -> int:
        return acc.free_count_in_numa(numa)

    for k in range(min_numas, max_numas + 1):
        best: dict[str, object] = {"balance": math.inf, "remainder": None, "combo": None, "one_socket": False}

        def consider(combo_slice: GoSlice, best: dict[str, object] = best) -> bool:
            if best["balance"] == 0 and (not align_by_socket or best["one_socket"]):
                return True
            combo = combo_slice.values()
            if sum(free(n) for n in set(combo)) < num_cpus:
                return False
            if sum(free(n) // group for n in combo) * group < num_cpus:
                return False
            distribution = num_cpus // len(combo) // group * group
            if align_by_socket:
                for numa in combo:
                    distribution = min(distribution, free(numa) // group * group)
            if any(free(numa) < distribution for numa in combo):
                return False
            after = {numa: free(numa) for numa in numas}
            for numa in combo:
                after[numa] -= distribution
            remainder = num_cpus - distribution * len(combo)
            candidates = [numa for numa in combo if after[numa] >= group]
            local: dict[str, object] = {"balance": math.inf, "remainder": None}
            if remainder == 0:
                local["balance"] = standard_deviation(list(after.values()))

            def score(subset_slice: GoSlice) -> bool:
                trial = dict(after)
                left = remainder
                subset = subset_slice.values()
                if sum(trial[n] for n in subset) < left:
                    return False
                while left > 0:
                    progressed = False
                    for numa in subset:
                        if left == 0:
                            break
                        if trial[numa] < group:
                            continue
                        trial[numa] -= group
                        left -= group
                        progressed = True
                    if not progressed:
                        raise KubeletHangError("scoring loop")
                balance = standard_deviation(list(trial.values()))
                if balance < local["balance"]:  # type: ignore[operator]
                    local["balance"] = balance
                    local["remainder"] = subset_slice
                return False

            size = len(candidates)
            while remainder > 0 and size >= 1:
                iterate_combinations_literal(candidates, size, score)
                size -= 1
            one_socket = align_by_socket and topo.cpu_details.are_numa_nodes_in_same_socket(combo)
            better = local["balance"] < best["balance"]  # type: ignore[operator]
            if align_by_socket and one_socket != best["one_socket"]:
                better = one_socket
            if better:
                best.update(balance=local["balance"], remainder=local["remainder"], combo=combo_slice)
                if align_by_socket:
                    best["one_socket"] = one_socket
            return False

        iterate_combinations_literal(numas, k, consider)
        if best["combo"] is None:
            continue
        combo = best["combo"].values()  # type: ignore[attr-defined]
        distribution = num_cpus // len(combo) // group * group
        for numa in combo:
            distribution = min(distribution, free(numa) // group * group)
        for numa in combo:
            try:
                cpus = _take_packed(topo, acc.free_cpus_in_numa(numa), distribution, strategy, False)
            except CPUAllocationError:
                cpus = set()
            acc.take(cpus)
        remainder = num_cpus - distribution * len(combo)
        subset = best["remainder"].values() if best["remainder"] is not None else []  # type: ignore[attr-defined]
        while remainder > 0:
            progressed = False
            for numa in subset:
                if remainder == 0:
                    break
                if free(numa) < group:
                    continue
                try:
                    cpus = _take_packed(topo, acc.free_cpus_in_numa(numa), group, strategy, False)
                except CPUAllocationError:
                    cpus = set()
                acc.take(cpus)
                remainder -= group
                progressed = True
            if not progressed:
                raise KubeletHangError("allocation loop")
        if acc.needed > 0:
            raise CPUAllocationError(f"accounting error, not enough CPUs allocated, remaining: {acc.needed}")
        if acc.needed < 0:
            raise CPUAllocationError(f"accounting error, too many CPUs allocated, remaining: {acc.needed}")
        return sorted(acc.result)
    return sorted(_take_packed(topo, avail, num_cpus, strategy, False))
