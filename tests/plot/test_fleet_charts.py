"""``kubeletemu.plot.fleet_charts``: three PNGs of the sizes promised, the same bytes for the same results,
bytes that follow the data they draw, fixed metadata, and errors that name the result and field."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pytest
from PIL import Image

from kubeletemu.plot import PlotInputError, fleet_charts
from kubeletemu.plot.fleet import heatmap_size, pending_size

REPO = Path(__file__).resolve().parents[2]
# viridis at 1.0, the colour of a full NUMA node.
FULL = tuple(int(v) for v in matplotlib.colormaps["viridis"](1.0, bytes=True)[:3])


def result(name: str, scheduler: str, tae: int, p99: float, cpu: float) -> dict[str, Any]:
    """A configuration's result as the engine returns it (the fields the charts read, and some others)."""
    return {
        "name": name,
        "scheduler": scheduler,
        "cache": None,
        "seed": 1,
        "pods_total": 6,
        "topology_affinity_errors": tae,
        "pending_p50_s": p99 / 2,
        "pending_p99_s": p99,
        "pending_max_s": p99 + 1,
        "time_to_running_p99_s": p99 + 2,
        "pending_over_time": [[0.0, 0], [1.5, 3], [4.0, 5], [9.0, 2], [20.0, 0]],
        "numa_utilisation": [
            {"node": "node-a", "numa": 0, "cpu": cpu, "memory": 0.5, "devices": None},
            {"node": "node-a", "numa": 1, "cpu": 0.25, "memory": 0.125, "devices": None},
            {"node": "node-b", "numa": 0, "cpu": 0.5, "memory": 0.75, "devices": 1.0},
            {"node": "node-b", "numa": 1, "cpu": 0.0, "memory": None, "devices": 0.0},
        ],
    }


RESULTS = [
    result("default", "default-scheduler", 7, 2.5, 0.5),
    result("nrt/overreserve", "topology-aware", 1, 12.0, 0.75),
    result("koord", "koordinator", 0, 30.0, 0.5),
]


def draw(results: list[dict[str, Any]], outdir: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in fleet_charts(results, outdir)}


