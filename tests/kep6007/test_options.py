"""Both KEP-6007 spellings as topology manager policy options: parsing, alpha gating, and the checks
against the policy and against each other at ``NewManager`` time."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kubeletemu.topologymanager import PolicyOptions, PolicyOptionsError, new_manager
from kubeletemu.topologymanager.policy_options import NUMAAllocationStrategy, validate_policy_options

ALPHA = {"TopologyManagerPolicyAlphaOptions": True}
TWO_NODES = [(0, [10, 20]), (1, [20, 10])]
PMA = "prefer-most-allocated-numa-node"
NAS = "numa-allocation-strategy"
NSW = "numa-score-weights"

PARSE_CASES: dict[str, tuple[Mapping[str, str], PolicyOptions]] = {
    "first draft on": ({PMA: "true"}, PolicyOptions(prefer_most_allocated_numa_node=True)),
    "first draft, Go ParseBool spelling": ({PMA: "T"}, PolicyOptions(prefer_most_allocated_numa_node=True)),
    "first draft off": ({PMA: "0"}, PolicyOptions()),
    "most-allocated": (
        {NAS: "most-allocated"},
        PolicyOptions(numa_allocation_strategy=NUMAAllocationStrategy.MOST_ALLOCATED),
    ),
    "least-allocated": (
        {NAS: "least-allocated"},
        PolicyOptions(numa_allocation_strategy=NUMAAllocationStrategy.LEAST_ALLOCATED),
    ),
    "empty strategy means none": ({NAS: ""}, PolicyOptions()),
    "weights": (
        {NAS: "most-allocated", NSW: " cpu=3, memory=0 ,nvidia.com/gpu=100,"},
        PolicyOptions(
            numa_allocation_strategy=NUMAAllocationStrategy.MOST_ALLOCATED,
            numa_score_weights={"cpu": 3, "memory": 0, "nvidia.com/gpu": 100},
        ),
    ),
}


@pytest.mark.parametrize(("options", "expected"), PARSE_CASES.values(), ids=PARSE_CASES)
def test_parse(options: Mapping[str, str], expected: PolicyOptions) -> None:
    assert PolicyOptions.from_map(options, ALPHA) == expected


ERROR_CASES: dict[str, tuple[Mapping[str, str], Mapping[str, bool], str]] = {
    "first draft needs the alpha gate": (
        {PMA: "true"},
        {},
        "topology manager policy alpha-level options not enabled, "
        'but option "prefer-most-allocated-numa-node" provided',
    ),
    "strategy needs the alpha gate": (
        {NAS: "most-allocated"},
        {"TopologyManagerPolicyAlphaOptions": False},
        "topology manager policy alpha-level options not enabled, "
        'but option "numa-allocation-strategy" provided',
    ),
    "weights need the alpha gate": (
        {NSW: "cpu=1"},
        {},
        'topology manager policy alpha-level options not enabled, but option "numa-score-weights" provided',
    ),
    "first draft, not a boolean": (
        {PMA: "yes"},
        ALPHA,
        'bad value for option "prefer-most-allocated-numa-node": '
        'strconv.ParseBool: parsing "yes": invalid syntax',
    ),
    "unknown strategy": (
        {NAS: "balanced"},
        ALPHA,
        'bad value for option "numa-allocation-strategy": "balanced" must be one of '
        '["least-allocated" "most-allocated" "none"]',
    ),
    "weight without =": (
        {NSW: "cpu"},
        ALPHA,
        'bad value for option "numa-score-weights": invalid weight entry "cpu": expected resource=weight',
    ),
    "weight not an integer": (
        {NSW: "cpu=0.5"},
        ALPHA,
        'bad value for option "numa-score-weights": invalid weight value for "cpu": '
        'strconv.Atoi: parsing "0.5": invalid syntax',
    ),
    "weight above 100": (
        {NSW: "memory=101"},
        ALPHA,
        'bad value for option "numa-score-weights": weight for "memory" must be in range [0, 100], got 101',
    ),
    "negative weight": (
        {NSW: "cpu=-1"},
        ALPHA,
        'bad value for option "numa-score-weights": weight for "cpu" must be in range [0, 100], got -1',
    ),
    "empty resource name": (
        {NSW: "=1"},
        ALPHA,
        'bad value for option "numa-score-weights": empty resource name in weight entry "=1"',
    ),
}


@pytest.mark.parametrize(("options", "gates", "message"), ERROR_CASES.values(), ids=ERROR_CASES)
def test_parse_errors(options: Mapping[str, str], gates: Mapping[str, bool], message: str) -> None:
    with pytest.raises(PolicyOptionsError) as info:
        PolicyOptions.from_map(options, gates)
    assert str(info.value) == message


NEW_MANAGER_CASES: dict[str, tuple[str, Mapping[str, str], str | None]] = {
    "first draft with single-numa-node": ("single-numa-node", {PMA: "true"}, None),
    "first draft with best-effort": (
        "best-effort",
        {PMA: "true"},
        'topology manager policy option "prefer-most-allocated-numa-node" is only supported with the '
        '"single-numa-node" policy, not "best-effort"',
    ),
    "first draft with restricted": (
        "restricted",
        {PMA: "true"},
        'topology manager policy option "prefer-most-allocated-numa-node" is only supported with the '
        '"single-numa-node" policy, not "restricted"',
    ),
    "first draft off with best-effort": ("best-effort", {PMA: "false"}, None),
    "both drafts at once": (
        "single-numa-node",
        {PMA: "true", NAS: "least-allocated"},
        'topology manager policy options "prefer-most-allocated-numa-node" and "numa-allocation-strategy" '
        "can not be used at the same time",
    ),
    "first draft with the none strategy": ("single-numa-node", {PMA: "true", NAS: "none"}, None),
    "first draft with weights only": ("single-numa-node", {PMA: "true", NSW: "cpu=2"}, None),
    "strategy with best-effort": ("best-effort", {NAS: "most-allocated"}, None),
    "strategy with restricted and closest": (
        "restricted",
        {NAS: "least-allocated", "prefer-closest-numa-nodes": "true"},
        None,
    ),
    "strategy with single-numa-node": ("single-numa-node", {NAS: "most-allocated", NSW: "cpu=2"}, None),
    "weights without a strategy": ("best-effort", {NSW: "cpu=2"}, None),
    # Policy none parses no options at all (NewManager returns before), so nothing is refused.
    "policy none ignores everything": ("none", {PMA: "true", NAS: "bogus"}, None),
}


@pytest.mark.parametrize(("policy", "options", "message"), NEW_MANAGER_CASES.values(), ids=NEW_MANAGER_CASES)
def test_new_manager_cross_checks(policy: str, options: Mapping[str, str], message: str | None) -> None:
    if message is None:
        manager = new_manager(TWO_NODES, policy, "container", options, ALPHA)
        assert manager.policy.name == policy
        return
    with pytest.raises(PolicyOptionsError) as info:
        new_manager(TWO_NODES, policy, "container", options, ALPHA)
    assert str(info.value) == message


def test_validate_policy_options_directly() -> None:
    validate_policy_options("best-effort", PolicyOptions())
    validate_policy_options("single-numa-node", PolicyOptions(prefer_most_allocated_numa_node=True))
    with pytest.raises(PolicyOptionsError, match="only supported with"):
        validate_policy_options("bogus", PolicyOptions(prefer_most_allocated_numa_node=True))


def test_to_map_round_trip() -> None:
    options = {PMA: "true", NSW: "cpu=3,memory=1"}
    parsed = PolicyOptions.from_map(options, ALPHA)
    assert parsed.to_map() == options
    assert PolicyOptions.from_map(parsed.to_map(), ALPHA) == parsed
