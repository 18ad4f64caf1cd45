"""``TopologyHint``: a NUMA affinity with a preferred flag."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubeletemu.bitmask import BitMask


@dataclass(frozen=True, slots=True)
class TopologyHint:
    """``affinity`` None is the kubelet's nil mask: "any NUMA node / don't care"."""

    affinity: BitMask | None = None
    preferred: bool = False

    def is_equal(self, other: TopologyHint) -> bool:
        return self == other

    def less_than(self, other: TopologyHint) -> bool:
        """Preferred before non-preferred, then the narrower mask (both masks must be set)."""
        if self.preferred != other.preferred:
            return self.preferred
        assert self.affinity is not None and other.affinity is not None
        return self.affinity.is_narrower_than(other.affinity)

    def __str__(self) -> str:
        mask = "<nil>" if self.affinity is None else str(self.affinity)
        return f"{{{mask} {str(self.preferred).lower()}}}"


# What a hint provider returns: None is a nil map (no opinion at all); per resource, None is a nil list
# ("no preference") and an empty sequence "cannot satisfy".
ResourceHints = Mapping[str, Sequence[TopologyHint] | None]
ProviderHints = ResourceHints | None
