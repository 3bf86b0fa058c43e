"""Empirical CDFs of per-call latencies as one self-contained SVG, with no plotting dependency.

The picture is plain SVG 1.1: no script, no stylesheet, an explicit fill or stroke on every
element and a white background, so GitHub (which shows an SVG through ``<img>``) renders it
the same as a browser does, in a light or a dark theme. The x axis is logarithmic: the floor
answers in a fraction of a millisecond while a slow call can take many, and a log axis keeps
both the bulk and the tail readable.
"""

import math
from collections.abc import Mapping, Sequence
from xml.sax.saxutils import escape, quoteattr

from benchmarks.harness.stats import percentile

WIDTH, PLOT_HEIGHT = 900, 420
LEFT, RIGHT, TOP = 80, 30, 76  # margins around the plot area, px
LEGEND_ROW = 22
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
# Okabe-Ito colours: told apart with the common colour-vision deficiencies.
COLOURS = {
    "floor": "#555555",
    "ours": "#0072B2",
    "ours-basetool": "#009E73",
    "argentic": "#D55E00",
}
SPARE_COLOURS = ("#CC79A7", "#E69F00", "#56B4E9", "#000000")
SMALLEST_MS = 0.001  # a latency rounded to 0.000 ms still needs a place on a log axis
STEP_PX = 0.75  # curve points closer than this to the previous one are left out


def log_domain(low: float, high: float) -> tuple[float, float]:
    """The x axis' ends for data from ``low`` to ``high`` (both > 0).

    A little room each side, and at least half a decade in all, so the axis always has two
    ticks inside (see ``log_ticks``), also when every value is the same.
    """
    span = math.log10(high / low)
    room = 10 ** max(0.03 * span, 0.02, (0.5 - span) / 2)
    return low / room, high * room


