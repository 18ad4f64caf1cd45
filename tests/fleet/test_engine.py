"""The engine on real emulated nodes: the worked example (seed 1) and what its configurations show as the
shipped code predicts, reproducibility to the byte, and results independent of the matrix's order."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from kubeletemu.fleet.engine import FleetRun, run_configuration
from kubeletemu.fleet.spec import load_fleet, parse_fleet
from kubeletemu.pod import Pod
from kubeletemu.scheduler.nrtcache.overreserve import OverReserve
from tests.fleet.conftest import EXAMPLE, SMALL
from tests.hostprobe.hostprobe_capture_support import capture_archive

pytestmark = pytest.mark.slow

CAPTURE = capture_archive("ocp-worker-2s20c2t-cascadelake")
SYNTHETIC = (
    "synthetic: {sockets: 2, coresPerSocket: 20, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 93}"
)
ONE_SEED = ("seeds: [1, 2, 3, 4, 5]", "seeds: [1]")


def _summary(result: dict[str, Any]) -> tuple[Any, ...]:
    return (
        result["topology_affinity_errors"],
        result["admissions"],
        result["scheduling_attempts"],
        result["pending_p99_s"],
        result["time_to_running_p99_s"],
        result["never_running"],
        result["resyncs"]["fingerprint_match"],
        result["resyncs"]["fingerprint_mismatch"],
        result["stale_flushes"],
    )


def _seed_one(text: str, base: Path) -> dict[str, dict[str, Any]]:
    assert ONE_SEED[0] in text
    configs = parse_fleet(text.replace(*ONE_SEED), str(base / "fleet.yaml"), base).configurations()
    return {c.scheduler: run_configuration(c) for c in configs}


@pytest.fixture(scope="module")
def example_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return _seed_one(EXAMPLE.read_text(), tmp_path_factory.mktemp("example"))


def _check_the_design(results: dict[str, dict[str, Any]]) -> None:
    """What the shipped code predicts, whatever the seed: the exact setups never err; every node the
    reserve cache's Dedicated informer shows an ended pod on never matches a 1.36 kubelet's list again, so
    that cache stops flushing and pods wait until the run ends; over the Shared informer it flushes, and
    some flushes are on NRTs older than a pod's admission (the start-up race)."""
    assert set(results) == {"default", "topology-aware", "reserve", "reserve-shared", "exact", "exact-numa"}
    assert (
        results["exact"]["topology_affinity_errors"] == results["exact-numa"]["topology_affinity_errors"] == 0
    )
    default, passthrough = results["default"], results["topology-aware"]
    assert default["topology_affinity_errors"] > passthrough["topology_affinity_errors"] > 0
    assert default["replacements"] == default["failed_at_end"] == default["topology_affinity_errors"]
    dedicated, shared = results["reserve"], results["reserve-shared"]
    assert len(dedicated["fingerprint_mismatch_at_end"]) == dedicated["nodes"]
    assert dedicated["never_running"] > 0 and dedicated["never_scheduled"] > 0
    assert shared["never_running"] == 0 and shared["fingerprint_mismatch_at_end"] == []
    assert shared["resyncs"]["fingerprint_match"] > dedicated["resyncs"]["fingerprint_match"]
    assert shared["stale_flushes"] > 0 and shared["reservations_lost"] > 0
    for name, result in results.items():
        assert result["pods_total"] == 600 and result["kubelet_versions"] == ["1.36"]
        expected = "1.35" if name in ("topology-aware", "reserve", "reserve-shared") else "1.36"
        assert result["scheduler_version"] == expected
        if name != "reserve":
            assert result["never_running"] == 0


def test_the_worked_example_as_the_shipped_code_predicts(example_results: dict[str, dict[str, Any]]) -> None:
    _check_the_design(example_results)


def test_the_worked_example_figures_for_seed_1(example_results: dict[str, dict[str, Any]]) -> None:
    got = {name: _summary(r) for name, r in example_results.items()}
    assert got == FIGURES
    default = example_results["default"]
    assert sum(default["errors_per_node"].values()) == default["topology_affinity_errors"]
    assert len(default["numa_utilisation"]) == 50  # 25 nodes x 2 NUMA nodes
    assert all(0.0 <= row["cpu"] <= 1.0 and row["devices"] is None for row in default["numa_utilisation"])
    times = [t for t, _ in default["pending_over_time"]]
    assert times == sorted(times) and len(set(times)) == len(times)
    templates = default["templates"]
    assert set(templates) == {"small", "medium", "large"}
    assert sum(t["pods"] for t in templates.values()) == default["pods_created"]
    assert (
        sum(t["topology_affinity_errors"] for t in templates.values()) == default["topology_affinity_errors"]
    )


