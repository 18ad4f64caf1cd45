"""NodeResourceTopologyMatchArgs: defaults (SetDefaults_NodeResourceTopologyMatchArgs) and validation
(ValidateNodeResourceTopologyMatchArgs) at scheduler-plugins 903da7d."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletemu.config.errors import ConfigError
from kubeletemu.scheduler.nrtmatch.args import (
    CacheArgs,
    NodeResourceTopologyMatchArgs,
    ResourceSpec,
    ScoringStrategy,
    parse_args,
)


def test_defaults() -> None:
    for raw in (None, {}, {"scoringStrategy": None}):
        args = parse_args(raw)
        assert args == NodeResourceTopologyMatchArgs()
    args = parse_args({})
    assert args.scoring_strategy == ScoringStrategy(
        "LeastAllocated", (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    )
    assert args.cache == CacheArgs("All", "Autodetect", "Dedicated", None)
    assert (args.cache_resync_period_seconds, args.discard_reserved_nodes, args.preemption_mode) == (
        0,
        False,
        "Disabled",
    )


def test_a_full_configuration() -> None:
    args = parse_args(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "NodeResourceTopologyMatchArgs",
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [
                    {"name": "cpu", "weight": 3},
                    {"name": "example.com/gpu"},
                    {"name": "cpu", "weight": 5},
                ],
            },
            "cacheResyncPeriodSeconds": 5,
            "discardReservedNodes": True,
            "cache": {"foreignPodsDetect": "OnlyExclusiveResources", "resyncScope": "OnlyResources"},
            "preemptionMode": "Enabled",
        }
    )
    assert args.scoring_strategy.type == "MostAllocated"
    # A weight of 0 (or none) becomes 1; a repeated name keeps its last weight.
    assert args.scoring_strategy.weights() == {"cpu": 5, "example.com/gpu": 1}
    assert args.cache == CacheArgs("OnlyExclusiveResources", "Autodetect", "Dedicated", "OnlyResources")
    assert (args.cache_resync_period_seconds, args.discard_reserved_nodes, args.preemption_mode) == (
        5,
        True,
        "Enabled",
    )


def test_a_given_strategy_keeps_its_type_but_gets_default_resources() -> None:
    args = parse_args({"scoringStrategy": {"type": "LeastNUMANodes"}})
    assert args.scoring_strategy == ScoringStrategy(
        "LeastNUMANodes", (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"scoringStrategy": {"type": "MostRequested"}},
            'args: scoringStrategy.type: Invalid value: "MostRequested": invalid ScoringStrategyType',
        ),
        # The type is not defaulted inside a given scoringStrategy.
        (
            {"scoringStrategy": {}},
            'args: scoringStrategy.type: Invalid value: "": invalid ScoringStrategyType',
        ),
        ({"preemptionMode": "On"}, 'args: preemptionMode: Invalid value: "On": invalid PreemptionMode'),
        (
            {"scoringStrategy": {"type": "x"}, "preemptionMode": "y"},
            'args: [scoringStrategy.type: Invalid value: "x": invalid ScoringStrategyType, '
            'preemptionMode: Invalid value: "y": invalid PreemptionMode]',
        ),
        ({"scoringStrategy": {"type": 3}}, "args: scoringStrategy.type: expected a string, got an integer"),
        (
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": "2"}]}},
            "args: scoringStrategy.resources[0].weight: expected an integer, got a string",
        ),
        (
            {"cacheResyncPeriodSeconds": 1.5},
            "args: cacheResyncPeriodSeconds: expected an integer, got a number",
        ),
        ({"discardReservedNodes": "yes"}, "args: discardReservedNodes: expected true or false, got a string"),
        ({"cache": {"informerMode": 1}}, "args: cache.informerMode: expected a string, got an integer"),
        ({"scoringStrategies": {}}, 'args: strict decoding error: unknown field "scoringStrategies"'),
        ({"cache": {"resync": "All"}}, 'args: strict decoding error: unknown field "cache.resync"'),
        ([], "args: expected a mapping, got a list"),
    ],
)
def test_refused(raw: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_args(raw, source="args")
    assert str(info.value) == message
