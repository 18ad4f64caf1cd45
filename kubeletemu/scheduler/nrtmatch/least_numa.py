"""The LeastNUMANodes score strategy.

scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``, ``least_numa.go``
(``leastNUMAContainerScopeScore``, ``leastNUMAPodScopeScore``, ``normalizeScore``, ``numaNodesRequired``,
``findSuitableCombination``, ``nodesAvgDistance``, ...) and ``numaresources.go`` (``subtractFromNUMAs``):

- for k = 1, 2, … the k-combinations of the zones *in list order* (gonum's lexicographic order of list
  indices); the minimum average distance over them; a combination is valid when every zone in it lists
  every requested name (zero requests included), and fits when its summed amounts cover every non-zero
  request (a non-Guaranteed pod's cpu, memory and hugepages always do). The first k with a fit wins: the
  first fitting combination at the minimum distance at once, else the first strictly closest one below
  256; the answer is the set of the zones' NUMA ids;
- the average distance is ``float32(Σ costs) / float32(k²)`` over all ordered pairs, diagonal included,
  a missing cost counting 255; comparisons are float32 comparisons, and the minimum starts at 255
  (costs above it never count as minimal);
- container scope walks init then app containers, skips a container whose names no zone lists, and
  subtracts each one's request from the chosen zones — indexing the zone list by NUMA *id*. With ids
  that are not 0..n−1 in list order this takes from the wrong zone, or panics (index out of range);
- score ``100 − k·(100 // maxNUMA)``, plus half a step when every distance was minimal; 100 when nothing
  was NUMA-bound, 0 (MinNodeScore) when a request fits no combination — e.g. any request naming
  ``ephemeral-storage`` next to cpu, since no zone lists it.

How it is computed (same answers, far fewer steps; ``tests/scheduler/nrtmatch/test_fast_paths.py``
checks it against the plugin's loop kept there as an oracle):

- the distances depend only on the zones' NUMA ids and costs, never on amounts, so each size's
  combinations with their distances, sorted by (distance, list order), and the size's minimum are built
  once per zone list (:class:`Combinations`, kept on the NRT's cached :class:`NUMAZones`). The plugin's
  answer for a size is the fitting combination first in that order when its distance is below 256, minimal
  when its distance is the size's minimum: the walk stops at the first fit;
- which zones list every requested name is kept per set of names; single zones are tried first, and
  when none fits, sizes below the fewest valid zones whose largest amounts cover each request are
  skipped (no combination of them can fit) and a request not covered by all valid zones together fits
  nowhere;
- float32 averages are computed with hardware float32 rounding when exact (sums below 2²⁴), else with
  the exact :func:`float32`.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from kubeletemu.bitmask import BitMask
from kubeletemu.pod import Pod, QOSClass
from kubeletemu.scheduler.framework import PluginPanic, memo
from kubeletemu.scheduler.nrtmatch.numanodes import (
    NUMANode,
    NUMAZones,
    index_out_of_range,
    only_non_numa_resources,
)
from kubeletemu.scheduler.nrtmatch.resources import Amount, is_numa_affine, pod_requests

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_DISTANCE = 255
# findSuitableCombination's starting "closest so far".
_NO_DISTANCE = 256
WHERE_SUBTRACT = "noderesourcetopology.subtractFromNUMAs"
# Below this a sum of costs is exact in float32, and float32(sum / k²) is one correctly rounded division.
_FLOAT32_EXACT_INTEGERS = 2**24
_FLOAT32 = struct.Struct("f")

# A float32 value, exactly: a float when computed in hardware, a Fraction when computed exactly.
Distance = float | Fraction


@dataclass(frozen=True)
class RequestNeed:
    """One request's answer: the NUMA ids chosen (None: no combination fits) and whether the combination
    has the minimum average distance of its size."""

    name: str
    numa_nodes: BitMask | None
    min_distance: bool


@dataclass(frozen=True)
class LeastNUMAScore:
    """The strategy's score, with what it saw: ``numa_nodes`` the largest count (0: nothing NUMA-bound,
    None: a request fits nowhere), ``min_distance`` whether every request got a minimal combination."""

    score: int
    numa_nodes: int | None
    min_distance: bool
    needs: tuple[RequestNeed, ...]


def float32(value: Fraction) -> Fraction:
    """The nearest float32 (ties to even) of an exact value, kept exact."""
    if value == 0:
        return value
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    unit = Fraction(2) ** (exponent - 23)
    rounded = round(magnitude / unit) * unit
    return rounded if value > 0 else -rounded


def average_distance(nodes: Sequence[NUMANode], combination: Sequence[int]) -> Fraction:
    """``nodesAvgDistance`` over list indices, as float32."""
    if not combination:
        return Fraction(MAX_DISTANCE)
    total = 0
    for a in combination:
        for b in combination:
            total += nodes[a].costs.get(nodes[b].numa_id, MAX_DISTANCE)
    return float32(float32(Fraction(total)) / float32(Fraction(len(combination) ** 2)))


def min_average_distance(nodes: Sequence[NUMANode], combinations: Sequence[Sequence[int]]) -> Fraction:
    """``minAvgDistanceInCombinations``: starts at 255."""
    minimum = Fraction(MAX_DISTANCE)
    for combination in combinations:
        distance = average_distance(nodes, combination)
        if distance < minimum:
            minimum = distance
    return minimum


def float32_average(total: int, size: int) -> Distance:
    """``float32(total) / float32(size²)`` in float32, as :func:`average_distance` computes it. While
    |total| < 2²⁴ and size² < 2²⁴ both convert exactly, and rounding the correctly rounded float64
    quotient to float32 gives the correctly rounded float32 quotient (53 ≥ 2·24 + 2 bits), so hardware
    does it; otherwise the exact path."""
    square = size * size
    if -_FLOAT32_EXACT_INTEGERS < total < _FLOAT32_EXACT_INTEGERS and square < _FLOAT32_EXACT_INTEGERS:
        value: float = _FLOAT32.unpack(_FLOAT32.pack(total / square))[0]
        return value
    return float32(float32(Fraction(total)) / float32(Fraction(square)))


@dataclass(frozen=True)
class SizedCombinations:
    """Every combination of one size: ``minimum`` is ``minAvgDistanceInCombinations`` over them (255 at
    most); ``by_distance`` holds (distance, bit mask of list indices, list indices), sorted by distance,
    equal distances in gonum's lexicographic order."""

    minimum: Distance
    by_distance: tuple[tuple[Distance, int, tuple[int, ...]], ...]


