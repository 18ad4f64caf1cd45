"""``kubeletemu fleet`` as a user runs it: a subprocess per call."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fleet.conftest import SMALL

pytestmark = pytest.mark.slow  # starts processes or runs for seconds: out of the quick subset (README)

KUBELETEMU = [sys.executable, "-m", "kubeletemu.cli"]


def _fleet(fleet_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KUBELETEMU, "fleet", "-f", str(fleet_dir / "fleet.yaml"), *args],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip


def _one_scheduler(fleet_dir: Path) -> None:
    text = SMALL.replace("seeds: [3, 4]", "seeds: [3]").replace(
        "exporterPeriods: [20s, 5s]", "exporterPeriods: [5s]"
    )
    (fleet_dir / "fleet.yaml").write_text(
        text.replace("schedulers: [default, nrt, exact]", "schedulers: [nrt, default]")
    )


@pytest.mark.slow
def test_json_table_and_csv_agree(fleet_dir: Path) -> None:
    _one_scheduler(fleet_dir)
    out = _fleet(fleet_dir, "-o", "json", "--workers", "2")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("\n") == 1  # one object, one line: every -o json is JSON Lines
    results = json.loads(out.stdout)["configurations"]
    names = [r["name"] for r in results]
    assert names == [
        "nrt/passthrough/exporter=5s/seed=3",
        "nrt/overreserve/resync=5s/exporter=5s/seed=3",
        "default/seed=3",
    ]
    for result in results:
        assert isinstance(result["largest_single_numa_free"]["memory"], int)
        assert result["pods_total"] == 150 and result["kubelet_versions"]
    table = _fleet(fleet_dir, "--workers", "1")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert (
        lines[0]
        == "fleet: 3 configuration(s), 6 node(s), 150 workload pod(s); kube-scheduler 1.36, kubelet master"
    )
    assert lines[1].startswith("CONFIGURATION") and "TOPOLOGYAFFINITYERROR" in lines[1]
    for result, line in zip(results, lines[2:], strict=True):
        assert line.startswith(result["name"])
        assert f"{result['topology_affinity_errors']} (" in line
    rows = list(csv.DictReader(io.StringIO(_fleet(fleet_dir, "-o", "csv").stdout)))
    assert [r["name"] for r in rows] == names
    assert [int(r["topology_affinity_errors"]) for r in rows] == [
        r["topology_affinity_errors"] for r in results
    ]


def test_bad_input_is_one_line_and_exit_2(fleet_dir: Path) -> None:
    (fleet_dir / "fleet.yaml").write_text(SMALL.replace("rate: 2", "rate: -1"))
    out = _fleet(fleet_dir)
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.strip().count("\n") == 0
    assert f"{fleet_dir / 'fleet.yaml'}: workload.rate: must be positive, got -1" in out.stderr


def test_a_missing_file_is_exit_2(tmp_path: Path) -> None:
    out = subprocess.run(
        [*KUBELETEMU, "fleet", "-f", str(tmp_path / "nope.yaml")], capture_output=True, text=True
    )
    assert out.returncode == 2 and "cannot read" in out.stderr
