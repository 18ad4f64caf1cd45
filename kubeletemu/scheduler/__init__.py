"""Scheduler-side views of the node: what NUMA-aware schedulers compute from NodeResourceTopology data,
computed here from the emulated node's exact state (``shared/spec/scheduler-side.md``)."""

from kubeletemu.scheduler.leastnumanodes import (
    LeastNUMAResult,
    NUMAZone,
    Requirement,
    least_numa_nodes,
    least_numa_nodes_for_node,
    normalize_score,
    numa_nodes_required,
    zones_from_report,
)

__all__ = [
    "LeastNUMAResult",
    "NUMAZone",
    "Requirement",
    "least_numa_nodes",
    "least_numa_nodes_for_node",
    "normalize_score",
    "numa_nodes_required",
    "zones_from_report",
]
