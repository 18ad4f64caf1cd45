"""tm_merge.json: Policy.Merge for every policy, and the HintMerger internals."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.topologymanager import PolicyOptions, new_policy
from kubeletemu.topologymanager.policy import (
    HintMerger,
    filter_providers_hints,
    max_of_min_affinity_counts,
)
from kubeletemu.topologymanager.policy_best_effort import BestEffortPolicy
from kubeletemu.topologymanager.policy_none import NonePolicy
from kubeletemu.topologymanager.policy_restricted import RestrictedPolicy
from kubeletemu.topologymanager.policy_single_numa_node import (
    SingleNumaNodePolicy,
    filter_single_numa_hints,
)
from tests.conformance.loader import version_kwargs, versioned_rows
from tests.topologymanager.codec import encode, hint, hint_list, numa_info, providers
from tests.topologymanager.oracle import literal_merge


def _options(raw: dict[str, bool]) -> PolicyOptions:
    return PolicyOptions(prefer_closest_numa=bool(raw.get("prefer-closest-numa-nodes", False)))


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_merge", "cases"))
def test_policy_merge(row: dict[str, Any], version: str) -> None:
    info = numa_info(row["numa_nodes"], row["distances"])
    policy = new_policy(row["policy"], info, _options(row["options"]), **version_kwargs(new_policy, version))
    best, admit = policy.merge(providers(row["providers_hints"]))
    assert encode(best) == row["expected"]
    assert admit == row["expected_admit"]


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_merge", "cases"))
def test_literal_oracle_agrees_with_table(row: dict[str, Any], version: str) -> None:
    """The oracle the property tests trust must itself reproduce every upstream row."""
    info = numa_info(row["numa_nodes"], row["distances"])
    best, admit = literal_merge(
        row["policy"], info, _options(row["options"]), providers(row["providers_hints"])
    )
    assert (encode(best), admit) == (row["expected"], row["expected_admit"])


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_merge", "compare_cases"))
def test_hint_merger_compare(row: dict[str, Any], version: str) -> None:
    merger = HintMerger(numa_info([], None), [], row["policy"], PolicyOptions())
    merger.best_non_preferred_affinity_count = row["best_non_preferred_affinity_count"]
    current = None if row["current"] is None else hint(row["current"])
    candidate = hint(row["candidate"])
    chosen = merger.compare(current, candidate)
    expected = current if row["expected"] == "current" else candidate
    assert chosen is expected


@pytest.mark.parametrize(
    ("row", "version"), versioned_rows("tm_merge", "max_of_min_affinity_counts_cases", key="expected")
)
def test_max_of_min_affinity_counts(row: dict[str, Any], version: str) -> None:
    dims = [hint_list(dim) or [] for dim in row["hints"]]
    assert max_of_min_affinity_counts(dims) == row["expected"]


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_merge", "filter_single_numa_hints_cases"))
def test_filter_single_numa_hints(row: dict[str, Any], version: str) -> None:
    dims = [hint_list(dim) or [] for dim in row["input"]]
    result = filter_single_numa_hints(dims)
    if row["expected"] is None:
        assert result is None
        return
    assert result is not None
    # An expected inner null is the kubelet's nil slice: no hint survived.
    expected = [hint_list(dim) or [] for dim in row["expected"]]
    assert result == expected


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_merge", "can_admit_cases", key="test"))
def test_can_admit_pod_result(row: dict[str, Any], version: str) -> None:
    info = numa_info([0, 1], None)
    candidate = hint(row["hint"])
    policy: Any
    if row["policy"] == "none":
        policy = NonePolicy()
        assert policy.merge([])[1] is row["expected"]
        return
    policy = {
        "best-effort": BestEffortPolicy,
        "restricted": RestrictedPolicy,
        "single-numa-node": SingleNumaNodePolicy,
    }[row["policy"]](info, PolicyOptions())
    assert policy.can_admit_pod_result(candidate) is row["expected"]


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_merge", "name_cases", key="test"))
def test_policy_name(row: dict[str, Any], version: str) -> None:
    # TestPolicy{None,Restricted}Name build the policy on the two-node fixture.
    policy = new_policy(
        row["policy"], numa_info([0, 1], None), PolicyOptions(), **version_kwargs(new_policy, version)
    )
    assert policy.name == row["expected"]


def test_nil_versus_empty_lists_are_distinct() -> None:
    dims = filter_providers_hints([None, {}, {"a": None}, {"b": []}])
    assert [[encode(h) for h in dim] for dim in dims] == [
        [{"affinity": None, "preferred": True}],
        [{"affinity": None, "preferred": True}],
        [{"affinity": None, "preferred": True}],
        [{"affinity": None, "preferred": False}],
    ]
