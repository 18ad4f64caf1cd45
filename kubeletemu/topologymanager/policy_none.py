"""``policy_none.go``: no alignment, every pod admitted."""

from __future__ import annotations

from collections.abc import Sequence

from kubeletemu.topologymanager.hint import ProviderHints, TopologyHint

POLICY_NONE = "none"


class NonePolicy:
    @property
    def name(self) -> str:
        return POLICY_NONE

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        """Returns the zero hint without looking at the hints."""
        return TopologyHint(), True
