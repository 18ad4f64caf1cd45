"""Koordinator's NUMA-aware scheduling (``NodeNUMAResource``), exact to koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e``, and its design as a second model (``model.py``); the node side
in koordlet's flavour (``koordlet.py``)."""

from kubeletemu.scheduler.koordinator.args import NodeNUMAResourceArgs, ScoringStrategy
from kubeletemu.scheduler.koordinator.model import (
    NodeNUMAResource,
    NodeNUMAResourceDesign,
    node_numa_resource,
    node_numa_resource_design,
)

__all__ = [
    "NodeNUMAResource",
    "NodeNUMAResourceArgs",
    "NodeNUMAResourceDesign",
    "ScoringStrategy",
    "node_numa_resource",
    "node_numa_resource_design",
]
