"""``policy_restricted.go``: best-effort's merge, admitting only a preferred result."""

from __future__ import annotations

from kubeletemu.topologymanager.hint import TopologyHint
from kubeletemu.topologymanager.policy_best_effort import BestEffortPolicy

POLICY_RESTRICTED = "restricted"


class RestrictedPolicy(BestEffortPolicy):
    policy_name = POLICY_RESTRICTED

    def can_admit_pod_result(self, hint: TopologyHint) -> bool:
        return hint.preferred
