"""The fleet what-if charts (issue 15), drawn from ``kubeletemu fleet``'s per-configuration results:

- ``tae-vs-pending.png``: TopologyAffinityErrors against the p99 time a pod waited to be scheduled, one
  numbered point per configuration, coloured by scheduler, a key naming the numbers (lower left is better
  on both counts);
- ``pending-over-time.png``: pods pending over simulated time, a step line per configuration;
- ``numa-utilisation.png``: CPU and memory utilisation per NUMA node at the end of the run, rows nodes,
  columns NUMA ids, one column of panels per configuration (the first ``HEATMAP_PANELS``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeletemu.plot import backend, heatmap
from kubeletemu.plot.inputs import PlotInputError, field, name_of, number, optional_fraction

TAE_VS_PENDING = "tae-vs-pending.png"
PENDING_OVER_TIME = "pending-over-time.png"
NUMA_UTILISATION = "numa-utilisation.png"
SCATTER_SIZE = (1000, 700)
PENDING_SIZE = (1100, 650)
HEATMAP_PANELS = 4
# matplotlib's tab10, then the same hues dashed: twenty configurations stay apart.
LINESTYLES = ("-", "--", ":", "-.")


@dataclass(frozen=True)
class _Config:
    name: str
    scheduler: str
    tae: float
    p99: float
    pending: tuple[tuple[float, float], ...]
    utilisation: tuple[Mapping[str, Any], ...]


def fleet_charts(results: Sequence[Mapping[str, Any]], outdir: Path) -> list[Path]:
    """Writes the three charts into ``outdir`` (created if missing) and returns their paths in the order
    above; the same results give the same bytes."""
    configs = [_parse(entry, index) for index, entry in enumerate(results)]
    if not configs:
        raise PlotInputError("fleet results: no configuration to chart")
    outdir.mkdir(parents=True, exist_ok=True)
    return [
        _tae_vs_pending(configs, outdir / TAE_VS_PENDING),
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
        tae=number(entry, "topology_affinity_errors", where),
        p99=number(entry, "pending_p99_s", where),
        pending=tuple(pending),
        utilisation=tuple(utilisation),
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _tae_vs_pending(configs: Sequence[_Config], path: Path) -> Path:
    """Points carry numbers and a key beside the plot names them: configurations of one study sit close
    (seeds, caches), and their names would overlap where numbers stay legible; configurations on the
    same spot share one label ("2,5")."""
    from matplotlib.ticker import MaxNLocator

    schedulers = list(dict.fromkeys(c.scheduler for c in configs))
    spots: dict[tuple[float, float], list[int]] = {}
    for number_, config in enumerate(configs, start=1):
        spots.setdefault((config.p99, config.tae), []).append(number_)
    with backend.figure(*SCATTER_SIZE) as fig:
        ax = fig.add_subplot()
        for index, scheduler in enumerate(schedulers):
            mine = [c for c in configs if c.scheduler == scheduler]
            ax.scatter(
                [c.p99 for c in mine],
                [c.tae for c in mine],
                s=70,
                color=f"C{index % 10}",
                edgecolors="black",
                linewidths=0.5,
                label=scheduler,
                zorder=3,
                clip_on=False,  # a point on an axis (no error at all) is drawn whole
            )
        for (x, y), numbers in spots.items():
            label = ",".join(str(n) for n in numbers)
            ax.annotate(label, (x, y), xytext=(6, 6), textcoords="offset points", fontsize=9, zorder=4)
        ax.set_xlabel("pending time p99 (s)")
        ax.set_ylabel("TopologyAffinityError admissions")
        ax.set_title("TopologyAffinityError against time pending (lower left is better)")
        ax.grid(True, color="#dee2e6", zorder=0)
        ax.set_axisbelow(True)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count: no 0.2 errors
        # Both are counts or durations from zero: keep the origin in view so distances compare.
        ax.set_xlim(left=0, right=_headroom(max(c.p99 for c in configs)))
        ax.set_ylim(bottom=0, top=_headroom(max(c.tae for c in configs)))
        legend = ax.legend(title="scheduler", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        key = "\n".join(f"{i:>2}  {c.name}" for i, c in enumerate(configs, start=1))
        # Below the scheduler legend, outside the plot like it.
        ax.annotate(
            key,
            xy=(0, 0),
            xycoords=legend,
            xytext=(0, -8),
            textcoords="offset points",
            va="top",
            fontsize=7.5,
            family="monospace",
        )
        return backend.save_png(fig, path)


def _headroom(top: float) -> float:
    """The axis end: a tenth above the largest value (room for the labels), 1 when all are zero."""
    return top * 1.1 if top > 0 else 1.0


def _pending_over_time(configs: Sequence[_Config], path: Path) -> Path:
    with backend.figure(*PENDING_SIZE) as fig:
        ax = fig.add_subplot()
        for index, config in enumerate(configs):
            times = [t for t, _ in config.pending]
            counts = [n for _, n in config.pending]
            ax.step(
                times,
                counts,
                where="post",
                color=f"C{index % 10}",
                linestyle=LINESTYLES[(index // 10) % len(LINESTYLES)],
                linewidth=1.5,
                label=config.name,
            )
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("pods pending")
        ax.set_title("Pods pending over time")
        ax.grid(True, color="#dee2e6")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="configuration")
        return backend.save_png(fig, path)


ROW_PX = 18


def heatmap_size(nodes: int, panels: int) -> tuple[int, int]:
    """Pixels of the utilisation chart: a column of two panels (CPU, memory) per configuration shown, a
    row of ``ROW_PX`` per node (at least a readable minimum, at most a screenful and a half)."""
    width = 140 + panels * 260 + 90
    height = 130 + 2 * min(700, max(150, nodes * ROW_PX))
    return width, height


def _numa_utilisation(configs: Sequence[_Config], path: Path) -> Path:
    shown = configs[:HEATMAP_PANELS]
    nodes = list(dict.fromkeys(str(cell["node"]) for c in shown for cell in c.utilisation))
    numas = sorted({int(cell["numa"]) for c in shown for cell in c.utilisation})
    columns = [str(n) for n in numas]
    with backend.figure(*heatmap_size(len(nodes), len(shown))) as fig:
        axes = fig.subplots(2, len(shown), squeeze=False)
        image = None
        for col, config in enumerate(shown):
            for row, resource in enumerate(("cpu", "memory")):
                cells = _grid(config, resource, nodes, numas)
                image = heatmap.draw(
                    axes[row][col],
                    cells,
                    nodes,
                    columns,
                    title=f"{wrap_name(config.name)}\n{resource}" if row == 0 else resource,
                    show_rows=col == 0,
                )
                axes[row][col].set_xlabel("NUMA node", fontsize=8)
        if image is not None:
            fig.colorbar(image, ax=axes, label="utilisation at the end of the run", fraction=0.04, pad=0.02)
        hidden = len(configs) - len(shown)
        more = f" (first {len(shown)} of {len(configs)} configurations)" if hidden else ""
        fig.suptitle(f"Utilisation per NUMA node{more}", fontsize=12)
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
