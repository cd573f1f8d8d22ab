"""The ``plot`` step's picture: one row per arm, its mean as a dot and its interval as a line, on a
shared axis, as a self-contained SVG file (no fonts, scripts or links to fetch; every label escaped).

Pure: text in, text out, so the step writes it and a test reads it back as XML.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from xml.sax.saxutils import escape

WIDTH = 640
ROW = 28
LEFT = 160  # the arm labels' column
RIGHT = 24
TOP = 40
BOTTOM = 36
TICKS = 5


@dataclass(frozen=True)
class Estimate:
    """One arm's row: its mean and interval (``low``/``high`` None when it has none)."""

    label: str
    mean: float
    low: float | None = None
    high: float | None = None


def axis_range(estimates: list[Estimate]) -> tuple[float, float]:
    """The axis: every mean and interval end, widened to [0, 1] when they all lie in it (a score)."""
    values = [v for e in estimates for v in (e.mean, e.low, e.high) if v is not None and math.isfinite(v)]
    low, high = min(values), max(values)
    if 0 <= low and high <= 1:
        return 0.0, 1.0
    if low == high:
        return low - 1, high + 1
    pad = (high - low) * 0.05
    return low - pad, high + pad


def interval_chart(estimates: list[Estimate], title: str, metric: str) -> str:
    """The SVG text: a title, a labelled axis with :data:`TICKS` + 1 ticks, a row per estimate."""
    if not estimates:
        raise ValueError("an interval chart needs at least one estimate")
    low, high = axis_range(estimates)
    height = TOP + ROW * len(estimates) + BOTTOM
    plot_width = WIDTH - LEFT - RIGHT

    def x(value: float) -> float:
        return round(LEFT + (value - low) / (high - low) * plot_width, 2)

    axis_y = TOP + ROW * len(estimates)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<text x="{LEFT}" y="20" font-size="14">{escape(title)}</text>',
        f'<line class="axis" x1="{LEFT}" y1="{axis_y}" x2="{WIDTH - RIGHT}" y2="{axis_y}" stroke="#555"/>',
    ]
    for step in range(TICKS + 1):
        value = low + (high - low) * step / TICKS
        parts.append(f'<text class="tick" x="{x(value)}" y="{axis_y + 16}" text-anchor="middle">{value:.3g}</text>')
    parts.append(f'<text x="{LEFT + plot_width / 2}" y="{axis_y + 32}" text-anchor="middle">{escape(metric)}</text>')
    for row, estimate in enumerate(estimates):
        y = TOP + ROW * row + ROW / 2
        parts.append(f'<g class="estimate" data-mean="{estimate.mean!r}">')
        parts.append(f'<text x="{LEFT - 8}" y="{y + 4}" text-anchor="end">{escape(estimate.label)}</text>')
        if estimate.low is not None and estimate.high is not None and math.isfinite(estimate.low + estimate.high):
            parts.append(f'<line class="interval" x1="{x(estimate.low)}" y1="{y}" x2="{x(estimate.high)}" y2="{y}" '
                         f'stroke="#1f5fa8" stroke-width="2"/>')
        parts.append(f'<circle class="mean" cx="{x(estimate.mean)}" cy="{y}" r="4" fill="#1f5fa8"/>')
        parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
