"""The Fleet file: matrix expansion, picklable configurations, and bad input refused before any run."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from kubeletemu.fleet.distributions import Distribution
from kubeletemu.fleet.spec import (
    NFD,
    RTE,
    ControllersSpec,
    ExporterSpec,
    FleetError,
    ReplicaSetSpec,
    load_fleet,
    parse_fleet,
)
from tests.fleet.conftest import SMALL

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)


def test_matrix_collapses_axes_that_do_not_apply(fleet_dir: Path) -> None:
    names = [c.name for c in load_fleet(fleet_dir / "fleet.yaml").configurations()]
    assert names == [
        "default/seed=3",
        "default/seed=4",
        "nrt/passthrough/exporter=20s/seed=3",
        "nrt/passthrough/exporter=20s/seed=4",
        "nrt/passthrough/exporter=5s/seed=3",
        "nrt/passthrough/exporter=5s/seed=4",
        "nrt/overreserve/resync=5s/exporter=20s/seed=3",
        "nrt/overreserve/resync=5s/exporter=20s/seed=4",
        "nrt/overreserve/resync=5s/exporter=5s/seed=3",
        "nrt/overreserve/resync=5s/exporter=5s/seed=4",
        "exact/seed=3",
        "exact/seed=4",
    ]


def test_configurations_are_self_contained_and_picklable(fleet_dir: Path) -> None:
    configs = load_fleet(fleet_dir / "fleet.yaml").configurations()
    for config in configs:
        again = pickle.loads(pickle.dumps(config))
        assert again == config
    overreserve = next(c for c in configs if c.cache == "overreserve")
    assert overreserve.resync_period_s == 5.0
    args = overreserve.nrt_match_args()
    assert args is not None
    assert (args.scoring_strategy.type, args.cache_resync_period_seconds) == ("LeastAllocated", 5)
    assert overreserve.node_groups[0].config_text.startswith("apiVersion: kubelet.config.k8s.io/v1beta1")


def _broken(fleet_dir: Path, old: str, new: str) -> str:
    text = SMALL.replace(old, new)
    assert text != SMALL
    with pytest.raises(FleetError) as caught:
        parse_fleet(text, str(fleet_dir / "fleet.yaml"), fleet_dir)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(fleet_dir / "fleet.yaml"))
    return message


def test_unknown_scheduler_model(fleet_dir: Path) -> None:
    message = _broken(fleet_dir, "model: NodeResourceTopologyMatch", "model: NodeResourceTopologyMatsch")
    assert "schedulers[1].model: unknown scheduler 'NodeResourceTopologyMatsch'" in message


def test_unknown_scheduler_in_the_matrix(fleet_dir: Path) -> None:
    message = _broken(fleet_dir, "schedulers: [default, nrt, exact]", "schedulers: [default, koord]")
    assert "matrix.schedulers[1]: unknown scheduler 'koord'" in message


def test_negative_rate(fleet_dir: Path) -> None:
    assert "workload.rate: must be positive, got -2" in _broken(fleet_dir, "rate: 2", "rate: -2")


def test_invalid_kubelet_config_names_the_group_and_the_file(fleet_dir: Path) -> None:
    (fleet_dir / "kubelet-config.yaml").write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "topologyManagerPolicy: tight\n"
    )
    with pytest.raises(FleetError) as caught:
        load_fleet(fleet_dir / "fleet.yaml")
    message = str(caught.value)
    assert "nodeGroups[0].config:" in message and "kubelet-config.yaml" in message
    assert "topologyManagerPolicy" in message


def test_bad_plugin_args_fail_before_the_run(fleet_dir: Path) -> None:
    message = _broken(fleet_dir, "type: LeastAllocated", "type: Fewest")
    assert "schedulers[nrt]" in message and "Fewest" in message


def test_other_refusals(fleet_dir: Path) -> None:
    assert "count: must be at least 1" in _broken(fleet_dir, "count: 6", "count: 0")
    assert "exporter.period" in _broken(fleet_dir, "period: 20s", "period: soon")
    assert "matrix.caches[1]: unknown cache 'lru'" in _broken(
        fleet_dir, "[passthrough, overreserve]", "[passthrough, lru]"
    )
    assert "whole seconds" in _broken(fleet_dir, "resyncPeriods: [5s]", "resyncPeriods: [2500ms]")
    assert "workload.lifetime" in _broken(fleet_dir, "{exponential: 30s}", "{gamma: 30s}")
    assert "unknown field" in _broken(fleet_dir, "drain: 120s", "drian: 120s")


def test_removed_fields_point_to_what_replaced_them(fleet_dir: Path) -> None:
    message = _broken(fleet_dir, "drain: 120s", "drain: 120s\n  recreateBackoff: 1s")
    assert (
        "workload.recreateBackoff: removed: a ReplicaSet replaces a Failed pod when it observes it" in message
    )
    assert "controllers.replicaSet" in message
    message = _broken(fleet_dir, "notifyFile: true}", "jitter: 3s}")
    assert "exporter.jitter: removed: the exporters' tickers are fixed" in message
    message = _broken(fleet_dir, "notifyFile: true}", "onChange: {delay: 1s}}")
    assert "exporter.onChange: removed: use exporter.notifyFile" in message


def test_the_exporter_section(fleet_dir: Path) -> None:
    spec = parse_fleet(SMALL, str(fleet_dir / "fleet.yaml"), fleet_dir)
    assert spec.exporter == ExporterSpec(20.0, RTE, True, 1, True, "with-exclusive-resources")
    nfd = parse_fleet(
        SMALL.replace("{period: 20s, notifyFile: true}", "{type: nfd-topology-updater, period: 60s}"),
        str(fleet_dir / "fleet.yaml"),
        fleet_dir,
    )
    assert (nfd.exporter.type, nfd.exporter.fingerprint_method, nfd.exporter.kubelet_state_dir) == (
        NFD, "all", True,
    )  # fmt: skip
    assert "exporter.notifyFile: only with type resource-topology-exporter" in _broken(
        fleet_dir, "{period: 20s, notifyFile: true}", "{type: nfd-topology-updater, notifyFile: true}"
    )
    assert "exporter.kubeletStateDir: only with type nfd-topology-updater" in _broken(
        fleet_dir, "notifyFile: true}", "kubeletStateDir: false}"
    )
    assert "exporter.type: 'rte': expected one of" in _broken(
        fleet_dir, "{period: 20s,", "{type: rte, period: 20s,"
    )
    assert "exporter: period 0 (no ticker) needs notifyFile" in _broken(
        fleet_dir, "{period: 20s, notifyFile: true}", "{period: 0s}"
    )
    assert "maxEventsPerSecond: must be at least 0" in _broken(
        fleet_dir, "notifyFile: true}", "notifyFile: true, maxEventsPerSecond: -1}"
    )


def test_versions_controllers_and_replicas(fleet_dir: Path) -> None:
    text = SMALL.replace("seed: 3\n", 'seed: 3\nschedulerVersion: "1.33"\n').replace(
        "- {name: exact, model: exact}", '- {name: exact, model: exact, schedulerVersion: "v1.32.4"}'
    )
    text += (
        "controllers:\n  replicaSet: {informerDelay: 2s, syncDelay: 500ms}\n"
        "  podGC: {terminatedPodThreshold: 10}\n"
    )
    configs = {
        c.scheduler: c for c in parse_fleet(text, str(fleet_dir / "fleet.yaml"), fleet_dir).configurations()
    }
    assert configs["default"].scheduler_version == "1.33" and configs["exact"].scheduler_version == "1.32"
    assert configs["nrt"].controllers == ControllersSpec(ReplicaSetSpec(2.0, 0.5), 10)
    assert parse_fleet(SMALL, "f.yaml", fleet_dir).configurations()[0].scheduler_version == "1.36"
    assert (
        "schedulerVersion: '1.31': supported kube-scheduler versions: 1.32, 1.33, 1.34, 1.35, 1.36"
        in _broken(fleet_dir, "seed: 3\n", "seed: 3\nschedulerVersion: '1.31'\n")
    )
    replicas = SMALL.replace("  - weight: 1\n", "  - replicas: 4\n")
    workload = parse_fleet(replicas, "f.yaml", fleet_dir).workload
    assert [t.replicas for t in workload.templates] == [None, 4] and workload.pods == 154
    assert "weight: not with replicas" in _broken(
        fleet_dir, "  - weight: 1\n", "  - weight: 1\n    replicas: 2\n"
    )
    assert "startupLatency.fixed: must be at least 0" in _broken(
        fleet_dir, "drain: 120s", "drain: 120s\n  startupLatency: {fixed: -1}"
    )
    latency = parse_fleet(
        SMALL.replace("drain: 120s", "drain: 120s\n  startupLatency: {fixed: 0s}"), "f", fleet_dir
    )
    assert latency.workload.startup_latency == Distribution("fixed", 0.0)
    assert parse_fleet(SMALL, "f", fleet_dir).workload.startup_latency == Distribution("uniform", 1.0, 3.0)


def test_a_templates_controller_kind(fleet_dir: Path) -> None:
    """ReplicaSet by default (today's replacement); Job with its backoffLimit; Pod: bare."""
    job = SMALL.replace("  - weight: 1\n", "  - weight: 1\n    controller: Job\n    backoffLimit: 2\n")
    templates = parse_fleet(job, "f.yaml", fleet_dir).workload.templates
    assert [(t.controller, t.backoff_limit) for t in templates] == [("ReplicaSet", 6), ("Job", 2)]
    for template, message in (
        (
            "  - weight: 1\n    controller: CronJob\n",
            "controller: 'CronJob': expected one of ReplicaSet, Job, Pod",
        ),
        ("  - weight: 1\n    backoffLimit: 1\n", "backoffLimit: only with controller: Job"),
        ("  - replicas: 1\n    controller: Pod\n", "replicas: only with controller: ReplicaSet"),
    ):
        assert message in _broken(fleet_dir, "  - weight: 1\n", template)


def test_binding_and_the_exact_setups_assumed_pods(fleet_dir: Path) -> None:
    text = (
        SMALL
        + "binding: {latency: {fixed: 50ms}, failureRate: 0.1, kubeletWatchLatency: {uniform: [0s, 1s]}}\n"
    )
    text = text.replace(
        "- {name: exact, model: exact}", "- {name: exact, model: exact, args: {countAssumedPods: false}}"
    )
    configs = {c.scheduler: c for c in parse_fleet(text, "f.yaml", fleet_dir).configurations()}
    binding = configs["default"].binding
    assert (binding.latency, binding.failure_rate) == (Distribution("fixed", 0.05), 0.1)
    assert binding.watch_latency == Distribution("uniform", 0.0, 1.0)
    assert not configs["exact"].count_assumed and configs["default"].count_assumed
    default = parse_fleet(SMALL, "f.yaml", fleet_dir).configurations()[0]
    assert default.binding.latency == default.binding.watch_latency == Distribution("fixed", 0.0)
    assert "binding.failureRate: expected a fraction in [0, 1), got 1" in _broken(
        fleet_dir, "exporter:", "binding: {failureRate: 1}\nexporter:"
    )
    assert "model default takes no args" in _broken(
        fleet_dir, "- {name: default, model: default}", "- {name: default, model: default, args: {a: 1}}"
    )