class Combinations:
    """What a zone list's layout (NUMA ids, costs, resource names; not amounts) decides, worked out on
    first use and kept: the k-combinations of each size with their float32 average distances
    (:meth:`of_size`), and which zones list every name of a request (:meth:`valid_zones`). Subtractions
    change amounts only, so one table serves every request on the list and its copies (and, kept on
    :class:`NUMAZones`, every pod on the NRT)."""

    def __init__(self, nodes: Sequence[NUMANode]) -> None:
        self.ids = tuple(node.numa_id for node in nodes)
        self._cost = [[node.costs.get(other.numa_id, MAX_DISTANCE) for other in nodes] for node in nodes]
        self._names = [node.resources.keys() for node in nodes]
        self._sizes: dict[int, SizedCombinations] = {}
        self._valid: dict[tuple[str, ...], tuple[int, tuple[int, ...]]] = {}

    def of_size(self, size: int) -> SizedCombinations:
        sized = self._sizes.get(size)
        if sized is None:
            sized = self._sizes[size] = self._build(size)
        return sized

    def valid_zones(self, names: tuple[str, ...]) -> tuple[int, tuple[int, ...]]:
        """The zones listing every one of ``names`` (``isValidCombineResources`` per zone), as a bit mask
        of list indices and the indices."""
        valid = self._valid.get(names)
        if valid is None:
            indices = tuple(i for i, listed in enumerate(self._names) if all(n in listed for n in names))
            mask = 0
            for index in indices:
                mask |= 1 << index
            valid = self._valid[names] = (mask, indices)
        return valid

    def _build(self, size: int) -> SizedCombinations:
        cost = self._cost
        entries: list[tuple[Distance, int, tuple[int, ...]]] = []
        minimum: Distance = MAX_DISTANCE
        for combination in itertools.combinations(range(len(cost)), size):
            total = 0
            members = 0
            for a in combination:
                members |= 1 << a
                row = cost[a]
                for b in combination:
                    total += row[b]
            distance = float32_average(total, size)
            if distance < minimum:
                minimum = distance
            entries.append((distance, members, combination))
        entries.sort(key=lambda entry: entry[0])  # stable: ties stay in lexicographic order
        return SizedCombinations(minimum, tuple(entries))


