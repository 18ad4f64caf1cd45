"""The kubelet's literal merge: ``HintMerger.Merge`` walking every permutation (the test oracle).

Depth-first over the cross product, dimension 0 varying slowest, folding ``compare`` over every merged
permutation in order. Exponential: only for small inputs.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from kubeletemu.topologymanager import NUMAInfo, PolicyOptions, ProviderHints, TopologyHint
from kubeletemu.topologymanager.policy import (
    HintMerger,
    MaskTieBreaker,
    filter_providers_hints,
    merge_permutation,
)
from kubeletemu.topologymanager.policy_single_numa_node import filter_single_numa_hints


def literal_merge(
    policy: str,
    numa_info: NUMAInfo,
    options: PolicyOptions,
    providers_hints: Sequence[ProviderHints],
    tie_breaker: MaskTieBreaker | None = None,
) -> tuple[TopologyHint, bool]:
    """``tie_breaker`` plugs a KEP-6007 scorer into ``cmp_masks``, as the PR branches do."""
    if policy == "none":
        return TopologyHint(), True
    dims = filter_providers_hints(providers_hints)
    if policy == "single-numa-node":
        dims = filter_single_numa_hints(dims) or []
    merger = HintMerger(numa_info, dims, policy, options, tie_breaker)
    default = numa_info.default_affinity_mask()
    best: TopologyHint | None = None
    for permutation in itertools.product(*dims):
        best = merger.compare(best, merge_permutation(default, permutation))
    result = best if best is not None else TopologyHint(default, False)
    if policy == "single-numa-node" and result.affinity == default:
        result = TopologyHint(None, result.preferred)
    admit = True if policy == "best-effort" else result.preferred
    return result, admit
