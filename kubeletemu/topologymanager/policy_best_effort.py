"""``policy_best_effort.go``: merge for the best alignment, admit whatever comes out."""

from __future__ import annotations

from collections.abc import Sequence

from kubeletemu.topologymanager.hint import ProviderHints, TopologyHint
from kubeletemu.topologymanager.numa_info import NUMAInfo
from kubeletemu.topologymanager.policy import HintMerger, MaskTieBreaker, filter_providers_hints
from kubeletemu.topologymanager.policy_options import PolicyOptions

POLICY_BEST_EFFORT = "best-effort"


class BestEffortPolicy:
    policy_name = POLICY_BEST_EFFORT

    def __init__(
        self, numa_info: NUMAInfo, options: PolicyOptions, tie_breaker: MaskTieBreaker | None = None
    ) -> None:
        self.numa_info = numa_info
        self.options = options
        self.tie_breaker = tie_breaker

    @property
    def name(self) -> str:
        return self.policy_name

    def can_admit_pod_result(self, hint: TopologyHint) -> bool:
        return True

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        dims = filter_providers_hints(providers_hints)
        merger = HintMerger(self.numa_info, dims, self.policy_name, self.options, self.tie_breaker)
        best = merger.merge()
        return best, self.can_admit_pod_result(best)
