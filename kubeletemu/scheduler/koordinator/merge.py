"""Koordinator's scheduler-side Topology Manager merge, as shipped at koordinator-sh/koordinator
``a7a1b76bbf81abd26f9c377de1f31a60dd965f6e`` (``pkg/scheduler/frameworkext/topologymanager``:
``policy.go``, ``policy_best_effort.go``, ``policy_restricted.go``, ``policy_single_numa_node.go``,
``policy_none.go``).

The fork of the kubelet's merge differs in ways that change answers, so it is written here rather than
reusing :mod:`kubeletemu.topologymanager`'s ``HintMerger`` (the bit masks are shared):

- a hint carries ``unsatisfied`` and a ``score``; a merged hint is unsatisfied when one of its hints is, or
  when the AND is narrower than the widest hint in the permutation;
- equally wide hints of the same preference are ordered by score (the sum of the scores of the permutation's
  hints whose mask equals the merged one), the first one seen winning ties; there is no
  ``max-allowable-numa-nodes`` or ``prefer-closest-numa-nodes``;
- the pod-level ``singleNUMANodeExclusive`` policy: under ``Required`` a merged hint that would share a NUMA
  node with the opposite kind of pod is not preferred;
- a provider's resource with no hints at all gives the reason ``Unsatisfied NUMA <resource>``; Restricted
  and SingleNUMANode refuse with it, or with ``Unaligned NUMA Hint cause <summary>``;
- BestEffort replaces an unsatisfied best hint by all NUMA nodes, not preferred.

The policies fold with :func:`fast_merge_filtered_hints` (:mod:`.merge_fast`), which gives the literal
fold's best hint without walking the cross product of hint lists (255^R permutations under Restricted on 8
NUMA nodes); :func:`merge_filtered_hints` keeps the literal fold as the reference, and
:data:`LITERAL_POLICIES` the policies on it (property tests hold the two equal).

A provider's hints are a Go map: the shipped code walks resources in random order. Here they are walked in
the order given (callers pass resources sorted by name); only equal-width, equal-score, equal-preference
ties and the order of ``Unsatisfied`` reasons can depend on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from kubeletemu.bitmask import BitMask, and_masks
from kubeletemu.scheduler.framework import PluginPanic
from kubeletemu.scheduler.koordinator.merge_fast import best_merged_hint

# apiext.NUMATopologyPolicy values (the empty string is "none").
POLICY_NONE = ""
POLICY_BEST_EFFORT = "BestEffort"
POLICY_RESTRICTED = "Restricted"
POLICY_SINGLE_NUMA_NODE = "SingleNUMANode"
KNOWN_POLICIES = (POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)

# apiext.NumaTopologyExclusive and NumaNodeStatus.
EXCLUSIVE_PREFERRED = "Preferred"
EXCLUSIVE_REQUIRED = "Required"
NUMA_IDLE = "idle"
NUMA_SHARED = "shared"
NUMA_SINGLE = "single"

ERR_UNSATISFIED_NUMA_RESOURCE = "Unsatisfied NUMA {}"
ERR_NUMA_HINT_CANNOT_ALIGNED = "Unaligned NUMA Hint cause {}"


@dataclass(frozen=True)
class NUMATopologyHint:
    """``NUMATopologyHint``: ``affinity`` None is Go's nil mask (no preference)."""

    affinity: BitMask | None = None
    unsatisfied: bool = False
    preferred: bool = False
    score: int = 0

    def is_equal(self, other: NUMATopologyHint) -> bool:
        """``IsEqual``: same preference and the same mask (nil only equals nil)."""
        if self.preferred != other.preferred:
            return False
        if self.affinity is None or other.affinity is None:
            return self.affinity is None and other.affinity is None
        return self.affinity.is_equal(other.affinity)


# One provider's answer: resource name → hints; None for a resource is "no preference" (Go nil slice).
ProviderHints = Mapping[str, Sequence[NUMATopologyHint] | None]


@dataclass(frozen=True)
class MergeResult:
    hint: NUMATopologyHint
    admit: bool
    reasons: tuple[str, ...] = ()