def log_ticks(low: float, high: float) -> list[float]:
    """Tick values inside ``low``..``high`` (both > 0) for a log axis.

    1, 2 and 5 of each decade, or every digit when the axis spans too little for four of
    those.
    """
    first = math.floor(math.log10(low))
    last = math.ceil(math.log10(high))
    ticks: list[float] = []
    for mantissas in ((1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        # Parsing the decimal text gives 0.3, not 3 * 0.1 = 0.30000000000000004.
        candidates = [float(f"{m}e{e}") for e in range(first, last + 1) for m in mantissas]
        ticks = [c for c in candidates if low <= c <= high]
        if len(ticks) >= 4:
            break
    return ticks


class _LogScale:
    """Maps a latency in ms onto the plot's x pixels, logarithmically."""

    def __init__(self, low: float, high: float, left: float, right: float) -> None:
        self.low, self.span = math.log10(low), math.log10(high) - math.log10(low)
        self.left, self.width = left, right - left

    def __call__(self, value: float) -> float:
        return self.left + (math.log10(value) - self.low) / self.span * self.width


class _LinearScale:
    """Maps a fraction 0..1 onto the plot's y pixels, 0 at the bottom."""

    def __init__(self, top: float, bottom: float) -> None:
        self.top, self.height = top, bottom - top

    def __call__(self, fraction: float) -> float:
        return self.top + (1 - fraction) * self.height


def _curve(values: Sequence[float], x: _LogScale, y: _LinearScale) -> str:
    """The ECDF of ``values`` as polyline points: a step up by 1/n at each sorted value."""
    ordered = sorted(max(v, SMALLEST_MS) for v in values)
    n = len(ordered)
    corners: list[tuple[float, float]] = []
    for i, value in enumerate(ordered):
        corners.append((x(value), y(i / n)))
        corners.append((x(value), y((i + 1) / n)))
    kept = [corners[0]]
    for px, py in corners[1:-1]:
        last_x, last_y = kept[-1]
        if abs(px - last_x) >= STEP_PX or abs(py - last_y) >= STEP_PX:
            kept.append((px, py))
    kept.append(corners[-1])
    return " ".join(f"{px:.1f},{py:.1f}" for px, py in kept)


def _text(x: float, y: float, content: str, size: int = 13, **attrs: str) -> str:
    extra = "".join(f" {key.replace('_', '-')}={quoteattr(v)}" for key, v in attrs.items())
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-family={quoteattr(FONT)} font-size="{size}" '
        f'fill="#222222"{extra}>{escape(content)}</text>'
    )


def cdf_svg(series: Mapping[str, Sequence[float]], title: str, subtitle: str = "") -> str:
    """An SVG document with one empirical CDF line per entry of ``series``.

    Args:
        series: latencies in ms per implementation, in legend order; empty entries are
            left out. Each line is drawn as ``<polyline id="cdf-<name>">``.
        title: the heading above the plot.
        subtitle: a smaller second line under the heading.

    Raises:
        ValueError: when no entry has a value.
    """
    lines = {name: list(values) for name, values in series.items() if values}
    if not lines:
        raise ValueError("no latencies to draw")
    everything = [max(v, SMALLEST_MS) for values in lines.values() for v in values]
    low, high = log_domain(min(everything), max(everything))
    plot_left, plot_right = LEFT, WIDTH - RIGHT
    plot_top, plot_bottom = TOP, TOP + PLOT_HEIGHT
    # The legend goes under the plot, where it cannot hide a line.
    legend_top = plot_bottom + 62
    height = legend_top + LEGEND_ROW * len(lines) + 8
    x = _LogScale(low, high, plot_left, plot_right)
    y = _LinearScale(plot_top, plot_bottom)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        _text(WIDTH / 2, 30, title, 17, text_anchor="middle", font_weight="bold"),
    ]
    if subtitle:
        out.append(_text(WIDTH / 2, 52, subtitle, 13, text_anchor="middle", fill_opacity="0.8"))

    # Grid, tick labels and axis titles.
    for tick in log_ticks(low, high):
        px = x(tick)
        out.append(
            f'<line x1="{px:.1f}" y1="{plot_top}" x2="{px:.1f}" y2="{plot_bottom}" '
            'stroke="#e3e3e3" stroke-width="1"/>'
        )
        out.append(_text(px, plot_bottom + 18, f"{tick:g}", 12, text_anchor="middle"))
    for tenth in range(11):
        py = y(tenth / 10)
        out.append(
            f'<line x1="{plot_left}" y1="{py:.1f}" x2="{plot_right}" y2="{py:.1f}" '
            'stroke="#e3e3e3" stroke-width="1"/>'
        )
        out.append(_text(plot_left - 8, py + 4, f"{tenth / 10:.1f}", 12, text_anchor="end"))
    middle = y(0.5)
    out.append(
        f'<line x1="{plot_left}" y1="{middle:.1f}" x2="{plot_right}" y2="{middle:.1f}" '
        'stroke="#999999" stroke-width="1" stroke-dasharray="5,4"/>'
    )
    # At the right end: a line reaches 0.5 there only if its median is the slowest call.
    out.append(
        _text(plot_right - 6, middle - 5, "median", 11, text_anchor="end", fill_opacity="0.7")
    )
    out.append(
        f'<rect x="{plot_left}" y="{plot_top}" width="{plot_right - plot_left}" '
        f'height="{plot_bottom - plot_top}" fill="none" stroke="#888888" stroke-width="1"/>'
    )
    out.append(
        _text(
            (plot_left + plot_right) / 2,
            plot_bottom + 42,
            "latency per call, ms (log scale)",
            13,
            text_anchor="middle",
        )
    )
    axis_y = (plot_top + plot_bottom) / 2
    out.append(
        _text(
            22,
            axis_y,
            "fraction of calls at or below",
            13,
            text_anchor="middle",
            transform=f"rotate(-90 22 {axis_y:.1f})",
        )
    )

    # One line per implementation, and its legend entry.
    spare = iter(SPARE_COLOURS * (1 + len(lines) // len(SPARE_COLOURS)))
    colours = {name: COLOURS.get(name) or next(spare) for name in lines}
    for k, (name, values) in enumerate(lines.items()):
        out.append(
            f"<polyline id={quoteattr(f'cdf-{name}')} points={quoteattr(_curve(values, x, y))} "
            f'fill="none" stroke="{colours[name]}" stroke-width="2" '
            'stroke-linejoin="round" stroke-linecap="round"/>'
        )
        label = (
            f"{name}: p50 {percentile(values, 50):.3f} ms, p99 {percentile(values, 99):.3f} ms, "
            f"max {max(values):.3f} ms ({len(values)} calls)"
        )
        ly = legend_top + k * LEGEND_ROW
        out.append(
            f'<line x1="{plot_left}" y1="{ly - 4}" x2="{plot_left + 26}" y2="{ly - 4}" '
            f'stroke="{colours[name]}" stroke-width="3"/>'
        )
        out.append(_text(plot_left + 34, ly, label, 13))
    out.append("</svg>")
    return "\n".join(out) + "\n"