def full_pixels(png: Path) -> int:
    with Image.open(png) as image:
        pixels = np.asarray(image.convert("RGB"))
    return int(np.all(pixels == FULL, axis=-1).sum())


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The charts of RESULTS, drawn once for the module (a draw takes seconds: matplotlib renders four
    figures); tests that compare against them draw their own second set."""
    return fleet_charts(RESULTS, tmp_path_factory.mktemp("charts") / "charts")  # created


@pytest.mark.slow
def test_four_pngs_of_the_promised_sizes(charts: list[Path]) -> None:
    paths = charts
    assert [p.name for p in paths] == [
        "tae-vs-time-to-running.png",
        "tae-vs-pending.png",
        "pending-over-time.png",
        "numa-utilisation.png",
    ]
    sizes = []
    for path in paths:
        with Image.open(path) as image:
            image.verify()  # a whole, valid PNG (chunk CRCs included)
        with Image.open(path) as image:
            assert image.format == "PNG"
            # The only text chunk: no matplotlib version, no date.
            assert image.text == {"Software": "kubeletemu"}  # type: ignore[attr-defined]
            sizes.append(image.size)
    assert sizes == [(1200, 700), (1200, 700), pending_size(3), heatmap_size(nodes=2, panels=3)]
    assert heatmap_size(nodes=2, panels=3) == (1010, 430)
    # Six setups a row, a row of panels more per six setups.
    assert (heatmap_size(nodes=2, panels=6), heatmap_size(nodes=2, panels=7)) == ((1790, 430), (1790, 730))
    # Small multiples: three panels a row, a row more per three configurations.
    assert (pending_size(3), pending_size(4)) == ((1140, 300), (1140, 530))


@pytest.mark.slow
def test_same_results_same_bytes(charts: list[Path], tmp_path: Path) -> None:
    assert {p.name: p.read_bytes() for p in charts} == draw(copy.deepcopy(RESULTS), tmp_path / "two")


@pytest.mark.slow
def test_bytes_follow_the_data(charts: list[Path], tmp_path: Path) -> None:
    """A different TopologyAffinityError count redraws the scatters only; a full NUMA node shows as
    viridis' yellow in the heatmap (beyond the colour bar's own)."""
    before = {p.name: p.read_bytes() for p in charts}
    changed = copy.deepcopy(RESULTS)
    changed[0]["topology_affinity_errors"] = 3
    after = draw(changed, tmp_path / "after")
    assert before["tae-vs-pending.png"] != after["tae-vs-pending.png"]
    assert before["tae-vs-time-to-running.png"] != after["tae-vs-time-to-running.png"]
    assert before["pending-over-time.png"] == after["pending-over-time.png"]
    assert before["numa-utilisation.png"] == after["numa-utilisation.png"]

    full = copy.deepcopy(RESULTS)
    full[0]["numa_utilisation"][0]["cpu"] = 1.0
    fleet_charts(full, tmp_path / "full")
    # One cell of a 2x2 panel: thousands of pixels.
    extra = full_pixels(tmp_path / "full" / "numa-utilisation.png") - full_pixels(
        charts[0].parent / "numa-utilisation.png"
    )
    assert extra > 2000


@pytest.mark.slow
def test_many_configurations(tmp_path: Path) -> None:
    """Twenty setups: the heatmap shows every one, six a row."""
    many = [
        result(f"seed-{i}", "topology-aware" if i % 2 else "default-scheduler", i, 1.0 + i, i / 20)
        for i in range(20)
    ]
    paths = fleet_charts(many, tmp_path)
    with Image.open(paths[3]) as image:
        assert image.size == heatmap_size(nodes=2, panels=20)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("pending_p99_s"), "fleet result 1 (nrt/overreserve): missing field 'pending_p99_s'"),
        (
            lambda r: r.update(topology_affinity_errors="7"),
            "fleet result 1 (nrt/overreserve): topology_affinity_errors: expected a number, got '7'",
        ),
        (
            lambda r: r["pending_over_time"].append([3.0]),
            "fleet result 1 (nrt/overreserve): pending_over_time[5]: expected [time, pending], got [3.0]",
        ),
        (
            lambda r: r["numa_utilisation"][2].pop("memory"),
            "fleet result 1 (nrt/overreserve): numa_utilisation[2]: missing field 'memory'",
        ),
        (
            lambda r: r["numa_utilisation"][1].update(numa="1"),
            "fleet result 1 (nrt/overreserve): numa_utilisation[1]: numa: expected an integer NUMA id, "
            "got '1'",
        ),
    ],
    ids=["missing", "not-a-number", "bad-point", "missing-cell-field", "numa-id"],
)
def test_bad_results_name_the_field(tmp_path: Path, change: Any, message: str) -> None:
    bad = copy.deepcopy(RESULTS)
    change(bad[1])
    with pytest.raises(PlotInputError) as caught:
        fleet_charts(bad, tmp_path)
    assert str(caught.value) == message
    assert not list(tmp_path.iterdir())  # checked before anything is drawn


def test_no_results(tmp_path: Path) -> None:
    with pytest.raises(PlotInputError, match="no configuration to chart"):
        fleet_charts([], tmp_path)


def test_matplotlib_stays_out_of_the_daemon_and_the_cli() -> None:
    """matplotlib is the optional extra: importing the daemon, the CLI or ``kubeletemu.plot`` itself
    loads none of it (a node's daemon never draws)."""
    code = (
        "import sys, kubeletemu.plot, kubeletemu.cli, kubeletemu.daemon.admission_servicer; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'numpy', 'PIL')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        check=True,
    )
    assert out.stdout.strip() == "[]"


def test_panel_titles_wrap_after_slashes() -> None:
    from kubeletemu.plot.fleet import wrap_name

    assert wrap_name("default/seed=1") == "default/seed=1"
    assert wrap_name("topology-aware/overreserve/resync=5s/exporter=10s/seed=2") == (
        "topology-aware/overreserve/\nresync=5s/exporter=10s/seed=2"
    )


@pytest.mark.slow
def test_seeds_make_one_point_with_its_interval(tmp_path: Path) -> None:
    """Three seeds of one configuration are one point at their mean, its 95 % interval drawn as bars: the
    chart differs from one drawn of the mean seed alone, and from the same seeds spread wider."""
    seeds = [
        result(f"nrt/overreserve/seed={s}", "topology-aware", t, p, 0.5)
        for s, t, p in ((1, 2, 10.0), (2, 4, 12.0), (3, 6, 14.0))
    ]
    wider = copy.deepcopy(seeds)
    wider[0]["topology_affinity_errors"], wider[2]["topology_affinity_errors"] = 0, 8
    mean = [result("nrt/overreserve/seed=2", "topology-aware", 4, 12.0, 0.5)]
    drawn = {
        name: draw(r, tmp_path / name)["tae-vs-time-to-running.png"]
        for name, r in (("seeds", seeds), ("wider", wider), ("mean", mean))
    }
    assert len(set(drawn.values())) == 3
