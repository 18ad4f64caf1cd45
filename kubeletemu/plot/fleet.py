"""The fleet what-if charts (issues 15 and 28), drawn from ``kubeletemu fleet``'s per-seed results:

- ``tae-vs-time-to-running.png``: TopologyAffinityErrors against the p99 time from a pod's first creation
  to Running (through every bounce), and ``tae-vs-pending.png`` against the p99 time a pod object waited
  to be scheduled: one numbered point per setup (:mod:`kubeletemu.fleet.setups`) at the mean of its
  seeds, with its 95 % interval on both axes (:mod:`kubeletemu.fleet.stats`; one seed: its figures),
  coloured by scheduler, on symlog axes, a table beside the plot naming the numbers with their figures
  (lower left is better on both counts);
- ``pending-over-time.png``: pods pending over simulated time as small multiples, a panel per
  configuration with a thin line per seed, all panels on one scale (one chart of all the lines piles them
  into a single spike);
- ``numa-utilisation.png``: CPU and memory utilisation per NUMA node at the end of the run, rows nodes,
  columns NUMA ids, one column of panels per setup (its first seed), ``HEATMAP_COLUMNS`` setups a row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kubeletemu.fleet.report import figure_text
from kubeletemu.fleet.setups import ShortNames, short_names
from kubeletemu.fleet.stats import base_name, interval
from kubeletemu.plot import backend, heatmap
from kubeletemu.plot.inputs import PlotInputError, field, name_of, number, optional_fraction

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

TAE_VS_TIME_TO_RUNNING = "tae-vs-time-to-running.png"
TAE_VS_PENDING = "tae-vs-pending.png"
PENDING_OVER_TIME = "pending-over-time.png"
NUMA_UTILISATION = "numa-utilisation.png"
SCATTER_SIZE = (1200, 700)
PENDING_COLUMNS = 3
PENDING_PANEL_PX = (360, 230)
HEATMAP_COLUMNS = 6  # setups a row of the utilisation chart
# matplotlib's tab10, then the same hues dashed: twenty configurations stay apart.
LINESTYLES = ("-", "--", ":", "-.")


@dataclass(frozen=True)
class _Config:
    name: str
    scheduler: str
    seed: object
    tae: float
    p99: float
    to_running: float
    pending: tuple[tuple[float, float], ...]
    utilisation: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class _Point:
    """A configuration on a scatter: the mean of its seeds (one seed: its figures) and the intervals."""

    name: str
    scheduler: str
    seeds: int
    x: float
    y: float
    x_interval: tuple[float, float] | None
    y_interval: tuple[float, float] | None


def fleet_charts(results: Sequence[Mapping[str, Any]], outdir: Path) -> list[Path]:
    """Writes the four charts into ``outdir`` (created if missing) and returns their paths in the order
    above; the same results give the same bytes."""
    configs = [_parse(entry, index) for index, entry in enumerate(results)]
    if not configs:
        raise PlotInputError("fleet results: no configuration to chart")
    outdir.mkdir(parents=True, exist_ok=True)
    return [
        _scatter(
            _points(configs, lambda c: c.to_running),
            outdir / TAE_VS_TIME_TO_RUNNING,
            "time to Running p99 (s), from a pod's first creation",
            "TopologyAffinityError against time to Running (lower left is better)",
        ),
        _scatter(
            _points(configs, lambda c: c.p99),
            outdir / TAE_VS_PENDING,
            "pending time p99 (s), per pod object",
            "TopologyAffinityError against time pending (lower left is better)",
        ),
        _pending_over_time(configs, outdir / PENDING_OVER_TIME),
        _numa_utilisation(configs, outdir / NUMA_UTILISATION),
    ]


def _parse(entry: Mapping[str, Any], index: int) -> _Config:
    where = name_of(entry, index, "fleet result")
    points = field(entry, "pending_over_time", where)
    if not isinstance(points, Sequence) or isinstance(points, str):
        raise PlotInputError(f"{where}: pending_over_time: expected a list of [time, pending]")
    pending = []
    for i, point in enumerate(points):
        if not isinstance(point, Sequence) or len(point) != 2 or not all(_is_number(v) for v in point):
            raise PlotInputError(f"{where}: pending_over_time[{i}]: expected [time, pending], got {point!r}")
        pending.append((float(point[0]), float(point[1])))
    utilisation = field(entry, "numa_utilisation", where)
    if not isinstance(utilisation, Sequence) or isinstance(utilisation, str):
        raise PlotInputError(f"{where}: numa_utilisation: expected a list")
    for i, cell in enumerate(utilisation):
        at = f"{where}: numa_utilisation[{i}]"
        for key in ("node", "cpu", "memory"):
            field(cell, key, at)
        numa = field(cell, "numa", at)
        if not isinstance(numa, int) or isinstance(numa, bool):
            raise PlotInputError(f"{at}: numa: expected an integer NUMA id, got {numa!r}")
    return _Config(
        name=str(field(entry, "name", where)),
        scheduler=str(field(entry, "scheduler", where)),
        seed=entry.get("seed"),
        tae=number(entry, "topology_affinity_errors", where),
        p99=_wait(entry, "pending_p99_s", where),
        to_running=_wait(entry, "time_to_running_p99_s", where),
        pending=tuple(pending),
        utilisation=tuple(utilisation),
    )


def _wait(entry: Mapping[str, Any], key: str, where: str) -> float:
    """A wait percentile; a censored one (null: decided by waits that never ended) is drawn at the run's
    length (``simulated_s``), the least it could be."""
    if field(entry, key, where) is None:
        return number(entry, "simulated_s", where)
    return number(entry, key, where)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _groups(configs: Sequence[_Config]) -> dict[str, list[_Config]]:
    """Configurations by their name without the seed, in first-seen order."""
    groups: dict[str, list[_Config]] = {}
    for config in configs:
        groups.setdefault(base_name(config.name), []).append(config)
    return groups


def _span(values: Sequence[float]) -> tuple[float, tuple[float, float] | None]:
    summary = interval(values)
    mean = float(summary["mean"] or 0.0)
    if summary["low"] is None or summary["high"] is None:
        return mean, None
    return mean, (max(0.0, float(summary["low"])), float(summary["high"]))


def _points(configs: Sequence[_Config], x_of: Callable[[_Config], float]) -> list[_Point]:
    """A point per setup: the mean of its seeds, with the 95 % intervals (one seed: its figures)."""
    points = []
    for name, members in _groups(configs).items():
        x, x_interval = _span([x_of(c) for c in members])
        y, y_interval = _span([c.tae for c in members])
        points.append(_Point(name, members[0].scheduler, len(members), x, y, x_interval, y_interval))
    return points


def _scatter(points: Sequence[_Point], path: Path, xlabel: str, title: str) -> Path:
    """Points carry numbers, placed clear of each other (:func:`_place_labels`), and a table beside the
    plot names them with their figures: setups of one study sit close (seeds, caches), where their names
    would overlap. Both axes are symlog: linear up to 1 (0 stays on the axis), logarithmic above, so a
    setup with hundreds of errors or minutes of waiting does not squash the others into a corner. Error
    bars are the 95 % intervals over seeds."""
    from matplotlib.ticker import FuncFormatter

    schedulers = list(dict.fromkeys(p.scheduler for p in points))
    short = short_names([p.name for p in points])
    spots: dict[tuple[float, float], list[int]] = {}
    for number_, point in enumerate(points, start=1):
        spots.setdefault((point.x, point.y), []).append(number_)
    with backend.figure(*SCATTER_SIZE) as fig:
        ax = fig.add_subplot()
        for index, scheduler in enumerate(schedulers):
            mine = [p for p in points if p.scheduler == scheduler]
            color = f"C{index % 10}"
            for point in mine:
                if point.x_interval is None or point.y_interval is None:
                    continue
                ax.errorbar(
                    [point.x],
                    [point.y],
                    xerr=[[point.x - point.x_interval[0]], [point.x_interval[1] - point.x]],
                    yerr=[[point.y - point.y_interval[0]], [point.y_interval[1] - point.y]],
                    fmt="none",
                    ecolor=color,
                    elinewidth=1.2,
                    capsize=4,
                    zorder=2,
                    clip_on=False,
                )
            ax.scatter(
                [p.x for p in mine],
                [p.y for p in mine],
                s=70,
                color=color,
                edgecolors="black",
                linewidths=0.5,
                label=scheduler,
                zorder=3,
                clip_on=False,  # a point on an axis (no error at all) is drawn whole
            )
        ax.set_xlabel(xlabel)
        ax.set_ylabel("TopologyAffinityError admissions")
        ax.set_title(title)
        ax.grid(True, color="#dee2e6", zorder=0)
        ax.set_axisbelow(True)
        ax.set_xscale("symlog", linthresh=1.0, linscale=0.5)
        ax.set_yscale("symlog", linthresh=1.0, linscale=0.5)
        ax.set_xlim(0, _log_headroom(max(_top(p.x, p.x_interval) for p in points)))
        ax.set_ylim(0, _log_headroom(max(_top(p.y, p.y_interval) for p in points)))
        for axis in (ax.xaxis, ax.yaxis):  # a count or seconds, not powers of ten
            axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        legend = ax.legend(title="scheduler", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        # Below the scheduler legend, outside the plot like it.
        ax.annotate(
            _key(points, short, seconds_label=xlabel.split(" (")[0]),
            xy=(0, 0),
            xycoords=legend,
            xytext=(0, -8),
            textcoords="offset points",
            va="top",
            fontsize=7.5,
            family="monospace",
        )
        fig.draw_without_rendering()  # the layout settled: the labels are placed in display space
        _place_labels(fig, ax, [(x, y, ",".join(map(str, numbers))) for (x, y), numbers in spots.items()])
        return backend.save_png(fig, path)


def _log_headroom(top: float) -> float:
    """The axis end on a symlog scale: room for a label above the largest value (at least 1)."""
    return max(1.0, top) * 1.6 + 0.5


def _key(points: Sequence[_Point], short: ShortNames, *, seconds_label: str) -> str:
    """The small table beside the plot: each number's setup and the two figures it is drawn at."""
    rows = [("", "setup", "TopologyAffinityError", seconds_label)]
    for number_, p in enumerate(points, start=1):
        tae = {"mean": p.y, "low": None, "high": None}
        x = {"mean": p.x, "low": None, "high": None}
        if p.y_interval is not None and p.x_interval is not None:
            tae = {"mean": p.y, "low": p.y_interval[0], "high": p.y_interval[1]}
            x = {"mean": p.x, "low": p.x_interval[0], "high": p.x_interval[1]}
        name = short.names[p.name] + ("" if len({q.seeds for q in points}) == 1 else f" ({p.seeds} seeds)")
        rows.append((str(number_), name, figure_text(tae, seconds=False), figure_text(x, seconds=True)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.rjust(w) if i == 0 else cell.ljust(w) for i, (cell, w) in
                       enumerate(zip(row, widths, strict=True))).rstrip() for row in rows]  # fmt: skip
    counts = {p.seeds for p in points}
    if max(counts) > 1:
        each = f"the mean of {next(iter(counts))} seeds" if len(counts) == 1 else "the mean of its seeds"
        lines += ["", f"each point: {each}, [95 % interval] (the bars)"]
    if short.shared:
        lines += ["every setup that has them:", f"  {', '.join(short.shared)}"]
    return "\n".join(lines)