def combinations_of(zones: NUMAZones) -> Combinations:
    """The :class:`Combinations` of an NRT's cached zone list, built once per NRT."""
    return memo(zones, "_nrtmatch_combinations", lambda: Combinations(zones.nodes))


Checks = Sequence[tuple[str, Amount]]


def numa_bound_checks(qos: QOSClass, request: Mapping[str, Amount]) -> Checks:
    """The non-zero amounts ``isResourceSetSuitable`` compares (a non-Guaranteed pod's cpu, memory and
    hugepages always fit)."""
    guaranteed = qos is QOSClass.GUARANTEED
    return [
        (name, amount)
        for name, amount in request.items()
        if amount != 0 and (guaranteed or not is_numa_affine(name))
    ]


def _fewest_zones(amounts: list[Amount], wanted: Amount) -> int | None:
    """How many of ``amounts`` it takes at least to reach ``wanted`` (largest first); None: not even all."""
    amounts.sort(reverse=True)
    total: Amount = 0
    for count, amount in enumerate(amounts, 1):
        total += amount
        if total >= wanted:
            return count
    return None


Available = Sequence[Mapping[str, Amount]]


def _covers(available: Available, indices: tuple[int, ...], checks: Checks) -> bool:
    """``combineResources`` + ``checkResourcesFit`` on a valid combination."""
    return all(sum(available[i][name] for i in indices) >= amount for name, amount in checks)


def _fewest_needed(available: Available, valid: tuple[int, ...], checks: Checks) -> int | None:
    """A lower bound on the size of a fitting combination: for each check, how many of the valid zones'
    largest amounts it takes; None when even all of them fall short (nothing fits at any size)."""
    smallest = 1
    for name, amount in checks:
        fewest = _fewest_zones([available[i][name] for i in valid], amount)
        if fewest is None:
            return None
        smallest = max(smallest, fewest)
    return smallest


def narrowest_fit(
    available: Available, names: tuple[str, ...], checks: Checks, table: Combinations
) -> tuple[BitMask | None, bool]:
    """:func:`numa_nodes_required` for a request given by its ``names`` and ``checks``, on the zones'
    ``available`` amounts (in list order; ``table`` holds their layout).

    Single zones are tried first (the usual answer, and cheap); only when none fits is the lower bound
    on the size worked out, to skip the sizes that cannot fit."""
    valid_mask, valid = table.valid_zones(names)
    if not valid:
        return None, False  # no combination is valid
    invalid = ~valid_mask
    ids = table.ids
    single = table.of_size(1)
    for distance, members, (index,) in single.by_distance:
        if not distance < _NO_DISTANCE:
            break  # sorted: nothing closer than 256 is left
        if members & invalid:
            continue
        zone = available[index]
        if all(zone[name] >= amount for name, amount in checks):
            return BitMask.of(ids[index]), distance == single.minimum
    smallest = _fewest_needed(available, valid, checks)
    if smallest is None:
        return None, False
    for size in range(max(2, smallest), len(valid) + 1):
        sized = table.of_size(size)
        for distance, members, indices in sized.by_distance:
            if not distance < _NO_DISTANCE:
                break
            if members & invalid or not _covers(available, indices, checks):
                continue
            return BitMask.of(*(ids[i] for i in indices)), distance == sized.minimum
    return None, False


def numa_nodes_required(
    qos: QOSClass,
    nodes: Sequence[NUMANode],
    request: Mapping[str, Amount],
    combinations: Combinations | None = None,
) -> tuple[BitMask | None, bool]:
    """``numaNodesRequired``: the NUMA ids of the narrowest fitting combination and whether its distance
    is the minimum for its size. ``combinations``: the table of ``nodes`` (or of the list they are a
    copy of) when the caller keeps one.

    A combination is valid when each of its zones lists every requested name, and fits when its summed
    amounts cover every non-zero request that must be NUMA-bound (``isResourceSetSuitable``)."""
    table = combinations if combinations is not None else Combinations(nodes)
    available = [node.resources for node in nodes]
    return narrowest_fit(available, tuple(request), numa_bound_checks(qos, request), table)


