"""The per-zone score strategies MostAllocated, LeastAllocated and BalancedAllocation.

scheduler-plugins ``903da7df82cb8794dda8f2d510ba1156111662dd``: ``most_allocated.go``,
``least_allocated.go``, ``balanced_allocation.go`` and ``score.go`` (``resourceToWeightMap.weight``).
Each scores one request against one zone's *available* amounts (a resource the zone lacks counts as 0):

- amounts are ``Quantity.Value()``, rounded up (500m CPU is 1), after an exact ``requested > available``
  check; integer arithmetic truncates as Go's does;
- Most/Least: per resource 0 when the zone has none or too little, else ``req·100 // avail`` /
  ``(avail − req)·100 // avail``; the weighted sum over the requested resources divided by the sum of
  weights (configured weight, 1 when unset or below 1). An empty request divides by zero: a Go panic;
- Balanced: per resource the fraction req/avail (1 when the zone has none), any fraction above 1 scores
  0; else ``int64((1 − variance)·100)`` with gonum's sample variance (n − 1, corrected two-pass). With
  fewer than two resources that variance is NaN, and Go's float-to-int64 conversion of NaN on amd64 gives
  −9223372036854775808 (which the framework then rejects as out of range).

A request is prepared once (:class:`WeightedRequest`: weights resolved, ``Value()`` taken) and then scored
against each zone by a zone strategy (:data:`ZONE_STRATEGIES`); amounts are ints where whole, so the
per-zone work is integer arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kubeletemu.scheduler.framework import PluginPanic
from kubeletemu.scheduler.nrtmatch.resources import Amount

MAX_NODE_SCORE = 100
DEFAULT_WEIGHT = 1
GO_INT64_INDEFINITE = -(2**63)  # amd64 CVTTSD2SQ for NaN and out-of-range values
WHERE_MOST = "noderesourcetopology.mostAllocatedScore"
WHERE_LEAST = "noderesourcetopology.leastAllocatedScore"
WHERE_MOST_STRATEGY = "noderesourcetopology.mostAllocatedScoreStrategy"
WHERE_LEAST_STRATEGY = "noderesourcetopology.leastAllocatedScoreStrategy"

Requested = Mapping[str, Amount]
Weights = Mapping[str, int]
Strategy = Callable[[Requested, Mapping[str, Amount], Weights], int]


def weight(weights: Weights, name: str) -> int:
    """``resourceToWeightMap.weight``."""
    value = weights.get(name, DEFAULT_WEIGHT)
    return value if value >= 1 else DEFAULT_WEIGHT


def go_div(a: int, b: int, where: str) -> int:
    """Go's int64 ``/``: truncation toward zero; a zero divisor panics."""
    if b > 0 and a >= 0:
        return a // b
    if b == 0:
        raise PluginPanic("integer divide by zero", where)
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def go_int64(value: float) -> int:
    if math.isnan(value) or not -(2.0**63) <= value < 2.0**63:
        return GO_INT64_INDEFINITE
    return math.trunc(value)


def _value(amount: Amount) -> int:
    """``Quantity.Value()``: the ceiling."""
    return amount if type(amount) is int else math.ceil(amount)


@dataclass(frozen=True)
class WeightedRequest:
    """A request as the strategies read it: per resource (in request order) its name, exact amount,
    ``Value()`` and weight, and the sum of those weights."""

    items: tuple[tuple[str, Amount, int, int], ...]
    weight_sum: int


def weighted_request(requested: Requested, weights: Weights) -> WeightedRequest:
    items = tuple((name, amount, _value(amount), weight(weights, name)) for name, amount in requested.items())
    return WeightedRequest(items, sum(item[3] for item in items))


Zones = Sequence[Mapping[str, Amount]]
# Scores one request against each zone's available amounts, in order.
ZoneStrategy = Callable[[WeightedRequest, Zones], list[int]]


