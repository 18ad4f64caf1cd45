"""tm_options.json: NewPolicyOptions and CheckPolicyOptionAvailable, with the test-only fake options."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.topologymanager import PolicyOptions, PolicyOptionsError
from kubeletemu.topologymanager.policy_options import (
    OPTION_LEVELS,
    OptionLevel,
    check_policy_option_available,
    option_levels,
)
from tests.conformance.loader import load, versioned_rows

FAKE = {"fancy-new-option", "fancy-alpha-option"}


def levels(version: str) -> dict[str, OptionLevel]:
    """The maturity table of the kubelet of ``version`` plus the fake beta and alpha options the upstream
    tests register for their duration."""
    return {
        **option_levels(version),
        "fancy-new-option": OptionLevel.BETA,
        "fancy-alpha-option": OptionLevel.ALPHA,
    }


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_options", "new_policy_options_cases"))
def test_new_policy_options(row: dict[str, Any], version: str) -> None:
    table = levels(version)
    if "expected_error" in row:
        with pytest.raises(PolicyOptionsError) as info:
            PolicyOptions.from_map(
                row["policy_options"], row["feature_gates"], table, kubelet_version=version
            )
        assert row["expected_error"] in str(info.value)
        return
    expected = row["expected_options"]
    if FAKE & row["policy_options"].keys():
        # A registered option nobody parses passes the availability check and then hits the parser's
        # "should never be reached" branch; the upstream test ignores that error and compares the
        # default options the kubelet returns alongside it.
        with pytest.raises(PolicyOptionsError, match=r"^unsupported topologymanager option"):
            PolicyOptions.from_map(
                row["policy_options"], row["feature_gates"], table, kubelet_version=version
            )
        options = PolicyOptions()
    else:
        options = PolicyOptions.from_map(
            row["policy_options"], row["feature_gates"], table, kubelet_version=version
        )
    assert options.prefer_closest_numa == expected["prefer_closest_numa"]
    assert options.max_allowable_numa_nodes == expected["max_allowable_numa_nodes"]


@pytest.mark.parametrize(
    ("row", "version"), versioned_rows("tm_options", "check_policy_option_available_cases", key="option")
)
def test_check_policy_option_available(row: dict[str, Any], version: str) -> None:
    try:
        check_policy_option_available(row["option"], row["feature_gates"], levels(version))
        available = True
    except PolicyOptionsError:
        available = False
    assert available is row["expected_available"]


def test_option_levels_match_master() -> None:
    master = load("tm_options")["option_levels_master"]
    for level in ("alpha", "beta", "stable"):
        upstream = {name for name, lv in OPTION_LEVELS.items() if lv.value == level}
        # The KEP-6007 options are this emulator's alpha extension, absent from master.
        upstream -= {"prefer-most-allocated-numa-node", "numa-allocation-strategy", "numa-score-weights"}
        assert upstream == set(master[level]), level
