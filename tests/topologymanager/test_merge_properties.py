"""Property tests: the production merge equals the kubelet's literal permutation fold.

Random inputs up to 5 NUMA nodes and 4 providers, every policy, prefer-closest on and off, with
random distance matrices (small ranges, so equal averages and other ties occur often).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeletemu.bitmask import BitMask
from kubeletemu.topologymanager import NUMAInfo, PolicyOptions, ProviderHints, TopologyHint, new_policy
from tests.topologymanager.oracle import literal_merge

POLICIES = ("none", "best-effort", "restricted", "single-numa-node")


@st.composite
def numa_topologies(draw: st.DrawFn) -> NUMAInfo:
    count = draw(st.integers(1, 5))
    rows = [[10] * count for _ in range(count)]
    for a in range(count):
        for b in range(a + 1, count):
            rows[a][b] = rows[b][a] = draw(st.integers(11, 14))
    return NUMAInfo(list(range(count)), dict(enumerate(rows)))


def provider_maps(pool: list[BitMask | None]) -> st.SearchStrategy[ProviderHints]:
    hints = st.builds(TopologyHint, st.sampled_from(pool), st.booleans())
    resource_hints = st.one_of(st.none(), st.just([]), st.lists(hints, min_size=1, max_size=4))
    resources = st.dictionaries(st.sampled_from(["cpu", "memory", "gpu"]), resource_hints, max_size=2)
    return st.one_of(st.none(), resources)


@st.composite
def merge_inputs(draw: st.DrawFn) -> tuple[str, NUMAInfo, PolicyOptions, list[ProviderHints]]:
    info = draw(numa_topologies())
    policy = draw(st.sampled_from(POLICIES))
    options = PolicyOptions(prefer_closest_numa=draw(st.booleans()))
    # Hints draw from a small pool of masks so that equal masks across providers (true alignment) are
    # common; one spare bit beyond the machine checks the AND with the default mask.
    nodes = len(info.nodes)
    masks = st.integers(1, (1 << (nodes + 1)) - 1).map(BitMask)
    pool = draw(st.lists(st.one_of(st.none(), masks), min_size=1, max_size=4))
    maps = draw(st.lists(provider_maps(pool), max_size=4))
    return policy, info, options, maps


SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@SETTINGS
@given(merge_inputs())
def test_merge_equals_literal_fold(case: tuple[str, NUMAInfo, PolicyOptions, list[ProviderHints]]) -> None:
    policy_name, info, options, maps = case
    fast = new_policy(policy_name, info, options).merge(maps)
    assert fast == literal_merge(policy_name, info, options, maps)


def _reordered(maps: list[ProviderHints], rnd: Any) -> list[ProviderHints]:
    shuffled: list[ProviderHints] = []
    for provider in rnd.sample(maps, len(maps)):
        if provider is None:
            shuffled.append(None)
            continue
        items = list(provider.items())
        rnd.shuffle(items)
        shuffled.append({k: (None if v is None else rnd.sample(list(v), len(v))) for k, v in items})
    return shuffled


@pytest.mark.slow
@SETTINGS
@given(merge_inputs(), st.randoms(use_true_random=False))
def test_result_independent_of_provider_resource_and_hint_order(
    case: tuple[str, NUMAInfo, PolicyOptions, list[ProviderHints]], rnd: Any
) -> None:
    policy_name, info, options, maps = case
    policy = new_policy(policy_name, info, options)
    assert policy.merge(_reordered(maps, rnd)) == policy.merge(maps)
    # The oracle agrees too: the kubelet's answer does not depend on Go's random map order.
    assert literal_merge(policy_name, info, options, _reordered(maps, rnd)) == policy.merge(maps)
