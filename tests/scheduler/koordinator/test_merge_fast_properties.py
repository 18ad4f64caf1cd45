"""Property tests: Koordinator's policies on the fast fold (``POLICIES``) give exactly what they give on the
literal permutation fold (``LITERAL_POLICIES``): the same hint (mask, preferred, unsatisfied, score), the
same admission and reasons, or the same panic; and the two folds give the same best hint.

Inputs: 1–8 NUMA nodes (sometimes non-contiguous ids, with a status list that can be too short, as the
shipped exclusive check then indexes out of range), 0–4 providers of 0–3 resources, nil / empty / listed
hints drawn from a small pool of masks (so that equal masks across resources are common, with a spare bit
beyond the node), all preferred, none preferred or either, small scores (so that score ties and
score-driven replacements are common), every exclusive policy; long unaligned hint lists; node-like hint
lists (every feasible mask). The cross product is capped so that the literal fold stays quick.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeletemu.bitmask import BitMask, iterate_bitmasks
from kubeletemu.scheduler.framework import PluginPanic
from kubeletemu.scheduler.koordinator.merge import (
    EXCLUSIVE_PREFERRED,
    EXCLUSIVE_REQUIRED,
    LITERAL_POLICIES,
    NUMA_IDLE,
    NUMA_SHARED,
    NUMA_SINGLE,
    POLICIES,
    POLICY_BEST_EFFORT,
    POLICY_RESTRICTED,
    POLICY_SINGLE_NUMA_NODE,
    HintFold,
    Merge,
    MergeResult,
    NUMATopologyHint,
    ProviderHints,
    fast_merge_filtered_hints,
    filter_providers_hints,
    filter_single_numa_hints,
    merge_filtered_hints,
)
from kubeletemu.scheduler.koordinator.merge_fast import clear_memo

pytestmark = pytest.mark.slow

MERGE_POLICIES = (POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)
MAX_PERMUTATIONS = 1500

Case = tuple[str, list[int], list[ProviderHints | None], str, list[str]]


def _run(merge_policies: Mapping[str, Merge], case: Case) -> MergeResult | str:
    policy, numa_nodes, providers, exclusive, statuses = case
    try:
        return merge_policies[policy](numa_nodes, providers, exclusive, statuses)
    except PluginPanic as panic:
        return f"panic: {panic}"


def _cap(providers: Sequence[ProviderHints | None]) -> list[ProviderHints | None]:
    """The providers with their longest hint lists shortened until the cross product is at most
    MAX_PERMUTATIONS."""
    lists = [list(hints) for p in providers if p for hints in p.values() if hints]
    while math.prod(len(h) for h in lists) > MAX_PERMUTATIONS:
        max(lists, key=len).pop()
    shortened = iter(lists)
    return [p and {name: next(shortened) if hints else hints for name, hints in p.items()} for p in providers]


@st.composite
def merge_cases(draw: st.DrawFn) -> Case:
    count = draw(st.integers(1, 8))
    if draw(st.integers(0, 4)) == 0:
        numa_nodes = sorted(draw(st.sets(st.integers(0, 9), min_size=count, max_size=count)))
    else:
        numa_nodes = list(range(count))
    top = max(numa_nodes) + 1
    masks = st.integers(1, (1 << (top + 1)) - 1).map(BitMask)
    pool = draw(st.lists(st.one_of(st.none(), masks), min_size=1, max_size=6))
    # All preferred (Restricted's hints), none (no alignment: the fold picks among non-preferred merges),
    # or either.
    preferred = draw(st.sampled_from([st.just(True), st.just(False), st.booleans()]))
    hints = st.builds(
        NUMATopologyHint,
        st.sampled_from(pool),
        st.integers(0, 4).map(lambda n: n == 0),  # unsatisfied, now and then
        preferred,
        st.integers(0, 3),
    )
    resource_hints: st.SearchStrategy[Sequence[NUMATopologyHint] | None] = st.one_of(
        st.none(), st.just([]), st.lists(hints, min_size=1, max_size=12)
    )
    resources = st.dictionaries(st.sampled_from(["cpu", "memory", "gpu"]), resource_hints, max_size=3)
    providers = draw(st.lists(st.one_of(st.none(), resources), max_size=4))
    exclusive = draw(st.sampled_from([EXCLUSIVE_PREFERRED, EXCLUSIVE_REQUIRED, ""]))
    length = top if draw(st.integers(0, 3)) else draw(st.integers(0, top))
    statuses = draw(
        st.lists(st.sampled_from([NUMA_IDLE, NUMA_SHARED, NUMA_SINGLE]), min_size=length, max_size=length)
    )
    return draw(st.sampled_from(MERGE_POLICIES)), numa_nodes, _cap(providers), exclusive, statuses


SETTINGS = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(merge_cases())
def test_fast_merge_equals_literal_fold(case: Case) -> None:
    clear_memo()
    fast = _run(POLICIES, case)
    assert fast == _run(LITERAL_POLICIES, case)
    assert _run(POLICIES, case) == fast  # the memoised answer


def _fold(fold: HintFold, case: Case) -> NUMATopologyHint | str:
    policy, numa_nodes, providers, exclusive, statuses = case
    dims = filter_providers_hints(providers).hints
    if policy == POLICY_SINGLE_NUMA_NODE:
        dims = filter_single_numa_hints(dims)
    try:
        return fold(numa_nodes, dims, exclusive, statuses)
    except PluginPanic as panic:
        return f"panic: {panic}"


@SETTINGS
@given(merge_cases())
def test_fast_fold_equals_literal_fold(case: Case) -> None:
    """The best hint itself, before a policy reads it (BestEffort hides an unsatisfied one)."""
    clear_memo()
    assert _fold(fast_merge_filtered_hints, case) == _fold(merge_filtered_hints, case)


@st.composite
def unaligned_dims(draw: st.DrawFn) -> tuple[list[int], list[list[NUMATopologyHint]], list[str]]:
    """Long lists of mostly non-preferred hints: the fold then picks among the narrowest non-preferred
    merges, by mask value and score, the path where the order of candidates matters most."""
    numa_nodes = list(range(draw(st.integers(2, 6))))
    masks = st.integers(1, (1 << len(numa_nodes)) - 1).map(BitMask)
    hints = st.builds(
        NUMATopologyHint,
        masks,
        st.integers(0, 5).map(lambda n: n == 0),
        st.integers(0, 9).map(lambda n: n == 0),
        st.integers(0, 2),
    )
    dims = draw(st.lists(st.lists(hints, min_size=1, max_size=12), min_size=2, max_size=3))
    while math.prod(len(d) for d in dims) > MAX_PERMUTATIONS:
        max(dims, key=len).pop()
    statuses = draw(st.lists(st.sampled_from([NUMA_IDLE, NUMA_SHARED, NUMA_SINGLE]), min_size=8, max_size=8))
    return numa_nodes, dims, statuses


@SETTINGS
@given(unaligned_dims(), st.sampled_from([EXCLUSIVE_PREFERRED, EXCLUSIVE_REQUIRED]))
def test_fast_fold_equals_literal_fold_without_alignment(
    case: tuple[list[int], list[list[NUMATopologyHint]], list[str]], exclusive: str
) -> None:
    numa_nodes, dims, statuses = case
    clear_memo()
    fast = fast_merge_filtered_hints(numa_nodes, dims, exclusive, statuses)
    assert fast == merge_filtered_hints(numa_nodes, dims, exclusive, statuses)


def _node_hints(
    numa_nodes: list[int], feasible: float, restricted: bool, rnd: random.Random
) -> list[NUMATopologyHint]:
    """Hints as ``generateResourceHints`` makes them: one per feasible mask over the node's NUMA nodes,
    scored per mask; preferred = the fewest NUMA nodes, or every hint under Restricted."""
    masks = [m for m in iterate_bitmasks(numa_nodes) if rnd.random() < feasible]
    if not masks:
        return []
    fewest = min(m.count() for m in masks)
    return [
        NUMATopologyHint(m, preferred=restricted or m.count() == fewest, score=rnd.randrange(0, 4))
        for m in masks
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 8),
    st.sampled_from(MERGE_POLICIES),
    st.sampled_from([EXCLUSIVE_PREFERRED, EXCLUSIVE_REQUIRED]),
    st.randoms(use_true_random=False),
)
def test_fast_merge_equals_literal_fold_on_node_like_hints(
    count: int, policy: str, exclusive: str, rnd: random.Random
) -> None:
    """Two or three resources with node-like hint lists (every feasible mask) on up to 8 NUMA nodes."""
    numa_nodes = list(range(count))
    statuses = [rnd.choice([NUMA_IDLE, NUMA_SHARED, NUMA_SINGLE]) for _ in numa_nodes]
    restricted = policy == POLICY_RESTRICTED
    # Fewer feasible masks on bigger nodes keep the literal fold's cross product (its cost) in check.
    feasible = {1: 1.0, 2: 1.0, 3: 1.0, 4: 0.9, 5: 0.6, 6: 0.35, 7: 0.2, 8: 0.1}[count]
    resources = ["cpu", "memory"] + (["gpu"] if count <= 3 else [])
    provider: ProviderHints = {r: _node_hints(numa_nodes, feasible, restricted, rnd) for r in resources}
    case: Case = (policy, numa_nodes, [provider], exclusive, statuses)
    clear_memo()
    assert _run(POLICIES, case) == _run(LITERAL_POLICIES, case)
