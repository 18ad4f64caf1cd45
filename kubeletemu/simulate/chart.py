"""A simulation report as a PNG bar chart: pods admitted per configuration (out of the attempts), and each
configuration's CPU utilisation per NUMA node at the end of the stream; a numbered legend names them.

Drawn on :class:`png.Canvas` with the bundled bitmap font: the bytes depend on the report only.
"""

from __future__ import annotations

from kubeletemu.simulate.engine import SimulationReport
from kubeletemu.simulate.png import RGB, Canvas, text_height, text_width

WHITE: RGB = (255, 255, 255)
INK: RGB = (33, 37, 41)
GRID: RGB = (222, 226, 230)
ADMITTED: RGB = (31, 119, 180)
ATTEMPTS: RGB = (198, 219, 239)
ERROR: RGB = (214, 39, 40)
# One colour per NUMA node (cycled beyond eight).
NUMA_COLOURS: tuple[RGB, ...] = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
)

MARGIN = 12
SLOT = 44  # horizontal room per configuration
BAR = 22
PODS_HEIGHT = 120
CPU_HEIGHT = 60
LINE = text_height() + 5


def render_chart(report: SimulationReport) -> bytes:
    results = report.results
    count = max(1, len(results))
    legend = [
        f"{i} {r.configuration.label}" + (" (NOT STARTED)" if r.error else "")
        for i, r in enumerate(results, 1)
    ]
    topology = str(report.topology.get("name") or report.topology.get("kind") or "node")
    title = f"KUBELETEMU SIMULATE: {topology}"
    axis = 4 * (text_width("0") + 1)
    plot_x = MARGIN + axis
    numa_count = max((len(r.numa) for r in results), default=0)
    numa_caption = text_width("CPU % PER NUMA NODE ") + numa_count * (text_height() + 6 + text_width("0"))
    width = max(
        plot_x + count * SLOT + MARGIN,
        MARGIN * 2 + numa_caption,
        *(MARGIN * 2 + text_width(t) for t in [title, *legend]),
    )
    height = (
        MARGIN
        + 2 * LINE  # title, panel caption
        + PODS_HEIGHT
        + LINE  # configuration numbers
        + LINE  # panel caption
        + CPU_HEIGHT
        + LINE
        + len(legend) * LINE
        + MARGIN
    )
    canvas = Canvas(width, height, WHITE)
    y = MARGIN
    canvas.text(MARGIN, y, title, INK)
    y += LINE
    canvas.text(MARGIN, y, "PODS ADMITTED (LIGHT: ATTEMPTS)", INK)
    y += LINE
    top = max([r.attempts for r in results if r.error is None] or [1]) or 1
    _axis(canvas, plot_x, y, count, PODS_HEIGHT, str(top))
    for index, result in enumerate(results):
        x = plot_x + index * SLOT + (SLOT - BAR) // 2
        if result.error is not None:
            canvas.text(x + (BAR - text_width("X")) // 2, y + PODS_HEIGHT - text_height() - 2, "X", ERROR)
            continue
        attempts_h = result.attempts * PODS_HEIGHT // top
        admitted_h = result.admitted * PODS_HEIGHT // top
        canvas.fill(x, y + PODS_HEIGHT - attempts_h, BAR, attempts_h, ATTEMPTS)
        canvas.fill(x, y + PODS_HEIGHT - admitted_h, BAR, admitted_h, ADMITTED)
        label = str(result.admitted)
        label_y = max(y, y + PODS_HEIGHT - admitted_h - text_height() - 2)
        canvas.text(x + (BAR - text_width(label)) // 2, label_y, label, INK)
    y += PODS_HEIGHT + 3
    for index in range(len(results)):
        label = str(index + 1)
        canvas.text(plot_x + index * SLOT + (SLOT - text_width(label)) // 2, y, label, INK)
    y += LINE
    x = canvas.text(MARGIN, y, "CPU % PER NUMA NODE ", INK)
    for numa in range(numa_count):
        canvas.fill(x + 2, y, text_height(), text_height(), NUMA_COLOURS[numa % len(NUMA_COLOURS)])
        x = canvas.text(x + text_height() + 4, y, str(numa), INK)
    y += LINE
    _axis(canvas, plot_x, y, count, CPU_HEIGHT, "100")
    for index, result in enumerate(results):
        nodes = result.numa
        if result.error is not None or not nodes:
            continue
        # One bar per NUMA node, in node order (the legend's colours); a node without CPUs stays empty.
        bar = max(2, (SLOT - 8) // len(nodes) - 1)
        x = plot_x + index * SLOT + (SLOT - len(nodes) * (bar + 1)) // 2
        for position, node in enumerate(nodes):
            if node.cpu_percent is None:
                continue
            h = round(node.cpu_percent * CPU_HEIGHT / 100)
            colour = NUMA_COLOURS[position % len(NUMA_COLOURS)]
            canvas.fill(x + position * (bar + 1), y + CPU_HEIGHT - h, bar, h, colour)
    y += CPU_HEIGHT + LINE
    for line, result in zip(legend, results, strict=True):
        canvas.text(MARGIN, y, line, ERROR if result.error else INK)
        y += LINE
    return canvas.to_png()


def _axis(canvas: Canvas, x: int, y: int, slots: int, height: int, top_label: str) -> None:
    """Grid lines at 0, half and full height, the top value on the left."""
    for fraction in (0, 2, 4):
        yy = y + height - fraction * height // 4
        canvas.fill(x, yy, slots * SLOT, 1, GRID)
    canvas.fill(x - 1, y, 1, height + 1, INK)
    canvas.text(x - text_width(top_label) - 3, y, top_label, INK)
    canvas.text(x - text_width("0") - 3, y + height - text_height(), "0", INK)
