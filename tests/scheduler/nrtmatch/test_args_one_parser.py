"""One parser of NodeResourceTopologyMatchArgs (scheduler-plugins 903da7d ``apis/config`` v1 defaults and
validation) for the Filter/Score model and the cache factory: both read the same args, refuse the same
input, and name the file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeletemu.config.errors import ConfigError
from kubeletemu.scheduler.nrtcache import (
    InformerStore,
    OverReserve,
    Passthrough,
    cache_from_args,
    parse_cache_args,
)
from kubeletemu.scheduler.nrtmatch.args import (
    NodeResourceTopologyCache,
    NodeResourceTopologyMatchArgs,
    parse_args,
)
from kubeletemu.scheduler.profile import parse_profiles
from tests.scheduler.test_objects_and_baseline import CLUSTER, POD, run_cli

VALID: list[dict[str, Any] | None] = [
    None,
    {},
    {
        "cacheResyncPeriodSeconds": 10,
        "cache": {"resyncMethod": "OnlyExclusiveResources", "resyncScope": "All"},
    },
    {
        "scoringStrategy": {"type": "LeastNUMANodes"},
        "discardReservedNodes": True,
        "preemptionMode": "Enabled",
    },
    {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "NodeResourceTopologyMatchArgs"},
]


@pytest.mark.parametrize("raw", VALID)
def test_the_model_and_the_cache_read_the_same_args(raw: dict[str, Any] | None) -> None:
    assert parse_cache_args(raw) == parse_args(raw)


def test_null_fields_take_the_defaults() -> None:
    # Go's JSON decoder leaves a pointer nil (then defaulted) and a bool false for null.
    raw = {
        "cacheResyncPeriodSeconds": None,
        "discardReservedNodes": None,
        "preemptionMode": None,
        "cache": None,
    }
    assert parse_args(raw) == NodeResourceTopologyMatchArgs()
    assert parse_cache_args(raw) == NodeResourceTopologyMatchArgs()


@pytest.mark.parametrize(
    ("raw", "model_message", "cache_message"),
    [
        (
            {"scoringStrategy": {"type": "Cheapest"}},
            'src: scoringStrategy.type: Invalid value: "Cheapest": invalid ScoringStrategyType',
            'NodeResourceTopologyMatch args: args.scoringStrategy.type: Invalid value: "Cheapest": '
            "invalid ScoringStrategyType",
        ),
        (
            {"cacheResyncPeriodSecond": 5},
            'src: strict decoding error: unknown field "cacheResyncPeriodSecond"',
            "NodeResourceTopologyMatch args: args: strict decoding error: "
            'unknown field "cacheResyncPeriodSecond"',
        ),
        (
            {"cacheResyncPeriodSeconds": 1 << 63},
            f"src: cacheResyncPeriodSeconds: Invalid value: {1 << 63}: out of the int64 range",
            f"NodeResourceTopologyMatch args: args.cacheResyncPeriodSeconds: Invalid value: {1 << 63}: "
            "out of the int64 range",
        ),
        (
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1.5}]}},
            "src: scoringStrategy.resources[0].weight: expected an integer, got a number",
            "NodeResourceTopologyMatch args: args.scoringStrategy.resources[0].weight: expected an integer, "
            "got a number",
        ),
    ],
)
def test_both_refuse_the_same_input_naming_the_field(
    raw: dict[str, Any], model_message: str, cache_message: str
) -> None:
    with pytest.raises(ConfigError) as model:
        parse_args(raw, "src")
    assert str(model.value) == model_message
    with pytest.raises(ConfigError) as cache:
        cache_from_args(raw, InformerStore())
    assert str(cache.value) == cache_message


def test_unknown_cache_enums_are_accepted_as_the_plugin_does() -> None:
    raw = {"cacheResyncPeriodSeconds": 3, "cache": {"informerMode": "dedicated", "resyncMethod": ""}}
    args = parse_args(raw)
    assert args.cache == NodeResourceTopologyCache("All", "", "dedicated", None)
    assert parse_cache_args(raw) == args
    assert isinstance(cache_from_args(raw, InformerStore()), OverReserve)
    assert isinstance(cache_from_args({"cacheResyncPeriodSeconds": 0}, InformerStore()), Passthrough)


SCHEDULER_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: topo-aware
  plugins: {multiPoint: {enabled: [{name: NodeResourceTopologyMatch}]}}
  pluginConfig:
  - name: NodeResourceTopologyMatch
    args: {cacheResyncPeriodSeconds: 5, cache: {informerMode: dedicated}}
"""


def test_strict_refuses_unknown_cache_enums_naming_what_the_plugin_would_do() -> None:
    raw = {"cache": {"foreignPodsDetect": "Some"}}
    message = (
        'cache.foreignPodsDetect: Unsupported value: "Some": supported values: "None", "All", '
        '"OnlyExclusiveResources" (the plugin does not validate it and would act as "All")'
    )
    with pytest.raises(ConfigError) as model:
        parse_args(raw, "src", strict=True)
    assert str(model.value) == f"src: {message}"
    with pytest.raises(ConfigError) as cache:
        cache_from_args(raw, InformerStore(), strict=True)
    assert str(cache.value) == f"NodeResourceTopologyMatch args: args.{message}"


def test_a_scheduler_config_the_plugin_runs_runs_here_and_a_bad_one_names_file_and_field(
    tmp_path: Path,
) -> None:
    parse_profiles(SCHEDULER_CONFIG, "sched.yaml")  # informerMode "dedicated": the plugin runs Shared
    for name, text in {"sched.yaml": SCHEDULER_CONFIG, "cluster.yaml": CLUSTER, "pod.yaml": POD}.items():
        (tmp_path / name).write_text(text)
    args = ("-f", "pod.yaml", "--nrt", "cluster.yaml", "--scheduler-config", "sched.yaml")
    assert run_cli("schedule", *args, cwd=tmp_path).returncode == 0
    (tmp_path / "sched.yaml").write_text(
        SCHEDULER_CONFIG.replace("informerMode: dedicated", "informerMod: x")
    )
    fragment = (
        "sched.yaml: profiles[0].pluginConfig[0].args: "
        'strict decoding error: unknown field "cache.informerMod"'
    )
    with pytest.raises(ConfigError) as err:
        parse_profiles((tmp_path / "sched.yaml").read_text(), "sched.yaml")
    assert str(err.value).startswith(fragment)
    out = run_cli("schedule", *args, cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith(f"kubeletemu: {fragment}")
