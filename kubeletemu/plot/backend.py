"""The one place that touches matplotlib's global state: an explicit Agg canvas, the library's default
style (a user's ``matplotlibrc`` must not change the bytes), and a PNG writer with fixed metadata.

Deterministic bytes rest on what matplotlib 3.11.2 does in ``matplotlib.image.imsave`` (reached from
``FigureCanvasAgg.print_png``): PNG text chunks come only from ``metadata``, whose ``Software`` key
defaults to the matplotlib version and is dropped when set to None; PNG has no timestamp of its own
(``SOURCE_DATE_EPOCH`` is for PDF/PS/SVG). The figure is a plain ``Figure`` on a ``FigureCanvasAgg``, not
pyplot: no backend selection, no figure registry, nothing left open between charts.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MISSING = "charts need matplotlib: pip install 'kubeletemu[plot]'"
DPI = 100
# The only text chunk: the version of matplotlib would otherwise change the bytes between installs.
METADATA = {"Software": "kubeletemu"}


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed (it is the optional extra ``[plot]``)."""

    def __init__(self) -> None:
        super().__init__(MISSING)


def require_matplotlib() -> None:
    """Raises :class:`PlotUnavailable` unless matplotlib can be imported; imports nothing itself, so a
    command can check before doing any work."""
    if importlib.util.find_spec("matplotlib") is None:
        raise PlotUnavailable


@contextmanager
def figure(width_px: int, height_px: int) -> Iterator[Figure]:
    """A ``width_px`` × ``height_px`` figure drawn under the default style, with constrained layout so
    labels stay inside a fixed canvas (the PNG's size is exactly this)."""
    require_matplotlib()
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.style.context("default"):
        fig = Figure(figsize=(width_px / DPI, height_px / DPI), dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        yield fig


def save_png(fig: Figure, path: Path) -> Path:
    """Writes ``fig`` as a PNG of exactly its figure size (no tight bounding box: that would make the size
    depend on the text drawn)."""
    fig.savefig(path, format="png", dpi=DPI, metadata=METADATA)
    return path
