"""The fleet charts read from their figure objects (issue 41): the utilisation chart has a column of panels
per setup titled by it; the scatters are on symlog axes and no point's number covers another's or a
marker. The figures are kept as ``backend.save_png`` writes them (the real function, still called), from
``kubeletemu fleet --chart`` itself and from the worked example's figures."""

from __future__ import annotations

import itertools
import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from kubeletemu.cli import main
from kubeletemu.plot import backend, fleet_charts
from tests.fleet.conftest import KUBELET_CONFIG, SMALL
from tests.plot.test_fleet_charts import result

pytestmark = pytest.mark.slow  # runs a fleet and draws charts: seconds

# The worked example (kubeletemu/data/examples/fleet-reserve-cache.yaml) as it ran, per seed: name,
# scheduler, TopologyAffinityErrors, pending p99, time to Running p99. Four of its six setups sat in the
# bottom-left corner of a linear chart, under default's 0-800 interval.
EXAMPLE = [
    ("default/seed=1", "default", 294, 0.0, 8.339572),
    ("default/seed=2", "default", 49, 0.0, 2.998892),
    ("default/seed=3", "default", 856, 4.032812, 18.041734),
    ("default/seed=4", "default", 118, 1.373745, 5.593652),
    ("default/seed=5", "default", 577, 7.396504, 30.362183),
    ("topology-aware/passthrough/exporter=10s/seed=1", "topology-aware", 26, 3.185849, 5.503673),
    ("topology-aware/passthrough/exporter=10s/seed=2", "topology-aware", 1, 0.0, 2.984132),
    ("topology-aware/passthrough/exporter=10s/seed=3", "topology-aware", 26, 13.411589, 15.802362),
    ("topology-aware/passthrough/exporter=10s/seed=4", "topology-aware", 1, 1.020987, 2.999262),
    ("topology-aware/passthrough/exporter=10s/seed=5", "topology-aware", 91, 30.787251, 45.776596),
    ("reserve/overreserve/resync=5s/exporter=10s/seed=1", "reserve", 0, 321.504468, 321.504468),
    ("reserve/overreserve/resync=5s/exporter=10s/seed=2", "reserve", 0, 336.809583, 336.809583),
    ("reserve/overreserve/resync=5s/exporter=10s/seed=3", "reserve", 1, 315.449922, 315.449922),
    ("reserve/overreserve/resync=5s/exporter=10s/seed=4", "reserve", 0, 319.251141, 319.251141),
    ("reserve/overreserve/resync=5s/exporter=10s/seed=5", "reserve", 1, 309.551473, 309.551473),
    ("reserve-shared/overreserve/resync=5s/exporter=10s/seed=1", "reserve-shared", 3, 1.072341, 3.358299),
    ("reserve-shared/overreserve/resync=5s/exporter=10s/seed=2", "reserve-shared", 10, 0.921847, 3.296565),
    ("reserve-shared/overreserve/resync=5s/exporter=10s/seed=3", "reserve-shared", 11, 42.410959, 45.470647),
    ("reserve-shared/overreserve/resync=5s/exporter=10s/seed=4", "reserve-shared", 8, 9.231956, 11.905631),
    ("reserve-shared/overreserve/resync=5s/exporter=10s/seed=5", "reserve-shared", 7, 57.723316, 59.493543),
    ("exact/seed=1", "exact", 0, 3.660045, 5.661849),
    ("exact/seed=2", "exact", 0, 0.0, 2.996341),
    ("exact/seed=3", "exact", 0, 21.416665, 24.195089),
    ("exact/seed=4", "exact", 0, 3.263751, 5.198655),
    ("exact/seed=5", "exact", 0, 43.04301, 45.446472),
    ("exact-numa/seed=1", "exact-numa", 0, 0.0, 2.989816),
    ("exact-numa/seed=2", "exact-numa", 0, 0.0, 2.984132),
    ("exact-numa/seed=3", "exact-numa", 0, 0.349807, 2.990554),
    ("exact-numa/seed=4", "exact-numa", 0, 0.0, 2.980549),
    ("exact-numa/seed=5", "exact-numa", 0, 2.438254, 4.402572),
]
SHORT = ["default", "topology-aware/passthrough", "reserve/overreserve", "reserve-shared/overreserve",
         "exact", "exact-numa"]  # fmt: skip
SCATTERS = ("tae-vs-time-to-running.png", "tae-vs-pending.png")
NUMBER = re.compile(r"^\d+(,\d+)*$")


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Figure]]:
    """Each chart's figure by file name, as it was saved."""
    kept: dict[str, Figure] = {}
    save = backend.save_png

    def keep(fig: Figure, path: Path) -> Path:
        kept[path.name] = fig
        return save(fig, path)

    monkeypatch.setattr(backend, "save_png", keep)
    yield kept


def _example() -> list[dict[str, Any]]:
    out = []
    for name, scheduler, tae, pending, to_running in EXAMPLE:
        entry = result(name, scheduler, tae, pending, 0.5)
        entry.update(seed=int(name.rpartition("=")[2]), time_to_running_p99_s=to_running)
        out.append(entry)
    return out


def _labels(ax: Axes) -> list[Any]:
    """The points' numbers (``3`` or ``2,5`` for points on one spot)."""
    return [text for text in ax.texts if NUMBER.match(text.get_text())]


