"""Charts drawn with matplotlib, the optional extra ``[plot]`` (``pip install 'kubeletemu[plot]'``).

Importing this package imports no matplotlib: :func:`require_matplotlib` lets a command fail with
:data:`MISSING` before any work, and each chart imports it when drawn. Every chart is a PNG whose bytes
depend on its input only (``backend``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kubeletemu.plot.backend import MISSING, PlotUnavailable, require_matplotlib
from kubeletemu.plot.inputs import PlotInputError


def fleet_charts(results: Sequence[Mapping[str, Any]], outdir: Path) -> list[Path]:
    """The fleet what-if charts (``kubeletemu.plot.fleet``) for ``kubeletemu fleet --chart DIR``."""
    require_matplotlib()
    from kubeletemu.plot.fleet import fleet_charts as draw

    return draw(results, outdir)


def simulation_chart(report: Mapping[str, Any], path: Path) -> Path:
    """The single-node simulation chart (``kubeletemu.plot.simulation``) for ``simulate --chart FILE``."""
    require_matplotlib()
    from kubeletemu.plot.simulation import simulation_chart as draw

    return draw(report, path)


__all__ = [
    "MISSING",
    "PlotInputError",
    "PlotUnavailable",
    "fleet_charts",
    "require_matplotlib",
    "simulation_chart",
]