# Where a point's number may go, in points from the point: beside it first, then farther out.
_DIRECTIONS = ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (0, 1), (-1, 0), (0, -1))
_LABEL_RADII = (6, 14, 24, 36)
_MARKER_RADIUS_PT = 5.0  # the markers' size 70 (pt²) is about 8.4 pt across


_H_ALIGN: dict[int, Literal["left", "center", "right"]] = {1: "left", 0: "center", -1: "right"}
_V_ALIGN: dict[int, Literal["bottom", "center", "top"]] = {1: "bottom", 0: "center", -1: "top"}


@dataclass
class _Room:
    """What a label must keep clear of, in display pixels: the plot's edges, the markers (discs of
    ``reach``) and the labels placed so far."""

    inside: Bbox
    markers: list[tuple[float, float]]
    reach: float
    placed: list[Bbox]

    def takes(self, box: Bbox) -> bool:
        if not (self.inside.contains(box.x0, box.y0) and self.inside.contains(box.x1, box.y1)):
            return False
        if any(bool(box.overlaps(other)) for other in self.placed):
            return False
        return not any(_near(box, x, y, self.reach) for x, y in self.markers)


def _place_labels(fig: Figure, ax: Axes, labels: Sequence[tuple[float, float, str]]) -> None:
    """Each label at the first offset whose box overlaps no label placed before, no marker and stays in
    the plot; the offsets are tried in :data:`_DIRECTIONS` at growing :data:`_LABEL_RADII` (none free:
    the first). The labels take no part in the layout, so placing them moves nothing already drawn."""
    markers = [(float(px), float(py)) for px, py in (ax.transData.transform((x, y)) for x, y, _ in labels)]
    room = _Room(ax.get_window_extent(), markers, _MARKER_RADIUS_PT * fig.dpi / 72.0, [])
    offsets = [(dx * r, dy * r, dx, dy) for r in _LABEL_RADII for dx, dy in _DIRECTIONS]
    for x, y, text in labels:
        annotation = ax.annotate(
            text, (x, y), xytext=(6, 6), textcoords="offset points", fontsize=9, zorder=4, gid="point-label"
        )
        annotation.set_in_layout(False)
        for ox, oy, dx, dy in [*offsets, offsets[0]]:
            annotation.xyann = (ox, oy)
            annotation.set_horizontalalignment(_H_ALIGN[dx])
            annotation.set_verticalalignment(_V_ALIGN[dy])
            box = annotation.get_window_extent()  # with the figure's renderer, as saved
            if room.takes(box):
                break
        room.placed.append(box)


