"""``kubeletemu fleet`` as a user runs it: a subprocess per call."""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

from kubeletemu.fleet.report import interval_text
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
    table = _fleet(fleet_dir, "-o", "wide", "--workers", "1")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[:2] == [
        "fleet: 3 setups × 1 seed = 3 runs; 6 node(s), 150 workload pod(s) a run; kube-scheduler 1.36, "
        "kubelet master",
        "every setup that has them: exporter=5s, resync=5s (not repeated in its name)",
    ]
    per_run = lines[lines.index("per run (setup and seed):") + 1 :]
    assert per_run[0].split()[:3] == ["SETUP", "SEED", "TOPOLOGYAFFINITYERROR"]
    for result, line, setup in zip(
        results, per_run[1:], ("nrt/passthrough", "nrt/overreserve", "default"), strict=True
    ):
        assert line.split()[:3] == [setup, "3", str(result["topology_affinity_errors"])]
    rows = list(csv.DictReader(io.StringIO(_fleet(fleet_dir, "-o", "csv").stdout)))
    assert [r["name"] for r in rows] == names
    assert [int(r["topology_affinity_errors"]) for r in rows] == [
        r["topology_affinity_errors"] for r in results
    ]


def _two_setups_two_seeds(fleet_dir: Path) -> None:
    text = SMALL.replace("schedulers: [default, nrt, exact]", "schedulers: [default, nrt]")
    text = text.replace("caches: [passthrough, overreserve]", "caches: [overreserve]")
    (fleet_dir / "fleet.yaml").write_text(text.replace("exporterPeriods: [20s, 5s]", "exporterPeriods: [5s]"))


@pytest.mark.slow
def test_the_table_is_a_row_per_setup_and_wide_adds_the_runs(fleet_dir: Path) -> None:
    """Issue 41: the default table is the README's, a row per setup with its mean [95 % interval] over
    the seeds and the pods never Running, at most 120 columns; the rows per run (setup and seed) only
    under ``-o wide``; runs counted as setups × seeds. ``-o json`` keeps every run and adds the summary's
    ``never_running``."""
    _two_setups_two_seeds(fleet_dir)
    document = json.loads(_fleet(fleet_dir, "-o", "json", "--workers", "2").stdout)
    runs, summaries = document["configurations"], document["summaries"]
    assert [r["name"] for r in runs] == [
        "default/seed=3",
        "default/seed=4",
        "nrt/overreserve/resync=5s/exporter=5s/seed=3",
        "nrt/overreserve/resync=5s/exporter=5s/seed=4",
    ]
    for summary, pair in zip(summaries, (runs[:2], runs[2:]), strict=True):
        assert summary["never_running"]["mean"] == pytest.approx(sum(r["never_running"] for r in pair) / 2)
    out = _fleet(fleet_dir, "--workers", "2")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("fleet: 2 setups × 2 seeds = 4 runs; 6 node(s), 150 workload pod(s) a run;")
    assert lines[1] == "every setup that has them: resync=5s, exporter=5s (not repeated in its name)"
    header = next(line for line in lines if line.startswith("SETUP"))
    assert re.split(r"\s{2,}", header) == [
        "SETUP", "TOPOLOGYAFFINITYERROR", "PENDING P99", "TO RUNNING P99", "NEVER RUNNING",
    ]  # fmt: skip
    at = lines.index(header)
    for summary, line, setup in zip(
        summaries, lines[at + 1 : at + 3], ("default", "nrt/overreserve"), strict=True
    ):
        assert re.split(r"\s{2,}", line) == [
            setup,
            interval_text(summary, "topology_affinity_errors"),
            interval_text(summary, "pending_p99_s"),
            interval_text(summary, "time_to_running_p99_s"),
            f"{summary['never_running']['mean']:.1f}".removesuffix(".0"),
        ]
    assert "seed=" not in out.stdout and "per run" not in out.stdout
    assert max(len(line) for line in lines) <= 120
    wide = _fleet(fleet_dir, "-o", "wide", "--workers", "2")
    assert wide.stdout.startswith(out.stdout.rstrip("\n") + "\n\nper run (setup and seed):\n")
    per_run = [line.split()[:2] for line in wide.stdout.splitlines()[len(lines) + 3 :]]
    assert per_run == [["default", "3"], ["default", "4"], ["nrt/overreserve", "3"], ["nrt/overreserve", "4"]]


@pytest.mark.slow
def test_the_progress_bar_counts_runs(fleet_dir: Path) -> None:
    """On a terminal the overall bar counts runs, and names them as setups × seeds."""
    _two_setups_two_seeds(fleet_dir)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a new pty is 0 x 0
    drawn = bytearray()

    def drain() -> None:  # read as it is drawn: a full terminal buffer would stop the command
        while chunk := _read(master):
            drawn.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        process = subprocess.run(
            [*KUBELETEMU, "fleet", "-f", str(fleet_dir / "fleet.yaml"), "--workers", "2"],
            stdout=subprocess.PIPE, stderr=slave, check=False, timeout=600,
        )  # fmt: skip
    finally:
        os.close(slave)
        reader.join(timeout=30)
        os.close(master)
    screen = drawn.decode(errors="replace")
    assert process.returncode == 0
    assert "runs (2 setups × 2 seeds): 100%" in screen and "4/4" in screen
    assert "configurations" not in screen


def _read(fd: int) -> bytes:
    """What the terminal holds, then b"" (Linux raises EIO once the other end is closed and drained)."""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


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