def check_exclusive_policy(affinity: NUMATopologyHint, exclusive: str, statuses: Sequence[str]) -> bool:
    """``checkExclusivePolicy``. ``statuses`` is indexed by NUMA id, as shipped: a NUMA id at or above its
    length (non-contiguous ids) makes the Go code index out of range."""
    if affinity.affinity is None:
        return False
    if exclusive == EXCLUSIVE_REQUIRED:
        bits = affinity.affinity.bits()
        if affinity.affinity.count() > 1:
            for node in bits:
                if _status(statuses, node) == NUMA_SINGLE:
                    return False
        elif _status(statuses, bits[0]) == NUMA_SHARED:
            return False
    return True


def _status(statuses: Sequence[str], node: int) -> str:
    if node >= len(statuses):
        raise PluginPanic(
            f"index out of range [{node}] with length {len(statuses)}",
            "topologymanager.checkExclusivePolicy",
        )
    return statuses[node]


def merge_permutation(numa_nodes: Sequence[int], permutation: Sequence[NUMATopologyHint]) -> NUMATopologyHint:
    """``mergePermutation``: AND of the masks; preferred only if every hint is preferred and every
    non-nil mask equals the first; unsatisfied if one hint is or the AND is narrower than the widest."""
    preferred = True
    satisfied = True
    widest = 0
    masks: list[BitMask] = []
    for hint in permutation:
        if hint.affinity is not None:
            masks.append(hint.affinity)
            if not hint.affinity.is_equal(masks[0]):
                preferred = False
            widest = max(widest, hint.affinity.count())
        if not hint.preferred:
            preferred = False
        if hint.unsatisfied:
            satisfied = False
    merged = and_masks(BitMask.of(*numa_nodes), *masks)
    satisfied = (not masks or widest == merged.count()) and satisfied
    return NUMATopologyHint(merged, not satisfied, preferred)


def _summary(resource: str, hints: Sequence[NUMATopologyHint], texts: dict[int, str] | None = None) -> str:
    """``getSummaryForResource``: ``<resource> prefer [<masks>] among [<masks>]`` over satisfied hints.
    ``texts`` keeps masks already written (resources list the same masks)."""
    preferred: list[str] = []
    possible: list[str] = []
    known = {} if texts is None else texts
    for hint in hints:
        if hint.unsatisfied:
            continue
        if hint.affinity is None:
            text = "<nil>"
        elif (text := known.get(hint.affinity.value, "")) == "":
            text = known[hint.affinity.value] = str(hint.affinity)
        if hint.preferred:
            preferred.append(text)
        possible.append(text)
    return f"{resource} prefer [{' '.join(preferred)}] among [{' '.join(possible)}]"


@dataclass(frozen=True)
class FilteredHints:
    hints: list[list[NUMATopologyHint]]
    reasons: list[str]
    # The resources with hints, for the summary: written out only when a refusal quotes it.
    listed: list[tuple[str, Sequence[NUMATopologyHint]]]

    @property
    def summary(self) -> list[str]:
        """The per-resource summaries, sorted (as shipped)."""
        texts: dict[int, str] = {}
        return sorted(_summary(resource, hints, texts) for resource, hints in self.listed)


def filter_providers_hints(providers: Sequence[ProviderHints | None]) -> FilteredHints:
    """``filterProvidersHints``: an empty provider or a nil resource is one preferred any-NUMA hint; a
    resource with an empty list is one unsatisfied hint and a reason. The summary is sorted (as shipped)."""
    out: list[list[NUMATopologyHint]] = []
    reasons: list[str] = []
    listed: list[tuple[str, Sequence[NUMATopologyHint]]] = []
    for hints in providers:
        if not hints:
            out.append([NUMATopologyHint(preferred=True)])
            continue
        for resource, resource_hints in hints.items():
            if resource_hints is None:
                out.append([NUMATopologyHint(preferred=True)])
                continue
            if len(resource_hints) == 0:
                out.append([NUMATopologyHint(unsatisfied=True)])
                reasons.append(ERR_UNSATISFIED_NUMA_RESOURCE.format(resource))
                continue
            listed.append((resource, resource_hints))
            out.append(list(resource_hints))
    return FilteredHints(out, reasons, listed)


def _permutations(dims: Sequence[Sequence[NUMATopologyHint]]) -> Iterator[list[NUMATopologyHint]]:
    """``iterateAllProviderTopologyHints``: odometer order, the last provider varying fastest."""

    def walk(i: int, accum: list[NUMATopologyHint]) -> Iterator[list[NUMATopologyHint]]:
        if i == len(dims):
            yield list(accum)
            return
        for hint in dims[i]:
            yield from walk(i + 1, [*accum, hint])

    return walk(0, [])