def most_allocated_zones(request: WeightedRequest, zones: Zones) -> list[int]:
    """``mostAllocatedScoreStrategy`` per zone: per resource 0 when the zone has none or too little,
    else ``req·100 // avail``; weighted, divided by the sum of weights. (The common case, whole
    non-negative amounts, is inlined; anything else goes through :func:`_value` and :func:`go_div`.)"""
    scores = []
    for available in zones:
        total = 0
        for name, amount, value, w in request.items:
            have = available.get(name, 0)
            if have == 0 or amount > have:
                continue
            product = value * MAX_NODE_SCORE
            if type(have) is int and have > 0 and product >= 0:
                total += product // have * w
            else:
                total += go_div(product, _value(have), WHERE_MOST) * w
        weight_sum = request.weight_sum
        scores.append(
            total // weight_sum
            if weight_sum > 0 and total >= 0
            else go_div(total, weight_sum, WHERE_MOST_STRATEGY)
        )
    return scores


def least_allocated_zones(request: WeightedRequest, zones: Zones) -> list[int]:
    """``leastAllocatedScoreStrategy`` per zone: per resource 0 when the zone has none or too little,
    else ``(avail − req)·100 // avail``; weighted, divided by the sum of weights. (The common case, whole
    non-negative amounts, is inlined; anything else goes through :func:`_value` and :func:`go_div`.)"""
    scores = []
    for available in zones:
        total = 0
        for name, amount, value, w in request.items:
            have = available.get(name, 0)
            if have == 0 or amount > have:
                continue
            if type(have) is int and have > 0 and have >= value:
                total += (have - value) * MAX_NODE_SCORE // have * w
            else:
                capacity = _value(have)
                total += go_div((capacity - value) * MAX_NODE_SCORE, capacity, WHERE_LEAST) * w
        weight_sum = request.weight_sum
        scores.append(
            total // weight_sum
            if weight_sum > 0 and total >= 0
            else go_div(total, weight_sum, WHERE_LEAST_STRATEGY)
        )
    return scores


def sample_variance(values: list[float]) -> float:
    """gonum ``stat.Variance(x, nil)``; NaN for fewer than two values, as 0/0 is in Go."""
    n = len(values)
    if n < 2:
        return math.nan
    total = 0.0
    for v in values:  # floats.Sum adds in order (Python's sum() compensates since 3.12)
        total += v
    mean = total / n
    ss = compensation = 0.0
    for v in values:
        d = v - mean
        ss += d * d
        compensation += d
    return (ss - compensation * compensation / n) / (n - 1)


def _balanced(request: WeightedRequest, available: Mapping[str, Amount]) -> int:
    fractions: list[float] = []
    for name, _, value, _ in request.items:
        capacity = _value(available.get(name, 0))
        fraction = 1.0 if capacity == 0 else float(value) / float(capacity)
        if fraction > 1:
            return 0
        fractions.append(fraction)
    return go_int64((1 - sample_variance(fractions)) * MAX_NODE_SCORE)


def balanced_allocation_zones(request: WeightedRequest, zones: Zones) -> list[int]:
    """``balancedAllocationScoreStrategy`` per zone (weights are not used)."""
    return [_balanced(request, available) for available in zones]


def most_allocated(requested: Requested, available: Mapping[str, Amount], weights: Weights) -> int:
    return most_allocated_zones(weighted_request(requested, weights), [available])[0]


def least_allocated(requested: Requested, available: Mapping[str, Amount], weights: Weights) -> int:
    return least_allocated_zones(weighted_request(requested, weights), [available])[0]


def balanced_allocation(requested: Requested, available: Mapping[str, Amount], weights: Weights) -> int:
    return balanced_allocation_zones(weighted_request(requested, weights), [available])[0]


MOST_ALLOCATED = "MostAllocated"
LEAST_ALLOCATED = "LeastAllocated"
BALANCED_ALLOCATION = "BalancedAllocation"
LEAST_NUMA_NODES = "LeastNUMANodes"
STRATEGIES: dict[str, Strategy] = {
    MOST_ALLOCATED: most_allocated,
    LEAST_ALLOCATED: least_allocated,
    BALANCED_ALLOCATION: balanced_allocation,
}
ZONE_STRATEGIES: dict[str, ZoneStrategy] = {
    MOST_ALLOCATED: most_allocated_zones,
    LEAST_ALLOCATED: least_allocated_zones,
    BALANCED_ALLOCATION: balanced_allocation_zones,
}
