"""The engine on real emulated nodes: the worked example's figures and the order the reserve-cache design
predicts, reproducibility to the byte, and results independent of the matrix's order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubeletemu.fleet.engine import FleetRun, run_configuration
from kubeletemu.fleet.spec import load_fleet, parse_fleet
from tests.fleet.conftest import EXAMPLE, SMALL
from tests.hostprobe.hostprobe_capture_support import sysfs_fixtures_dir

CAPTURE = sysfs_fixtures_dir() / "ocp-worker-2s20c2t-cascadelake.tar.gz"
SYNTHETIC = (
    "synthetic: {sockets: 2, coresPerSocket: 20, threadsPerCore: 2, nodesPerSocket: 1, memoryGiBPerNode: 93}"
)


def _summary(result: dict[str, Any]) -> tuple[Any, ...]:
    return (
        result["topology_affinity_errors"],
        result["other_admission_errors"],
        result["admissions"],
        result["scheduling_attempts"],
        result["pending_p99_s"],
        result["running_at_end"],
        result["never_scheduled"],
        result["resyncs"]["fingerprint_match"],
        result["resyncs"]["fingerprint_mismatch"],
    )


@pytest.fixture(scope="module")
def example_results() -> dict[str, dict[str, Any]]:
    return {
        c.scheduler + (f"/{c.cache}" if c.cache else ""): run_configuration(c)
        for c in load_fleet(EXAMPLE).configurations()
    }


def test_the_worked_example_in_the_order_the_design_predicts(
    example_results: dict[str, dict[str, Any]],
) -> None:
    errors = {name: r["topology_affinity_errors"] for name, r in example_results.items()}
    assert set(errors) == {"default", "topology-aware/passthrough", "topology-aware/overreserve", "exact"}
    # The NUMA-blind default errs most, the reserve cache trades errors for pending time, exact never errs.
    assert errors["default"] > errors["topology-aware/passthrough"] > errors["topology-aware/overreserve"]
    assert errors["exact"] == 0
    overreserve, passthrough = (
        example_results["topology-aware/overreserve"],
        example_results["topology-aware/passthrough"],
    )
    assert overreserve["pending_p99_s"] > passthrough["pending_p99_s"]
    assert (
        overreserve["resyncs"]["fingerprint_match"] > 0 and overreserve["resyncs"]["fingerprint_mismatch"] > 0
    )
    # Every workload pod ran: none left pending, and nobody re-created under exact.
    for result in example_results.values():
        assert result["never_scheduled"] == 0 and result["pods_total"] == 1200
    assert example_results["exact"]["admissions"] == 1200


def test_the_worked_example_figures_for_seed_7(example_results: dict[str, dict[str, Any]]) -> None:
    got = {name: _summary(r) for name, r in example_results.items()}
    assert got == {
        "default": (209, 0, 1409, 1524, 7.0, 388, 0, 0, 0),
        "topology-aware/passthrough": (11, 0, 1211, 1279, 3.0, 398, 0, 0, 0),
        "topology-aware/overreserve": (0, 0, 1200, 1303, 15.0, 367, 0, 1257, 166),
        "exact": (0, 0, 1200, 1295, 7.0, 371, 0, 0, 0),
    }
    default = example_results["default"]
    assert sum(default["errors_per_node"].values()) == 209
    assert len(default["numa_utilisation"]) == 100  # 50 nodes x 2 NUMA nodes
    assert all(0.0 <= row["cpu"] <= 1.0 and row["devices"] is None for row in default["numa_utilisation"])
    times = [t for t, _ in default["pending_over_time"]]
    assert times == sorted(times) and len(set(times)) == len(times)


@pytest.mark.skipif(not CAPTURE.is_file(), reason=f"the OpenShift capture is not at {CAPTURE}")
def test_the_worked_example_on_the_capture_itself(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    assert SYNTHETIC in text
    text = text.replace(SYNTHETIC, f"capture: {{archive: {CAPTURE}}}")
    results = {c.name.split("/")[0] + (f"/{c.cache}" if c.cache else ""): run_configuration(c)
               for c in parse_fleet(text, "capture-fleet.yaml", tmp_path).configurations()}  # fmt: skip
    errors = {name: r["topology_affinity_errors"] for name, r in results.items()}
    assert errors["default"] > errors["topology-aware/passthrough"] > errors["topology-aware/overreserve"]
    assert errors["exact"] == 0


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


def test_the_kept_cache_answers_equal_asking_the_cache_every_time(fleet_dir: Path) -> None:
    config = next(
        c for c in load_fleet(fleet_dir / "fleet.yaml").configurations()
        if c.cache == "overreserve" and c.exporter is not None and c.exporter.period_s == 20
    )  # fmt: skip
    kept = FleetRun(config).run()
    asked = FleetRun(config, memo=False).run()
    assert kept == asked
    assert kept["resyncs"]["fingerprint_match"] > 0


def test_progress_is_reported_at_most_every_percent(fleet_dir: Path) -> None:
    config = load_fleet(fleet_dir / "fleet.yaml").configurations()[0]
    calls: list[tuple[int, int]] = []
    run_configuration(config, lambda done, total: calls.append((done, total)))
    assert calls[-1] == (150, 150)
    assert [d for d, _ in calls[:-1]] == sorted(d for d, _ in calls[:-1])
    assert len(calls) <= 102