def merge_filtered_hints(
    numa_nodes: Sequence[int],
    dims: Sequence[Sequence[NUMATopologyHint]],
    exclusive: str,
    statuses: Sequence[str],
) -> NUMATopologyHint:
    """``mergeFilteredHints``: the best merged hint, starting from all NUMA nodes, not preferred."""
    best = NUMATopologyHint(BitMask.of(*numa_nodes))
    for permutation in _permutations(dims):
        merged = merge_permutation(numa_nodes, permutation)
        mask, best_mask = merged.affinity, best.affinity
        assert mask is not None and best_mask is not None
        if mask.count() == 0:
            continue
        if not check_exclusive_policy(merged, exclusive, statuses):
            merged = replace(merged, preferred=False)
        score = sum(h.score for h in permutation if h.affinity is not None and mask.is_equal(h.affinity))
        merged = replace(merged, score=merged.score + score)
        if merged.preferred and not best.preferred:
            best = merged
            continue
        if not merged.preferred and best.preferred:
            continue
        if not mask.is_narrower_than(best_mask):
            if mask.count() == best_mask.count() and merged.score > best.score:
                best = merged
            continue
        best = merged
    return best


def fast_merge_filtered_hints(
    numa_nodes: Sequence[int],
    dims: Sequence[Sequence[NUMATopologyHint]],
    exclusive: str,
    statuses: Sequence[str],
) -> NUMATopologyHint:
    """:func:`merge_filtered_hints`'s answer (the same hint, panics included), by
    :func:`~kubeletemu.scheduler.koordinator.merge_fast.best_merged_hint`."""
    full = BitMask.of(*numa_nodes)
    checked: dict[int, bool] = {}

    def check_ok(mask: int) -> bool:
        if exclusive != EXCLUSIVE_REQUIRED:
            return True  # checkExclusivePolicy on a non-nil mask: only Required can refuse
        ok = checked.get(mask)
        if ok is None:
            ok = checked[mask] = check_exclusive_policy(NUMATopologyHint(BitMask(mask)), exclusive, statuses)
        return ok

    if _check_may_panic(numa_nodes, exclusive, statuses) and _some_merged_mask_panics(full, dims, check_ok):
        # The fold panics at the first permutation whose mask reaches a missing status: walk to it.
        return merge_filtered_hints(numa_nodes, dims, exclusive, statuses)
    # checkExclusivePolicy reads only the policy and, under Required, the statuses.
    check_key = (exclusive, tuple(statuses)) if exclusive == EXCLUSIVE_REQUIRED else ""
    best = best_merged_hint(full.value, dims, check_ok, check_key)
    if best is None:
        return NUMATopologyHint(full)
    mask, unsatisfied, preferred, score = best
    return NUMATopologyHint(BitMask(mask), unsatisfied, preferred, score)


def _check_may_panic(numa_nodes: Sequence[int], exclusive: str, statuses: Sequence[str]) -> bool:
    """Only ``Required`` reads the statuses, and only a NUMA id past their end panics."""
    return exclusive == EXCLUSIVE_REQUIRED and any(node >= len(statuses) for node in numa_nodes)


def _some_merged_mask_panics(
    full: BitMask, dims: Sequence[Sequence[NUMATopologyHint]], check_ok: Callable[[int], bool]
) -> bool:
    """Whether the exclusive check panics on a non-empty mask some permutation merges to."""
    ands = {full.value}
    for hints in dims:
        masks = {full.value if h.affinity is None else h.affinity.value & full.value for h in hints}
        ands = {a & m for a in ands for m in masks if a & m}
    for mask in ands:
        try:
            check_ok(mask)
        except PluginPanic:
            return True
    return False


def filter_single_numa_hints(dims: Sequence[Sequence[NUMATopologyHint]]) -> list[list[NUMATopologyHint]]:
    """``filterSingleNumaHints``: keep preferred hints that are nil or name exactly one NUMA node."""
    return [
        [h for h in hints if h.preferred and (h.affinity is None or h.affinity.count() == 1)]
        for hints in dims
    ]


