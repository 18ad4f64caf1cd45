"""tm_options.json: NewPolicyOptions and CheckPolicyOptionAvailable, with the test-only fake options."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kubeletemu.topologymanager import PolicyOptions, PolicyOptionsError, policy_options
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


def gates_at(row: dict[str, Any], version: str) -> dict[str, bool]:
    """The gates the upstream row sets at ``version``: ``feature_gates_by_version`` where the release's table
    set other gates than later ones (v1.33/v1.34 set two gates that v1.35 dropped), else ``feature_gates``."""
    gates: dict[str, bool] = row.get("feature_gates_by_version", {}).get(version, row["feature_gates"])
    return gates


@pytest.mark.parametrize(("row", "version"), versioned_rows("tm_options", "new_policy_options_cases"))
def test_new_policy_options(row: dict[str, Any], version: str) -> None:
    table = levels(version)
    gates = gates_at(row, version)
    if "expected_error" in row:
        with pytest.raises(PolicyOptionsError) as info:
            PolicyOptions.from_map(row["policy_options"], gates, table, kubelet_version=version)
        assert row["expected_error"] in str(info.value)
        return
    expected = row["expected_options"]
    if FAKE & row["policy_options"].keys():
        # A registered option nobody parses passes the availability check and then hits the parser's
        # "should never be reached" branch; the upstream test ignores that error and compares the
        # default options the kubelet returns alongside it.
        with pytest.raises(PolicyOptionsError, match=r"^unsupported topologymanager option"):
            PolicyOptions.from_map(row["policy_options"], gates, table, kubelet_version=version)
        options = PolicyOptions()
    else:
        options = PolicyOptions.from_map(row["policy_options"], gates, table, kubelet_version=version)
    assert options.prefer_closest_numa == expected["prefer_closest_numa"]
    assert options.max_allowable_numa_nodes == expected["max_allowable_numa_nodes"]


def test_gates_by_version_override_listed_versions_only() -> None:
    """Each override names a version its row holds for and really differs from ``feature_gates``; the two
    v1.33/v1.34 rows that set gates are the ones carrying it."""
    carrying = []
    for row in load("tm_options")["new_policy_options_cases"]:
        overrides = row.get("feature_gates_by_version", {})
        for version, gates in overrides.items():
            assert version in row["versions"], (row["name"], version)
            assert gates != row["feature_gates"], (row["name"], version)
            assert gates_at(row, version) == gates
        if overrides:
            carrying.append(row["name"])
    assert carrying == [
        "return TopologyManagerOptions with MaxAllowableNUMANodes set to 12",
        "fail to parse options with error MaxAllowableNUMANodes",
    ]


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


def test_more_than_the_default_max_numa_nodes_warns_once_per_value(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kubelet warns when it starts; the options are parsed again for each node, fork and restart
    modelled, which must not repeat it (an oracle run over thousands of cases printed it each time)."""
    monkeypatch.setattr(policy_options, "_WARNED_MAX_NUMA", set())  # as in a fresh process
    caplog.set_level(logging.WARNING, logger="kubeletemu")
    for _ in range(3):
        for value in ("13", "14", "13"):
            PolicyOptions.from_map({"max-allowable-numa-nodes": value}, kubelet_version="1.35")
    warned = [r.getMessage() for r in caplog.records if "max-allowable-numa-nodes" in r.getMessage()]
    assert [w.split("value=")[1] for w in warned] == ["13 defaultValue=8", "14 defaultValue=8"]
