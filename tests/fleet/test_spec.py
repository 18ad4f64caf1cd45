"""The Fleet file: matrix expansion, picklable configurations, and bad input refused before any run."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from kubeletemu.fleet.spec import FleetError, load_fleet, parse_fleet
from tests.fleet.conftest import SMALL


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