# How a policy folds the filtered hints into the best one: the literal fold or the fast one.
HintFold = Callable[
    [Sequence[int], Sequence[Sequence[NUMATopologyHint]], str, Sequence[str]], NUMATopologyHint
]


def can_admit(policy: str, hint: NUMATopologyHint) -> bool:
    """``canAdmitPodResult``: BestEffort and none admit anything, Restricted and SingleNUMANode a
    preferred hint."""
    return hint.preferred if policy in (POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE) else True


def merge_best_effort(
    numa_nodes: Sequence[int],
    providers: Sequence[ProviderHints | None],
    exclusive: str,
    statuses: Sequence[str],
    fold: HintFold = fast_merge_filtered_hints,
) -> MergeResult:
    """``bestEffortPolicy.Merge``: always admits; an unsatisfied best hint becomes all NUMA nodes."""
    filtered = filter_providers_hints(providers)
    best = fold(numa_nodes, filtered.hints, exclusive, statuses)
    if best.unsatisfied:
        best = NUMATopologyHint(BitMask.of(*numa_nodes))
    return MergeResult(best, True)


def merge_restricted(
    numa_nodes: Sequence[int],
    providers: Sequence[ProviderHints | None],
    exclusive: str,
    statuses: Sequence[str],
    fold: HintFold = fast_merge_filtered_hints,
) -> MergeResult:
    """``restrictedPolicy.Merge``: admits a preferred best hint; the summary joined with ``" & "``."""
    filtered = filter_providers_hints(providers)
    if filtered.reasons:
        return MergeResult(NUMATopologyHint(BitMask.of(*numa_nodes)), False, tuple(filtered.reasons))
    best = fold(numa_nodes, filtered.hints, exclusive, statuses)
    if not best.preferred:
        reason = ERR_NUMA_HINT_CANNOT_ALIGNED.format(" & ".join(filtered.summary))
        return MergeResult(best, False, (reason,))
    return MergeResult(best, True)


def merge_single_numa_node(
    numa_nodes: Sequence[int],
    providers: Sequence[ProviderHints | None],
    exclusive: str,
    statuses: Sequence[str],
    fold: HintFold = fast_merge_filtered_hints,
) -> MergeResult:
    """``singleNumaNodePolicy.Merge``: single-NUMA hints only; a best hint of all NUMA nodes becomes nil;
    the summary joined with ``","``."""
    filtered = filter_providers_hints(providers)
    if filtered.reasons:
        return MergeResult(NUMATopologyHint(), False, tuple(filtered.reasons))
    best = fold(numa_nodes, filter_single_numa_hints(filtered.hints), exclusive, statuses)
    assert best.affinity is not None
    if best.affinity.is_equal(BitMask.of(*numa_nodes)):
        best = NUMATopologyHint(preferred=best.preferred)
    if not best.preferred:
        return MergeResult(best, False, (ERR_NUMA_HINT_CANNOT_ALIGNED.format(",".join(filtered.summary)),))
    return MergeResult(best, True)


def merge_none(
    numa_nodes: Sequence[int],
    providers: Sequence[ProviderHints | None],
    exclusive: str,
    statuses: Sequence[str],
) -> MergeResult:
    """``nonePolicy.Merge``: an empty hint, admitted."""
    return MergeResult(NUMATopologyHint(), True)


Merge = Callable[[Sequence[int], Sequence["ProviderHints | None"], str, Sequence[str]], MergeResult]

# createNUMATopologyPolicy: only these three have a policy object; any other value (the empty string
# included) is a nil Policy in Go.
POLICIES: Mapping[str, Merge] = {
    POLICY_BEST_EFFORT: merge_best_effort,
    POLICY_RESTRICTED: merge_restricted,
    POLICY_SINGLE_NUMA_NODE: merge_single_numa_node,
}

# The same policies on the literal permutation fold: the reference the fast fold is tested against.
LITERAL_POLICIES: Mapping[str, Merge] = {
    POLICY_BEST_EFFORT: partial(merge_best_effort, fold=merge_filtered_hints),
    POLICY_RESTRICTED: partial(merge_restricted, fold=merge_filtered_hints),
    POLICY_SINGLE_NUMA_NODE: partial(merge_single_numa_node, fold=merge_filtered_hints),
}
