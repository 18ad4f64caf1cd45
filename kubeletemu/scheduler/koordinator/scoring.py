"""NodeNUMAResource's resource-allocation scorers, as koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` ships them (``nodenumaresource/scoring.go``:
``resourceAllocationScorer.score``, ``calculateResourceAllocatableRequest``; ``least_allocated.go``,
``most_allocated.go``).

Per configured resource: capacity and requested + the pod's request, in the framework ``Resource``'s integer
units (millicores, bytes, units); a resource with zero capacity, or an extended resource the pod does not
ask for, is left out. ``LeastAllocated``: ``(capacity − requested)·100 // capacity`` (0 when over);
``MostAllocated``: ``requested·100 // capacity`` (requested capped). Then the weighted sum // the weights.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubeletemu.lifecycle.resources import Resource, is_scalar_resource_name
from kubeletemu.scheduler.noderesourcesfit import least_requested_score, most_requested_score

# The least/most-requested formulas are kube-scheduler's (Koordinator imports them): shared with
# NodeResourcesFit.
LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"


def _quantity(resource: Resource, name: str) -> int | None:
    """``getResourceQuantity``-like: None where the Go code finds no entry."""
    if name == "cpu":
        return resource.milli_cpu
    if name == "memory":
        return resource.memory
    if name == "ephemeral-storage":
        return resource.ephemeral_storage
    return resource.scalar_resources.get(name)


@dataclass(frozen=True)
class Scorer:
    """A ``resourceAllocationScorer``: ``strategy`` and the resource weights (a mapping, as Go's map)."""

    strategy: str
    weights: Mapping[str, int]

    def score(self, requested: Resource, allocatable: Resource, pod: Resource) -> int:
        """``score`` with ``leastResourceScorer`` / ``mostResourceScorer``."""
        total = weight_sum = 0
        fn = least_requested_score if self.strategy == LEAST_ALLOCATED else most_requested_score
        for name, weight in self.weights.items():
            asked = _quantity(pod, name) or 0
            if asked == 0 and is_scalar_resource_name(name):
                continue
            capacity = _quantity(allocatable, name)
            if capacity is None or capacity == 0:
                continue
            total += fn((_quantity(requested, name) or 0) + asked, capacity) * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0
