"""A utilisation heatmap on one Axes: cells 0..1 (NaN: nothing there, drawn light grey), each cell's
percentage written in it while the grid is small enough to read, tick labels thinned on tall grids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.image import AxesImage

CMAP = "viridis"
EMPTY = "#e9ecef"
# Beyond this many cells the numbers no longer fit their squares: the colour alone tells.
ANNOTATE_MAX_CELLS = 160
# At most this many row labels: a 500-node fleet keeps every n-th.
MAX_ROW_LABELS = 40


def draw(
    ax: Axes,
    cells: Sequence[Sequence[float]],
    rows: Sequence[str],
    columns: Sequence[str],
    *,
    title: str,
    show_rows: bool = True,
) -> AxesImage | None:
    """None when there is no cell (no configuration ran): the panel then says so and has no colour scale."""
    import matplotlib
    import numpy as np

    if not rows or not columns:
        ax.set_title(title, fontsize=10)
        ax.set_axis_off()
        ax.text(0.5, 0.5, "nothing ran", ha="center", va="center", color="#6c757d", transform=ax.transAxes)
        return None

    data = np.ma.masked_invalid(np.array(cells, dtype=float).reshape(len(rows), len(columns)))
    cmap = matplotlib.colormaps[CMAP].with_extremes(bad=EMPTY)
    image = ax.imshow(data, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    ax.set_title(title, fontsize=10)
    ax.set_xticks(range(len(columns)), list(columns), fontsize=8)
    step = max(1, -(-len(rows) // MAX_ROW_LABELS))
    ticks = list(range(0, len(rows), step))
    ax.set_yticks(ticks, [rows[i] for i in ticks], fontsize=8)
    # Panels side by side label their rows once, on the left.
    ax.tick_params(length=0, labelleft=show_rows)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if len(rows) * len(columns) <= ANNOTATE_MAX_CELLS:
        for r, row in enumerate(cells):
            for c, value in enumerate(row):
                if value != value:  # NaN: an empty cell says nothing
                    continue
                # Light text on the dark end of viridis, dark text on the light end.
                colour = "white" if value < 0.6 else "black"
                ax.text(c, r, f"{value * 100:.0f}%", ha="center", va="center", fontsize=7, color=colour)
    return image