def normalize_score(numa_nodes: int, min_distance: bool, max_numa_nodes: int) -> int:
    """``normalizeScore``."""
    step = MAX_NODE_SCORE // max_numa_nodes
    score = MAX_NODE_SCORE - numa_nodes * step
    return score + step // 2 if min_distance else score


def subtract_from_numas(
    request: Mapping[str, Amount], available: list[dict[str, Amount]], ids: Sequence[int]
) -> None:
    """``subtractFromNUMAs``: takes each resource from the zones at *list index* = NUMA id, in id order,
    until covered (``available[i]``: zone ``i``'s amounts, changed in place); raises :class:`PluginPanic`
    on an index past the list."""
    for name, amount in request.items():
        wanted = amount
        for ident in ids:
            if wanted == 0:
                break
            if ident >= len(available):
                raise PluginPanic(index_out_of_range(ident, len(available)), WHERE_SUBTRACT)
            resources = available[ident]
            have = resources.get(name)
            if have is None:
                continue
            if wanted >= have:
                wanted -= have
                resources[name] = 0
            else:
                resources[name] = have - wanted
                wanted = 0


def _own_copies(free: list[dict[str, Amount]], shared: Available, ids: Sequence[int]) -> None:
    """Copy the zones :func:`subtract_from_numas` may change (list index = NUMA id) that are still the
    caller's, so ``shared`` (maybe a cached list) is never changed."""
    for ident in ids:
        if ident < len(free) and free[ident] is shared[ident]:
            free[ident] = dict(free[ident])


def _table(nodes: Sequence[NUMANode], zones: NUMAZones | None) -> Combinations:
    return combinations_of(zones) if zones is not None else Combinations(nodes)


def container_scope_score(
    pod: Pod, qos: QOSClass, nodes: Sequence[NUMANode], max_numa_nodes: int, zones: NUMAZones | None = None
) -> LeastNUMAScore:
    """``leastNUMAContainerScopeScore`` (``nodes`` are not changed). ``zones``: the cached list ``nodes``
    comes from, whose combination table is then reused."""
    table = _table(nodes, zones)
    requests = pod_requests(pod)
    listed = zones.listed if zones is not None else {name for node in nodes for name in node.resources}
    shared = [node.resources for node in nodes]
    free = list(shared)
    most = 0
    all_minimal = True
    needs: list[RequestNeed] = []
    for container, request in requests.containers:
        if not any(name in listed for name in request.names):
            continue  # onlyNonNUMAResources
        checks = request.numa_bound if qos is requests.qos else numa_bound_checks(qos, request.amounts)
        mask, minimal = narrowest_fit(free, request.names, checks, table)
        needs.append(RequestNeed(container.name, mask, minimal))
        if mask is None:
            return LeastNUMAScore(MIN_NODE_SCORE, None, False, tuple(needs))
        all_minimal = all_minimal and minimal
        most = max(most, mask.count())
        ids = mask.bits()
        _own_copies(free, shared, ids)
        subtract_from_numas(request.amounts, free, ids)
    if most == 0:
        return LeastNUMAScore(MAX_NODE_SCORE, 0, True, tuple(needs))
    return LeastNUMAScore(normalize_score(most, all_minimal, max_numa_nodes), most, all_minimal, tuple(needs))


def pod_scope_score(
    pod: Pod, qos: QOSClass, nodes: Sequence[NUMANode], max_numa_nodes: int, zones: NUMAZones | None = None
) -> LeastNUMAScore:
    """``leastNUMAPodScopeScore``. ``zones``: the cached list ``nodes`` comes from."""
    requests = pod_requests(pod)
    request = requests.effective
    if only_non_numa_resources(nodes, request.amounts):
        return LeastNUMAScore(MAX_NODE_SCORE, 0, True, ())
    checks = request.numa_bound if qos is requests.qos else numa_bound_checks(qos, request.amounts)
    available = [node.resources for node in nodes]
    mask, minimal = narrowest_fit(available, request.names, checks, _table(nodes, zones))
    need = (RequestNeed(pod.name, mask, minimal),)
    if mask is None:
        return LeastNUMAScore(MIN_NODE_SCORE, None, False, need)
    count = mask.count()
    return LeastNUMAScore(normalize_score(count, minimal, max_numa_nodes), count, minimal, need)
