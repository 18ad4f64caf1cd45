"""``policy_single_numa_node.go``: only preferred single-node (or nil) hints take part."""

from __future__ import annotations

from collections.abc import Sequence

from kubeletemu.topologymanager.hint import ProviderHints, TopologyHint
from kubeletemu.topologymanager.numa_info import NUMAInfo
from kubeletemu.topologymanager.policy import (
    POLICY_SINGLE_NUMA_NODE,
    HintMerger,
    MaskTieBreaker,
    filter_providers_hints,
)
from kubeletemu.topologymanager.policy_options import PolicyOptions


def filter_single_numa_hints(dims: Sequence[Sequence[TopologyHint]]) -> list[list[TopologyHint]] | None:
    """Keep {nil, preferred} and preferred one-bit hints; a dimension left empty empties the product.

    Returns None for empty input, as the kubelet returns a nil slice.
    """
    if not dims:
        return None
    return [
        [h for h in dim if h.preferred and (h.affinity is None or h.affinity.count() == 1)] for dim in dims
    ]


class SingleNumaNodePolicy:
    def __init__(
        self, numa_info: NUMAInfo, options: PolicyOptions, tie_breaker: MaskTieBreaker | None = None
    ) -> None:
        self.numa_info = numa_info
        self.options = options
        self.tie_breaker = tie_breaker

    @property
    def name(self) -> str:
        return POLICY_SINGLE_NUMA_NODE

    def can_admit_pod_result(self, hint: TopologyHint) -> bool:
        return hint.preferred

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        dims = filter_single_numa_hints(filter_providers_hints(providers_hints)) or []
        merger = HintMerger(self.numa_info, dims, POLICY_SINGLE_NUMA_NODE, self.options, self.tie_breaker)
        best = merger.merge()
        # The default mask means "any node" here: report it as nil, keeping the preferred flag.
        if best.affinity == self.numa_info.default_affinity_mask():
            best = TopologyHint(None, best.preferred)
        return best, self.can_admit_pod_result(best)