@pytest.mark.skipif(not CAPTURE.is_file(), reason=f"the OpenShift capture is not at {CAPTURE}")
def test_the_worked_example_on_the_capture_itself(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    assert SYNTHETIC in text
    _check_the_design(_seed_one(text.replace(SYNTHETIC, f"capture: {{archive: {CAPTURE}}}"), tmp_path))


# Seed 1 of the worked example, as the README's figures were made (kube-scheduler 1.36/1.35, kubelet 1.36):
# TopologyAffinityErrors, admissions, attempts, pending p99, time to Running p99, slots never Running,
# resyncs matching/mismatching, stale flushes (a percentile decided by waits that never ended: None).
FIGURES: dict[str, tuple[Any, ...]] = {
    "default": (294, 894, 895, 0.0, 8.339572, 0, 0, 0, 0),
    "topology-aware": (26, 626, 861, 3.185849, 5.503673, 0, 0, 0, 0),
    "reserve": (0, 193, 43750, None, None, 407, 24, 1742, 2),  # 407 never ran: the p99s are censored
    "reserve-shared": (3, 603, 743, 1.072341, 3.358299, 0, 529, 25, 59),
    "exact": (0, 600, 679, 3.660045, 5.661849, 0, 0, 0, 0),
    "exact-numa": (0, 600, 600, 0.0, 2.989816, 0, 0, 0, 0),
}


def test_same_seed_same_json_to_the_byte(fleet_dir: Path) -> None:
    config = next(
        c for c in load_fleet(fleet_dir / "fleet.yaml").configurations() if c.cache == "overreserve"
    )
    first = json.dumps(run_configuration(config))
    second = json.dumps(run_configuration(config))
    assert first == second
    other_seed = next(
        c for c in load_fleet(fleet_dir / "fleet.yaml").configurations()
        if c.cache == "overreserve" and c.seed != config.seed and c.exporter == config.exporter
    )  # fmt: skip
    assert json.dumps(run_configuration(other_seed)) != first


def test_a_permuted_matrix_gives_the_same_per_configuration_results(fleet_dir: Path) -> None:
    permuted = (
        SMALL.replace("schedulers: [default, nrt, exact]", "schedulers: [exact, nrt]")
        .replace("caches: [passthrough, overreserve]", "caches: [overreserve, passthrough]")
        .replace("exporterPeriods: [20s, 5s]", "exporterPeriods: [5s, 20s]")
        .replace("seeds: [3, 4]", "seeds: [4, 3]")
    )
    forward = load_fleet(fleet_dir / "fleet.yaml").configurations()
    backward = parse_fleet(permuted, str(fleet_dir / "fleet.yaml"), fleet_dir).configurations()
    assert [c.name for c in backward][:2] == ["exact/seed=4", "exact/seed=3"]
    wanted = {
        "exact/seed=3",
        "nrt/overreserve/resync=5s/exporter=5s/seed=4",
        "nrt/passthrough/exporter=20s/seed=3",
    }
    ahead = {c.name: json.dumps(run_configuration(c)) for c in forward if c.name in wanted}
    behind = {c.name: json.dumps(run_configuration(c)) for c in backward if c.name in wanted}
    assert ahead == behind and len(ahead) == 3


@pytest.mark.parametrize("cache", ["overreserve", "passthrough"])
def test_the_kept_cache_answers_equal_asking_the_cache_every_time(fleet_dir: Path, cache: str) -> None:
    config = next(
        c for c in load_fleet(fleet_dir / "fleet.yaml").configurations()
        if c.cache == cache and c.exporter is not None and c.exporter.period_s == 20
    )  # fmt: skip
    kept_run, asked_run = FleetRun(config), FleetRun(config, memo=False)
    kept, asked = kept_run.run(), asked_run.run()
    assert kept == asked
    assert cache != "overreserve" or kept["resyncs"]["fingerprint_match"] > 0
    # Most cycles of this run find no node, and are answered from the kept one while nothing changed.
    assert kept_run.scheduler.cycles_kept > kept["scheduling_attempts"] // 2
    assert asked_run.scheduler.cycles_kept == 0
    # The cache was told of every rejecting node as often (a kept cycle replays NodeMaybeOverReserved).
    if isinstance(kept_run.cache, OverReserve):
        assert isinstance(asked_run.cache, OverReserve)
        told = kept_run.cache.nodes_maybe_overreserved
        assert told == asked_run.cache.nodes_maybe_overreserved and told


@pytest.mark.parametrize(
    ("cache", "version"), [("overreserve", "1.35"), ("overreserve", "1.32"), ("passthrough", "1.36")]
)
def test_kept_node_answers_equal_checking_every_node(fleet_dir: Path, cache: str, version: str) -> None:
    """A cycle taking the nodes unchanged since its shape's last cycle from that cycle's answers gives what
    checking every node gives: the same results, and the reserve cache told NodeMaybeOverReserved of the
    same nodes, as often and first in the same order (the order its resyncs go in)."""
    config = next(
        c for c in load_fleet(fleet_dir / "fleet.yaml").configurations()
        if c.cache == cache and c.exporter is not None and c.exporter.period_s == 20
    )  # fmt: skip
    config = dataclasses.replace(config, scheduler_version=version)
    kept_run, checked_run = FleetRun(config), FleetRun(config)
    checked_run.scheduler._reuses_nodes = False
    kept_marks, checked_marks = _marks_told(kept_run), _marks_told(checked_run)
    kept, checked = kept_run.run(), checked_run.run()
    assert json.dumps(kept) == json.dumps(checked)
    assert checked_run.scheduler.nodes_answered_kept == 0
    # Most nodes of a real cycle are the same as at the shape's last one.
    real_cycles = kept["scheduling_attempts"] - kept_run.scheduler.cycles_kept
    assert kept_run.scheduler.nodes_answered_kept > real_cycles * kept["nodes"] // 2
    # Every NodeMaybeOverReserved, in the order given (a whole kept cycle's replay is one call).
    assert kept_marks == checked_marks
    assert (cache == "overreserve") == bool(kept_marks)


def _marks_told(run: FleetRun) -> list[tuple[str, ...]]:
    """The names the run's reserve cache is told NodeMaybeOverReserved of, call by call (the cache's own
    methods, logged on the way in; a kept cycle's replay as one call, however many replays a call gives;
    names given in turn one each)."""
    told: list[tuple[str, ...]] = []
    cache = run.cache
    if not isinstance(cache, OverReserve):
        return told
    one, each, many = (
        cache.node_maybe_over_reserved,
        cache.each_node_maybe_over_reserved,
        cache.nodes_maybe_over_reserved,
    )

    def node_maybe_over_reserved(node_name: str, pod: Pod) -> None:
        told.append((node_name,))
        one(node_name, pod)

    def each_node_maybe_over_reserved(node_names: Iterable[str], pod: Pod) -> None:
        node_names = list(node_names)
        told.extend((name,) for name in node_names)  # as one call per name
        each(node_names, pod)

    def nodes_maybe_over_reserved(node_names: tuple[str, ...], pod: Pod, times: int = 1) -> None:
        told.extend([node_names] * times)  # as one call per replay
        many(node_names, pod, times)

    cache.node_maybe_over_reserved = node_maybe_over_reserved  # type: ignore[method-assign]
    cache.each_node_maybe_over_reserved = each_node_maybe_over_reserved  # type: ignore[method-assign]
    cache.nodes_maybe_over_reserved = nodes_maybe_over_reserved  # type: ignore[method-assign]
    return told


class OneByOne(FleetRun):
    """The engine popping and failing each pod on its own, kept cycles answered inside ``schedule``."""

    def _kept_failures(self) -> None:
        return None


@pytest.mark.parametrize("version", ["1.32", "1.35", "1.36"])
def test_kept_failures_at_once_equal_one_by_one(fleet_dir: Path, version: str) -> None:
    config = next(
        c for c in load_fleet(fleet_dir / "fleet.yaml").configurations()
        if c.cache == "overreserve" and c.exporter is not None and c.exporter.period_s == 20
    )  # fmt: skip
    config = dataclasses.replace(config, scheduler_version=version)
    at_once_run, one_by_one_run = FleetRun(config), OneByOne(config)
    at_once_marks, one_by_one_marks = _marks_told(at_once_run), _marks_told(one_by_one_run)
    at_once, one_by_one = at_once_run.run(), one_by_one_run.run()
    assert json.dumps(at_once) == json.dumps(one_by_one)
    assert at_once_run.scheduler.cycles_kept == one_by_one_run.scheduler.cycles_kept
    assert at_once_run.scheduler.cycles_kept > at_once["scheduling_attempts"] // 2
    # The replays a burst of kept failures gives at its end, a shape's all at once: as many of each, and
    # the cache's marks (nodes, their order, counts) as giving each in turn left them.
    assert Counter(at_once_marks) == Counter(one_by_one_marks) and at_once_marks
    assert isinstance(at_once_run.cache, OverReserve) and isinstance(one_by_one_run.cache, OverReserve)
    assert list(at_once_run.cache.nodes_maybe_overreserved.items()) == list(
        one_by_one_run.cache.nodes_maybe_overreserved.items()
    )


def test_progress_is_reported_at_most_every_percent(fleet_dir: Path) -> None:
    config = load_fleet(fleet_dir / "fleet.yaml").configurations()[0]
    calls: list[tuple[int, int]] = []
    run_configuration(config, lambda done, total: calls.append((done, total)))
    assert calls[-1] == (150, 150)
    assert [d for d, _ in calls[:-1]] == sorted(d for d, _ in calls[:-1])
    assert len(calls) <= 102