def _near(box: Bbox, x: float, y: float, reach: float) -> bool:
    """Whether the box comes within ``reach`` of the point (a marker's disc)."""
    dx = max(box.x0 - x, 0.0, x - box.x1)
    dy = max(box.y0 - y, 0.0, y - box.y1)
    return bool(dx * dx + dy * dy < reach * reach)


def _top(value: float, span: tuple[float, float] | None) -> float:
    return max(value, span[1]) if span is not None else value


def _headroom(top: float) -> float:
    """The axis end: a tenth above the largest value (room for the labels), 1 when all are zero."""
    return top * 1.1 if top > 0 else 1.0


def pending_size(panels: int) -> tuple[int, int]:
    """Pixels of the pending chart: :data:`PENDING_COLUMNS` panels a row, as many rows as it takes."""
    columns = min(PENDING_COLUMNS, max(1, panels))
    rows = -(-max(1, panels) // columns)
    return 60 + columns * PENDING_PANEL_PX[0], 70 + rows * PENDING_PANEL_PX[1]


def _pending_over_time(configs: Sequence[_Config], path: Path) -> Path:
    groups = _groups(configs)
    short = short_names(list(groups))
    panels = len(groups)
    columns = min(PENDING_COLUMNS, panels)
    rows = -(-panels // columns)
    top = max((n for c in configs for _, n in c.pending), default=0.0)
    end = max((t for c in configs for t, _ in c.pending), default=0.0)
    with backend.figure(*pending_size(panels)) as fig:
        axes = fig.subplots(rows, columns, squeeze=False, sharex=True, sharey=True)
        for index, (name, members) in enumerate(groups.items()):
            ax = axes[index // columns][index % columns]
            for seed_index, config in enumerate(members):
                ax.step(
                    [t for t, _ in config.pending],
                    [n for _, n in config.pending],
                    where="post",
                    color=f"C{seed_index % 10}",
                    linestyle=LINESTYLES[(seed_index // 10) % len(LINESTYLES)],
                    linewidth=0.9,
                    alpha=0.85,
                )
            ax.set_title(wrap_name(short.names[name], 44), fontsize=8)
            ax.grid(True, color="#dee2e6")
            ax.set_xlim(0, end or 1.0)
            ax.set_ylim(0, _headroom(top))
            ax.tick_params(labelsize=7)
        for index in range(panels, rows * columns):
            axes[index // columns][index % columns].set_visible(False)
        seeds = max(len(members) for members in groups.values())
        more = f", a line per seed ({seeds} seeds)" if seeds > 1 else ""
        note = f"\n{short.note()}" if short.shared else ""
        fig.suptitle(f"Pods pending over time{more}{note}", fontsize=11)
        fig.supxlabel("simulated time (s)", fontsize=9)
        fig.supylabel("pods pending", fontsize=9)
        return backend.save_png(fig, path)


ROW_PX = 18


def heatmap_size(nodes: int, panels: int) -> tuple[int, int]:
    """Pixels of the utilisation chart: a column of two panels (CPU, memory) per setup,
    :data:`HEATMAP_COLUMNS` setups a row, a row of ``ROW_PX`` per node (at least a readable minimum, at
    most a screenful and a half)."""
    columns = min(HEATMAP_COLUMNS, max(1, panels))
    rows = -(-max(1, panels) // columns)
    width = 140 + columns * 260 + 90
    height = 130 + rows * 2 * min(700, max(150, nodes * ROW_PX))
    return width, height


def _numa_utilisation(configs: Sequence[_Config], path: Path) -> Path:
    """A column of panels per setup, drawn from its first seed's run: an end state as it was (a mean over
    seeds would blur the half-full NUMA nodes it is there to show)."""
    groups = _groups(configs)
    shown = [members[0] for members in groups.values()]
    short = short_names(list(groups))
    nodes = list(dict.fromkeys(str(cell["node"]) for c in shown for cell in c.utilisation))
    numas = sorted({int(cell["numa"]) for c in shown for cell in c.utilisation})
    columns = [str(n) for n in numas]
    per_row = min(HEATMAP_COLUMNS, len(shown))
    setup_rows = -(-len(shown) // per_row)
    with backend.figure(*heatmap_size(len(nodes), len(shown))) as fig:
        axes = fig.subplots(2 * setup_rows, per_row, squeeze=False)
        image = None
        for index, (setup, config) in enumerate(zip(groups, shown, strict=True)):
            top, col = 2 * (index // per_row), index % per_row
            for row, resource in enumerate(("cpu", "memory")):
                ax = axes[top + row][col]
                image = heatmap.draw(
                    ax,
                    _grid(config, resource, nodes, numas),
                    nodes,
                    columns,
                    title=f"{wrap_name(short.names[setup])}\n{resource}" if row == 0 else resource,
                    show_rows=col == 0,
                )
                ax.set_xlabel("NUMA node", fontsize=8)
                ax.set_gid(f"setup:{setup}:{resource}")
        for index in range(len(shown), setup_rows * per_row):
            for row in range(2):
                axes[2 * (index // per_row) + row][index % per_row].set_visible(False)
        if image is not None:
            fig.colorbar(image, ax=axes, label="utilisation at the end of the run", fraction=0.04, pad=0.02)
        seeds = {str(c.seed) for c in shown}
        which = f"seed {next(iter(seeds))}" if len(seeds) == 1 else "the first seed"
        title = f"Utilisation per NUMA node at the end of the run: {which} of each setup"
        fig.suptitle(title + (f"\n{short.note()}" if short.shared else ""), fontsize=12)
        return backend.save_png(fig, path)


def wrap_name(name: str, width: int = 30) -> str:
    """A configuration name over lines of at most ``width`` characters, broken after its ``/``s (its
    parts: scheduler, cache, periods, seed), so side-by-side panel titles do not run into each other."""
    lines = [""]
    for part in name.split("/"):
        piece = part if not lines[-1] else "/" + part
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines[-1] += "/"
            lines.append(part)
        else:
            lines[-1] += piece
    return "\n".join(lines)


def _grid(config: _Config, resource: str, nodes: Sequence[str], numas: Sequence[int]) -> list[list[float]]:
    cells = [[math.nan] * len(numas) for _ in nodes]
    row_of = {node: i for i, node in enumerate(nodes)}
    col_of = {numa: i for i, numa in enumerate(numas)}
    for i, cell in enumerate(config.utilisation):
        value = optional_fraction(cell[resource], f"{config.name}: numa_utilisation[{i}].{resource}")
        cells[row_of[str(cell["node"])]][col_of[int(cell["numa"])]] = value
    return cells
