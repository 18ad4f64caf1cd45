"""The ``kubeletemu simulate --chart`` picture, drawn from the report's JSON (``render_json``), so a report
a daemon sent is drawn here, where matplotlib is, and the daemon needs none.

One row per configuration across three panels: its admission attempts as a bar split into admitted,
TopologyAffinityError and other rejections; then CPU and memory use per NUMA node at the end of the
stream as heatmaps. A configuration the kubelet would refuse to start with says so instead of a bar.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kubeletemu.plot import backend, heatmap
from kubeletemu.plot.inputs import PlotInputError, field, number

WIDTH = 1400
ROW_PX = 26
ADMITTED = "#1f77b4"
AFFINITY = "#d62728"
OTHER = "#ff7f0e"
TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"


def chart_size(configurations: int) -> tuple[int, int]:
    """Pixels: a fixed width, a row of ``ROW_PX`` per configuration above a readable minimum."""
    return WIDTH, max(360, 150 + configurations * ROW_PX)


def simulation_chart(report: Mapping[str, Any], path: Path) -> Path:
    """Writes the chart of a simulation report (``SimulationReport.to_dict()`` or its JSON parsed) to
    ``path``; the same report gives the same bytes."""
    configurations = field(report, "configurations", "simulation report")
    if not isinstance(configurations, Sequence) or isinstance(configurations, str) or not configurations:
        raise PlotInputError("simulation report: configurations: expected a non-empty list")
    labels = [
        str(field(c, "label", f"simulation report: configurations[{i}]"))
        for i, c in enumerate(configurations)
    ]
    numas = sorted({int(n["node"]) for c in configurations if c.get("error") is None for n in _numa(c)})
    columns = [str(n) for n in numas]
    cpu = [_row(c, "cpus", numas) for c in configurations]
    memory = [_row(c, "memory", numas) for c in configurations]
    with backend.figure(*chart_size(len(labels))) as fig:
        ratio = max(1.0, 0.45 * len(numas))
        bars, cpu_ax, memory_ax = fig.subplots(1, 3, gridspec_kw={"width_ratios": [4.0, ratio, ratio]})
        _admissions(bars, configurations, labels)
        image = heatmap.draw(cpu_ax, cpu, labels, columns, title="CPU use per NUMA node", show_rows=False)
        heatmap.draw(memory_ax, memory, labels, columns, title="memory use per NUMA node", show_rows=False)
        for ax in (cpu_ax, memory_ax):
            ax.set_xlabel("NUMA node", fontsize=8)
        if image is not None:
            fig.colorbar(image, ax=[cpu_ax, memory_ax], label="used at the end of the stream", fraction=0.05)
        fig.suptitle(f"kubeletemu simulate: {_topology(report)}", fontsize=12)
        return backend.save_png(fig, path)


def _numa(configuration: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    numa = field(configuration, "numa", f"simulation report: {configuration.get('label')}")
    if not isinstance(numa, Sequence):
        raise PlotInputError(f"simulation report: {configuration.get('label')}: numa: expected a list")
    return numa


def _row(configuration: Mapping[str, Any], resource: str, numas: Sequence[int]) -> list[float]:
    """Fractions per NUMA node in ``numas`` order; NaN where the node has no accounting for the resource
    (a manager with policy none) or the configuration did not run."""
    row = [math.nan] * len(numas)
    if configuration.get("error") is not None:
        return row
    for node in _numa(configuration):
        percent = field(node, resource, f"simulation report: {configuration.get('label')}: numa")["percent"]
        if percent is not None:
            row[numas.index(int(node["node"]))] = float(percent) / 100
    return row


def _admissions(ax: Any, configurations: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> None:
    top = 0.0
    for y, configuration in enumerate(configurations):
        where = f"simulation report: {labels[y]}"
        if configuration.get("error") is not None:
            ax.text(
                0, y, "  kubelet would not start", va="center", fontsize=8, color="#6c757d", style="italic"
            )
            continue
        attempts = number(configuration, "attempts", where)
        admitted = number(configuration, "admitted", where)
        affinity = number(configuration, "topology_affinity_errors", where)
        other = attempts - admitted - affinity
        left = 0.0
        for width, colour in ((admitted, ADMITTED), (affinity, AFFINITY), (other, OTHER)):
            if width > 0:
                ax.barh(y, width, left=left, height=0.7, color=colour)
            left += width
        ax.text(attempts, y, f" {admitted:.0f}/{attempts:.0f}", va="center", fontsize=8)
        top = max(top, attempts)
    ax.set_yticks(range(len(labels)), list(labels), fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)  # first configuration on top, rows level with the heatmaps'
    ax.set_xlim(0, top * 1.3 if top > 0 else 1)  # room for the admitted/attempts label
    ax.set_xlabel("admission attempts", fontsize=9)
    ax.set_title("pods admitted / attempts", fontsize=10)
    ax.grid(True, axis="x", color="#dee2e6")
    ax.set_axisbelow(True)
    from matplotlib.patches import Patch

    # Under the bars, outside them: inside, it would hide the last rows.
    ax.figure.legend(
        handles=[
            Patch(color=ADMITTED, label="admitted"),
            Patch(color=AFFINITY, label=TOPOLOGY_AFFINITY_ERROR),
            Patch(color=OTHER, label="other rejection"),
        ],
        loc="outside lower left",
        ncols=3,
        fontsize=8,
    )


def _topology(report: Mapping[str, Any]) -> str:
    topology = report.get("topology") or {}
    name = topology.get("name") or topology.get("kind") or "node"
    if topology.get("kind") == "live":
        return f"live node {name} ({topology.get('pods', 0)} pod(s) before the stream)"
    return str(name)