def _markers(ax: Axes) -> list[tuple[float, float]]:
    return [
        (float(x), float(y))
        for collection in ax.collections
        if collection.get_offsets().shape[0] and collection.get_label() != "_nolegend_"
        for x, y in ax.transData.transform(collection.get_offsets())
    ]


def _disc_meets(box: Bbox, x: float, y: float, radius: float) -> bool:
    dx = max(box.x0 - x, 0.0, x - box.x1)
    dy = max(box.y0 - y, 0.0, y - box.y1)
    return dx * dx + dy * dy < radius * radius


def _check_scatter(fig: Figure, setups: list[str]) -> None:
    ax = fig.axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("symlog", "symlog")
    assert ax.get_xlim()[0] == 0 and ax.get_ylim()[0] == 0  # the origin stays in view
    labels = _labels(ax)
    numbers = sorted(int(n) for label in labels for n in label.get_text().split(","))
    assert numbers == list(range(1, len(setups) + 1))
    boxes = [label.get_window_extent() for label in labels]
    plot = ax.get_window_extent()
    for box in boxes:
        assert plot.contains(box.x0, box.y0) and plot.contains(box.x1, box.y1)
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b), (a, b)
    markers = _markers(ax)
    assert len(markers) == len(setups)
    radius = 4.0 * fig.dpi / 72.0  # a marker of size 70 pt² is 8.4 pt across
    for box in boxes:
        assert not any(_disc_meets(box, x, y, radius) for x, y in markers)
    key = next(text.get_text() for text in ax.texts if "setup" in text.get_text())
    for number, setup in enumerate(setups, start=1):
        assert re.search(rf"^ *{number}  {re.escape(setup)} ", key, re.MULTILINE), key


def test_the_worked_example_points_are_apart(tmp_path: Path, figures: dict[str, Figure]) -> None:
    """The example's six setups: every number on its own, clear of the markers, and the markers apart
    (on the linear axes four of them were within 20 pixels of another)."""
    fleet_charts(_example(), tmp_path)
    for name in SCATTERS:
        _check_scatter(figures[name], SHORT)
        markers = _markers(figures[name].axes[0])
        nearest = min(abs(complex(*a) - complex(*b)) for a, b in itertools.combinations(markers, 2))
        assert nearest > 30, name


def test_the_utilisation_chart_has_a_column_per_setup(tmp_path: Path, figures: dict[str, Figure]) -> None:
    fleet_charts(_example(), tmp_path)
    fig = figures["numa-utilisation.png"]
    panels = [ax for ax in fig.axes if (ax.get_gid() or "").startswith("setup:")]
    drawn = list(dict.fromkeys(str(ax.get_gid()).split(":")[1] for ax in panels))
    assert drawn == list(dict.fromkeys(name.rpartition("/")[0] for name, *_ in EXAMPLE))
    assert len(panels) == 2 * len(SHORT)
    assert [ax.get_title().split("\n")[0] for ax in panels if ax.get_gid().endswith(":cpu")] == SHORT
    assert fig.get_suptitle().startswith(
        "Utilisation per NUMA node at the end of the run: seed 1 of each setup"
    )


def test_charts_through_the_cli(
    tmp_path: Path, figures: dict[str, Figure], capsys: pytest.CaptureFixture[str]
) -> None:
    """``kubeletemu fleet --chart DIR`` on two setups of two seeds each: the charts show both setups."""
    (tmp_path / "kubelet-config.yaml").write_text(KUBELET_CONFIG)
    text = SMALL.replace("schedulers: [default, nrt, exact]", "schedulers: [default, nrt]")
    text = text.replace("caches: [passthrough, overreserve]", "caches: [overreserve]")
    (tmp_path / "fleet.yaml").write_text(text.replace("exporterPeriods: [20s, 5s]", "exporterPeriods: [5s]"))
    charts = tmp_path / "charts"
    sigpipe = signal.getsignal(signal.SIGPIPE)
    try:
        code = main(["fleet", "-f", str(tmp_path / "fleet.yaml"), "-o", "json", "--workers", "1",
                     "--chart", str(charts)])  # fmt: skip
    finally:
        signal.signal(signal.SIGPIPE, sigpipe)  # main sets a filter's default
    assert code == 0
    summaries = json.loads(capsys.readouterr().out)["summaries"]
    assert [s["name"] for s in summaries] == ["default", "nrt/overreserve/resync=5s/exporter=5s"]
    assert sorted(p.name for p in charts.iterdir()) == sorted(figures)
    for name in SCATTERS:
        _check_scatter(figures[name], ["default", "nrt/overreserve"])
    utilisation = figures["numa-utilisation.png"]
    titles = [ax.get_title() for ax in utilisation.axes if (ax.get_gid() or "").endswith(":cpu")]
    assert titles == ["default\ncpu", "nrt/overreserve\ncpu"]
    assert "seed 3 of each setup" in utilisation.get_suptitle()
    assert "resync=5s, exporter=5s" in utilisation.get_suptitle()


def test_crowded_points_keep_their_numbers_apart(tmp_path: Path, figures: dict[str, Figure]) -> None:
    """Eight setups within a few pixels of each other: each number still finds a place of its own."""
    crowded = [result(f"s{i}/seed=1", f"scheduler-{i}", 5 + i % 3, 10.0 + i * 0.2, 0.5) for i in range(8)]
    fleet_charts(crowded, tmp_path)
    for name in SCATTERS:
        _check_scatter(figures[name], [f"s{i}" for i in range(8)])
