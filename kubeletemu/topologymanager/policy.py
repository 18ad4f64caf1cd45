"""The merge shared by best-effort, restricted and single-numa-node (``policy.go``).

The kubelet folds ``HintMerger.compare`` over the full cross product of provider hints, which is
O(H^P) and takes minutes on 8 NUMA nodes (kubernetes#131738, #137700). The comparison is a total order
(topology-manager spec §3.4), so the result is the best of the *distinct* merged outcomes; those are folded
provider by provider (``reachable_outcomes``) in O(P·H·2^N). ``tests/topologymanager/oracle.py`` keeps the
literal fold and property tests hold the two equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kubeletemu.bitmask import BitMask
from kubeletemu.topologymanager.hint import ProviderHints, TopologyHint
from kubeletemu.topologymanager.numa_info import NUMAInfo
from kubeletemu.topologymanager.policy_options import PolicyOptions

POLICY_SINGLE_NUMA_NODE = "single-numa-node"


class Policy(Protocol):
    """``topologymanager.Policy``."""

    @property
    def name(self) -> str: ...

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]: ...


class MaskTieBreaker(Protocol):
    """Chooses between two masks the normal order considers equally fit (KEP-6007's hook).

    Called only for masks of equal width (and, with prefer-closest, equal average distance), where the
    kubelet would fall back to the smaller integer. Returns the winner, or None for no opinion.
    """

    def choose(self, current: BitMask, candidate: BitMask, *, both_preferred: bool) -> BitMask | None: ...


_NO_PREFERENCE = TopologyHint(None, True)
_CANNOT_SATISFY = TopologyHint(None, False)


def filter_providers_hints(providers_hints: Sequence[ProviderHints]) -> list[list[TopologyHint]]:
    """One list per resource: a nil/empty provider map or a nil list means "no preference"; an empty
    list means "cannot satisfy"."""
    dims: list[list[TopologyHint]] = []
    for hints in providers_hints:
        if not hints:
            dims.append([_NO_PREFERENCE])
            continue
        for resource_hints in hints.values():
            if resource_hints is None:
                dims.append([_NO_PREFERENCE])
            elif len(resource_hints) == 0:
                dims.append([_CANNOT_SATISFY])
            else:
                dims.append(list(resource_hints))
    return dims


def merge_permutation(default_affinity: BitMask, permutation: Sequence[TopologyHint]) -> TopologyHint:
    """AND of all non-nil masks; preferred only if every hint is preferred and every non-nil mask equal."""
    preferred = True
    value = default_affinity.value
    first: BitMask | None = None
    for hint in permutation:
        if hint.affinity is not None:
            if first is None:
                first = hint.affinity
            elif hint.affinity != first:
                preferred = False
            value &= hint.affinity.value
        if not hint.preferred:
            preferred = False
    return TopologyHint(BitMask(value), preferred)


def max_of_min_affinity_counts(dims: Sequence[Sequence[TopologyHint]]) -> int:
    """``BestNonPreferredAffinityCount``: the widest of each dimension's narrowest non-nil mask."""
    best = 0
    for dim in dims:
        counts = [h.affinity.count() for h in dim if h.affinity is not None]
        if counts:
            best = max(best, min(counts))
    return best


class HintMerger:
    """``NewHintMerger`` + ``compare``; ``merge`` gives the literal fold's answer without the walk."""

    def __init__(
        self,
        numa_info: NUMAInfo,
        dims: Sequence[Sequence[TopologyHint]],
        policy_name: str,
        options: PolicyOptions,
        tie_breaker: MaskTieBreaker | None = None,
    ) -> None:
        self.numa_info = numa_info
        self.dims = dims
        self.best_non_preferred_affinity_count = max_of_min_affinity_counts(dims)
        self.use_closest = policy_name != POLICY_SINGLE_NUMA_NODE and options.prefer_closest_numa
        self.tie_breaker = tie_breaker

    def cmp_masks(self, current: TopologyHint, candidate: TopologyHint) -> TopologyHint:
        cur, cand = current.affinity, candidate.affinity
        assert cur is not None and cand is not None
        if cur == cand:
            return current
        if self.tie_breaker is not None and self._equally_fit(cur, cand):
            winner = self.tie_breaker.choose(
                cur, cand, both_preferred=current.preferred and candidate.preferred
            )
            if winner is not None:
                return current if winner == cur else candidate
        best = self.numa_info.closest(cur, cand) if self.use_closest else self.numa_info.narrowest(cur, cand)
        return current if best == cur else candidate

    def _equally_fit(self, a: BitMask, b: BitMask) -> bool:
        if a.count() != b.count():
            return False
        return not self.use_closest or self.numa_info.average_distance(a) == self.numa_info.average_distance(
            b
        )

    def compare(self, current: TopologyHint | None, candidate: TopologyHint) -> TopologyHint | None:
        """``HintMerger.compare``; ``current`` None means no best hint yet."""
        assert candidate.affinity is not None
        if candidate.affinity.count() == 0:
            return current
        if current is None:
            return candidate
        if current.preferred != candidate.preferred:
            return candidate if candidate.preferred else current
        if current.preferred:
            return self.cmp_masks(current, candidate)
        assert current.affinity is not None
        b = self.best_non_preferred_affinity_count
        c, k = current.affinity.count(), candidate.affinity.count()
        if c > b:
            return self.cmp_masks(current, candidate)
        if c == b:
            return self.cmp_masks(current, candidate) if k == b else current
        if k > b:
            return current
        if k == b:
            return candidate
        if k > c:
            return candidate
        if k < c:
            return current
        return self.cmp_masks(current, candidate)

    def merge(self) -> TopologyHint:
        default = self.numa_info.default_affinity_mask()
        best: TopologyHint | None = None
        for outcome in reachable_outcomes(default, self.dims):
            best = self.compare(best, outcome)
        return best if best is not None else TopologyHint(default, False)


def reachable_outcomes(default: BitMask, dims: Sequence[Sequence[TopologyHint]]) -> list[TopologyHint]:
    """The distinct results ``merge_permutation`` can give over the cross product, in a fixed order.

    Preferred results: a reference mask (None while only nil masks were seen) that every non-nil mask so
    far equals, all hints preferred. The rest is reported as the set of *every* reachable AND, marked
    non-preferred: that set also holds the masks of the preferred results, but a preferred result always
    beats a non-preferred one with the same mask, so the best outcome is unchanged and each dimension is
    one set comprehension. An empty dimension leaves nothing (no permutation exists); zero dimensions
    leave {default, preferred}, as in the kubelet.
    """
    full = default.value
    pref_refs: set[int | None] = {None}
    ands: set[int] = {full}
    for dim in dims:
        masks = {full if h.affinity is None else h.affinity.value & full for h in dim}
        ands = {a & m for m in masks for a in ands}
        pref_masks = {h.affinity.value for h in dim if h.preferred and h.affinity is not None}
        keeps_ref = any(h.preferred and h.affinity is None for h in dim)
        new_refs: set[int | None] = set(pref_refs) if keeps_ref else set()
        for ref in pref_refs:
            if ref is None:
                new_refs.update(pref_masks)
            elif ref in pref_masks:
                new_refs.add(ref)
        pref_refs = new_refs
    pref_values = {full if ref is None else ref & full for ref in pref_refs}
    outcomes = [TopologyHint(BitMask(v), True) for v in sorted(pref_values) if v]
    outcomes += [TopologyHint(BitMask(v), False) for v in sorted(ands) if v]
    return outcomes
