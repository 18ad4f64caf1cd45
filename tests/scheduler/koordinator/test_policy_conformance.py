"""koord_policy.json: the Koordinator Topology Manager policies (policy_*_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.scheduler.koordinator.merge import (
    EXCLUSIVE_PREFERRED,
    POLICIES,
    can_admit,
    check_exclusive_policy,
    filter_providers_hints,
    filter_single_numa_hints,
    merge_none,
)
from tests.conformance.loader import rows
from tests.scheduler.koordinator.codec import hint, hint_list, provider

TABLE = "koord_policy"


@pytest.mark.parametrize("row", rows(TABLE, "merge"))
def test_merge(row: dict[str, Any]) -> None:
    merge = POLICIES[row["policy"]]
    result = merge(row["numaNodes"], [provider(p) for p in row["providers"]], EXCLUSIVE_PREFERRED, [])
    assert result.hint == hint(row["expected"])
    if row["checkReasons"]:
        assert list(result.reasons) == (row["expectedReasons"] or [])


@pytest.mark.parametrize("row", rows(TABLE, "checkExclusive"))
def test_check_exclusive_policy(row: dict[str, Any]) -> None:
    got = check_exclusive_policy(hint(row["affinity"]), row["exclusivePolicy"], row["numaNodeStatus"])
    assert got is row["want"]


@pytest.mark.parametrize("row", rows(TABLE, "filterProvidersHints"))
def test_filter_providers_hints(row: dict[str, Any]) -> None:
    got = filter_providers_hints([provider(p) for p in row["providersHints"]])
    assert got.hints == [hint_list(dim) for dim in row["want"]]
    assert got.reasons == (row["wantReasons"] or [])
    assert got.summary == (row["wantSummary"] or [])


@pytest.mark.parametrize("row", rows(TABLE, "filterSingleNumaHints"))
def test_filter_single_numa_hints(row: dict[str, Any]) -> None:
    got = filter_single_numa_hints([hint_list(dim) or [] for dim in row["allResources"]])
    want = [hint_list(dim) or [] for dim in row["expectedResources"] or []]
    assert got == want


@pytest.mark.parametrize("row", rows(TABLE, "canAdmit"))
def test_can_admit(row: dict[str, Any]) -> None:
    assert can_admit(row["policy"] if row["policy"] != "none" else "", hint(row["hint"])) is row["expected"]


@pytest.mark.parametrize("row", rows(TABLE, "noneMerge"))
def test_none_merge(row: dict[str, Any]) -> None:
    result = merge_none([], [provider(p) for p in row["providersHints"]], EXCLUSIVE_PREFERRED, [])
    assert result.hint.is_equal(hint(row["expectedHint"]))
    assert result.admit is row["expectedAdmit"]
