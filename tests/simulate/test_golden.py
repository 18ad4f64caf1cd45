"""Golden test of ``simulate`` on a real capture: hwloc-amd-4s-8numa (4 sockets, 8 NUMA nodes × 8 CPUs,
distances 10/16/22, node 5 with half the memory), static CPU and memory managers, two NICs (NUMA 5, 6).

The matrix is 3 policies × 2 scopes × 5 option sets: the default, prefer-closest, both strategies (one
with weights) and the first draft, which the kubelet refuses with anything but single-numa-node (those
cells report the error and no metrics). The table and the JSON (without per-admission events, which
``tests/kep6007`` checks) are compared with ``golden/``; set ``KUBELETEMU_UPDATE_GOLDEN=1`` to rewrite them
after an intended change, then review the diff. The chart is not a golden file (its pixels belong to the
installed matplotlib and FreeType): it must be the chart of the golden JSON, byte for byte.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kubeletemu.config import load_config
from kubeletemu.manifest import read_pods
from kubeletemu.simulate import (
    Matrix,
    PodStep,
    RemoveStep,
    SimulationReport,
    TopologySource,
    render_json,
    render_table,
    run_simulation,
)
from tests.conftest import CaptureStore
from tests.hostprobe.hostprobe_capture_support import capture_archive

pytestmark = pytest.mark.slow

CAPTURE = "hwloc-amd-4s-8numa"
DATA = Path(__file__).parent / "data"
GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("KUBELETEMU_UPDATE_GOLDEN") == "1"
MATRIX = Matrix(
    policies=("best-effort", "restricted", "single-numa-node"),
    scopes=("container", "pod"),
    options=(
        {},
        {"prefer-closest-numa-nodes": "true"},
        {"numa-allocation-strategy": "most-allocated"},
        {"numa-allocation-strategy": "least-allocated", "numa-score-weights": "cpu=3,memory=1"},
        {"prefer-most-allocated-numa-node": "true"},
    ),
)


def source(captures: CaptureStore) -> TopologySource:
    capture = captures.get(CAPTURE)
    return TopologySource.capture_dirs(str(capture.sys), str(capture.proc), name=CAPTURE)


@pytest.fixture(scope="module")
def report(captures: CaptureStore) -> SimulationReport:
    nic, web, db, big, burst = read_pods(str(DATA / "amd-8numa-pods.yaml"))
    stream = [
        PodStep(nic, 2),
        PodStep(web, 10),
        RemoveStep("web", 3),
        PodStep(db, 3),
        PodStep(big, 2),
        PodStep(burst, 2),
    ]
    config = load_config([str(DATA / "amd-8numa-kubelet.yaml")])
    topology = source(captures)
    return run_simulation(topology.machine(), config, MATRIX, stream, topology.describe())


def compare(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual)
    assert actual == path.read_text(), f"{name} differs from the golden file (KUBELETEMU_UPDATE_GOLDEN=1)"


def test_table(report: SimulationReport) -> None:
    compare(f"{CAPTURE}.table.txt", render_table(report))


def test_json(report: SimulationReport) -> None:
    compare(f"{CAPTURE}.json", render_json(report, events=False))


def test_chart_is_the_golden_reports(report: SimulationReport, tmp_path: Path) -> None:
    """A fresh run's chart and the golden JSON's are the same bytes: the chart depends on the report only
    (30 rows, four of them 'kubelet would not start'), and its size follows the row count."""
    from PIL import Image

    from kubeletemu.plot import simulation_chart
    from kubeletemu.plot.simulation import chart_size

    fresh = simulation_chart(json.loads(render_json(report, events=False)), tmp_path / "fresh.png")
    golden = simulation_chart(json.loads((GOLDEN / f"{CAPTURE}.json").read_text()), tmp_path / "golden.png")
    assert fresh.read_bytes() == golden.read_bytes()
    with Image.open(fresh) as image:
        assert (image.format, image.size) == ("PNG", chart_size(30)) == ("PNG", (1400, 930))


def test_facts_worked_out_by_hand(report: SimulationReport) -> None:
    """What the golden files must say whatever else changes."""
    rows = {r.configuration.label: r for r in report.results}
    assert len(rows) == 30
    # The first draft only starts with single-numa-node.
    refused = [label for label, r in rows.items() if r.error is not None]
    assert refused == [
        f"{policy}/{scope}/prefer-most-allocated-numa-node=true"
        for policy in ("best-effort", "restricted")
        for scope in ("container", "pod")
    ]
    for label, result in rows.items():
        if result.error is not None:
            continue
        # 2 nic-app + 10 web + 3 db + 2 big + 2 burst; web-1..3 removed.
        assert result.attempts == 19, label
        # big (10 CPUs, 20Gi) is the first pod no configuration can always place: attempt 2 + 10 + 3 = 15.
        assert result.first_rejection in (15, 16), label
        assert result.first_rejection_pod in ("hpc/big-1", "hpc/big-2"), label
        # single-numa-node can never place 10 CPUs on 8-CPU nodes: both bigs are TopologyAffinityErrors.
        if label.startswith("single-numa-node/"):
            assert (result.admitted, result.topology_affinity_errors, result.spread_containers) == (17, 2, 0)
        # No score without a strategy.
        if "allocat" not in label:
            assert result.score_decisions == 0, label
        assert result.running_pods == result.admitted - 3, label
    # The report is JSON-clean and self-describing.
    parsed = json.loads(render_json(report, events=False))
    assert parsed["topology"] == {"kind": "capture", "name": CAPTURE}
    assert [c["label"] for c in parsed["configurations"]] == list(rows)


def test_capture_archive_is_the_same_machine(captures: CaptureStore) -> None:
    archive = capture_archive(CAPTURE)
    from_archive = TopologySource.capture_archive(str(archive))
    assert from_archive.describe() == {"kind": "capture", "name": CAPTURE}
    machine = from_archive.machine()
    expected = source(captures).machine()
    assert machine.numa_topology == expected.numa_topology
    assert machine.memory == expected.memory
    assert machine.cpu_topology.cpu_details == expected.cpu_topology.cpu_details
