"""Charts as inline SVG, generated in Python: no JavaScript, no network, deterministic text.

Every function returns :class:`markupsafe.Markup` holding one ``<svg>``; every label is escaped.
Colours come from CSS classes (``chart-*`` in the theme's stylesheet), so a project can restyle
charts without touching Python. Coordinates are printed with one decimal, so the same numbers
always give the same bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH, HEIGHT = 640, 360
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 24, 16, 52


@dataclass(frozen=True)
class Point:
    """One labelled point; ``low``/``high`` draw a vertical interval; ``href`` is page-relative."""

    label: str
    x: float
    y: float
    low: float | None = None
    high: float | None = None
    href: str | None = None


@dataclass(frozen=True)
class Axis:
    lo: float
    hi: float
    start: float
    end: float
    log: bool = False

    def __call__(self, value: float) -> float:
        if self.log:
            value, lo, hi = math.log10(value), math.log10(self.lo), math.log10(self.hi)
        else:
            lo, hi = self.lo, self.hi
        span = hi - lo or 1.0
        return self.start + (value - lo) / span * (self.end - self.start)


def _f(value: float) -> str:
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks, value = [], first
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    ticks = []
    for exponent in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10 ** exponent
            if lo <= value <= hi:
                ticks.append(value)
    return ticks


def tick_label(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000 or abs(value) < 0.001:
        return f"{value:.0e}"
    return f"{value:.6f}".rstrip("0").rstrip(".")


def pareto_frontier(points: list[Point]) -> list[Point]:
    """Points no other point beats on both axes (lower x = cheaper, higher y = better), by x."""
    frontier: list[Point] = []
    best = -math.inf
    for point in sorted(points, key=lambda p: (p.x, -p.y, p.label)):
        if point.y > best:
            frontier.append(point)
            best = point.y
    return frontier


def _padded(lo: float, hi: float, log: bool) -> tuple[float, float]:
    if log:
        return lo / 1.5, hi * 1.5
    pad = (hi - lo) * 0.08 or abs(hi) * 0.1 or 1.0
    return lo - pad, hi + pad


def _frame(title: str, body: list[str], height: int = HEIGHT) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
        f'role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def _axes(x: Axis, y: Axis, x_ticks: list[float], y_ticks: list[float], x_label: str, y_label: str) -> list[str]:
    parts = [
        f'<line class="chart-axis" x1="{_f(x.start)}" y1="{_f(y.start)}" x2="{_f(x.end)}" y2="{_f(y.start)}"/>',
        f'<line class="chart-axis" x1="{_f(x.start)}" y1="{_f(y.start)}" x2="{_f(x.start)}" y2="{_f(y.end)}"/>',
    ]
    for tick in x_ticks:
        px = x(tick)
        parts.append(f'<line class="chart-grid" x1="{_f(px)}" y1="{_f(y.start)}" x2="{_f(px)}" y2="{_f(y.end)}"/>')
        parts.append(f'<text class="chart-tick" x="{_f(px)}" y="{_f(y.start + 16)}" text-anchor="middle">{escape(tick_label(tick))}</text>')
    for tick in y_ticks:
        py = y(tick)
        parts.append(f'<line class="chart-grid" x1="{_f(x.start)}" y1="{_f(py)}" x2="{_f(x.end)}" y2="{_f(py)}"/>')
        parts.append(f'<text class="chart-tick" x="{_f(x.start - 6)}" y="{_f(py + 4)}" text-anchor="end">{escape(tick_label(tick))}</text>')
    parts.append(f'<text class="chart-label" x="{_f((x.start + x.end) / 2)}" y="{HEIGHT - 10}" text-anchor="middle">{escape(x_label)}</text>')
    parts.append(
        f'<text class="chart-label" x="14" y="{_f((y.start + y.end) / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_f((y.start + y.end) / 2)})">{escape(y_label)}</text>'
    )
    return parts


def _point_title(label: str, value: float, low: float | None, high: float | None) -> str:
    """A point's tooltip: its label, the value drawn and the interval drawn, as the tables print them."""
    interval = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return f"<title>{escape(label)}: {value:.3f}{interval}</title>"


def _marker(point: Point, px: float, py: float, y: Axis, css: str) -> str:
    parts = []
    if point.low is not None and point.high is not None:
        parts.append(f'<line class="chart-interval" x1="{_f(px)}" y1="{_f(y(point.low))}" x2="{_f(px)}" y2="{_f(y(point.high))}"/>')
    parts.append(f'<circle class="{css}" cx="{_f(px)}" cy="{_f(py)}" r="5">{_point_title(point.label, point.y, point.low, point.high)}</circle>')
    parts.append(f'<text class="chart-point-label" x="{_f(px + 8)}" y="{_f(py - 8)}">{escape(point.label)}</text>')
    inner = "".join(parts)
    return f'<a href="{escape(point.href)}">{inner}</a>' if point.href else f"<g>{inner}</g>"


def quality_cost_scatter(points: list[Point], *, x_label: str, y_label: str, title: str) -> Markup:
    """Quality (y) against cost (x) with the Pareto frontier drawn as a step line.

    The x axis turns logarithmic when costs span more than a factor of 20 (and says so).
    """
    if not points:
        return Markup("")
    xs, ys = [p.x for p in points], [v for p in points for v in (p.y, p.low, p.high) if v is not None]
    log = min(xs) > 0 and max(xs) / min(xs) > 20
    x_lo, x_hi = _padded(min(xs), max(xs), log)
    if not log:
        x_lo = max(x_lo, 0.0) if min(xs) >= 0 else x_lo
    y_lo, y_hi = _padded(min(ys), max(ys), False)
    x = Axis(x_lo, x_hi, MARGIN_LEFT, WIDTH - MARGIN_RIGHT, log)
    y = Axis(y_lo, y_hi, HEIGHT - MARGIN_BOTTOM, MARGIN_TOP)
    x_ticks = log_ticks(x_lo, x_hi) if log else nice_ticks(x_lo, x_hi)
    body = _axes(x, y, [t for t in x_ticks if x_lo <= t <= x_hi], [t for t in nice_ticks(y_lo, y_hi) if y_lo <= t <= y_hi],
                 x_label + (" (log scale)" if log else ""), y_label)
    frontier = pareto_frontier(points)
    if len(frontier) > 1:
        path = [f"M{_f(x(frontier[0].x))},{_f(y(frontier[0].y))}"]
        for point in frontier[1:]:
            path.append(f"H{_f(x(point.x))}V{_f(y(point.y))}")
        body.append(f'<path class="chart-frontier" d="{"".join(path)}"/>')
    on_frontier = {id(p) for p in frontier}
    for point in sorted(points, key=lambda p: (p.x, p.y, p.label)):
        css = "chart-point chart-point-frontier" if id(point) in on_frontier else "chart-point"
        body.append(_marker(point, x(point.x), y(point.y), y, css))
    return _frame(title, body)


def line_chart(series: dict[str, list[Point]], *, x_label: str, y_label: str, title: str) -> Markup:
    """One line per series (e.g. score against a swept parameter), points sorted by x."""
    points = [p for line in series.values() for p in line]
    if not points:
        return Markup("")
    ys = [v for p in points for v in (p.y, p.low, p.high) if v is not None]
    x_lo, x_hi = _padded(min(p.x for p in points), max(p.x for p in points), False)
    y_lo, y_hi = _padded(min(ys), max(ys), False)
    x = Axis(x_lo, x_hi, MARGIN_LEFT, WIDTH - MARGIN_RIGHT)
    y = Axis(y_lo, y_hi, HEIGHT - MARGIN_BOTTOM, MARGIN_TOP)
    body = _axes(x, y, [t for t in nice_ticks(x_lo, x_hi) if x_lo <= t <= x_hi],
                 [t for t in nice_ticks(y_lo, y_hi) if y_lo <= t <= y_hi], x_label, y_label)
    for index, (name, line) in enumerate(sorted(series.items())):
        ordered = sorted(line, key=lambda p: p.x)
        path = "".join(f"{'M' if i == 0 else 'L'}{_f(x(p.x))},{_f(y(p.y))}" for i, p in enumerate(ordered))
        body.append(f'<path class="chart-line chart-series-{index % 6}" d="{path}"><title>{escape(name)}</title></path>')
        for point in ordered:
            body.append(_marker(point, x(point.x), y(point.y), y, f"chart-point chart-series-{index % 6}"))
    return _frame(title, body)


def interval_bars(points: list[Point], *, x_label: str, title: str) -> Markup:
    """A forest plot: one row per point (label, value, interval), in the order given."""
    if not points:
        return Markup("")
    row, label_width = 26, 180
    height = MARGIN_TOP + row * len(points) + MARGIN_BOTTOM
    values = [v for p in points for v in (p.x, p.low, p.high) if v is not None]
    lo, hi = _padded(min(values), max(values), False)
    x = Axis(lo, hi, label_width, WIDTH - MARGIN_RIGHT)
    bottom = MARGIN_TOP + row * len(points)
    body = [f'<line class="chart-axis" x1="{label_width}" y1="{bottom}" x2="{WIDTH - MARGIN_RIGHT}" y2="{bottom}"/>']
    for tick in (t for t in nice_ticks(lo, hi) if lo <= t <= hi):
        px = x(tick)
        body.append(f'<line class="chart-grid" x1="{_f(px)}" y1="{MARGIN_TOP}" x2="{_f(px)}" y2="{bottom}"/>')
        body.append(f'<text class="chart-tick" x="{_f(px)}" y="{bottom + 16}" text-anchor="middle">{escape(tick_label(tick))}</text>')
    body.append(f'<text class="chart-label" x="{_f((label_width + WIDTH - MARGIN_RIGHT) / 2)}" y="{height - 10}" text-anchor="middle">{escape(x_label)}</text>')
    for index, point in enumerate(points):
        cy = MARGIN_TOP + row * index + row / 2
        body.append(f'<text class="chart-tick" x="{label_width - 8}" y="{_f(cy + 4)}" text-anchor="end">'
                    f'<title>{escape(point.label)}</title>{escape(_short(point.label, 24))}</text>')
        if point.low is not None and point.high is not None:
            body.append(f'<line class="chart-interval" x1="{_f(x(point.low))}" y1="{_f(cy)}" x2="{_f(x(point.high))}" y2="{_f(cy)}"/>')
        body.append(f'<circle class="chart-point" cx="{_f(x(point.x))}" cy="{_f(cy)}" r="4">'
                    f'{_point_title(point.label, point.x, point.low, point.high)}</circle>')
    return _frame(title, body, height)


def cd_diagram(names: list[str], mean_ranks: list[float], critical_difference: float,
               groups: list[list[int]], *, title: str) -> Markup:
    """Demšar's critical-difference diagram: arms on an axis of mean rank (best on the left; the axis
    spans the whole ranks around the observed ones), a bar as long as the critical difference, and
    a thick line under each group of arms the test cannot separate."""
    count = len(names)
    if count < 2:
        return Markup("")
    left, right, axis_y = 150, WIDTH - 150, 56
    low, high = math.floor(min(mean_ranks)), math.ceil(max(mean_ranks))
    high = max(high, low + 1)
    x = Axis(low, high, left, right)
    tied = [g for g in groups if len(g) > 1]
    rows_top = axis_y + 22 + 10 * len(tied)
    order = sorted(range(count), key=lambda i: (mean_ranks[i], names[i]))
    half = math.ceil(count / 2)
    height = rows_top + 20 * max(half, count - half) + 16
    body = [f'<line class="chart-axis" x1="{left}" y1="{axis_y}" x2="{right}" y2="{axis_y}"/>']
    for rank in range(low, high + 1):
        body.append(f'<line class="chart-axis" x1="{_f(x(rank))}" y1="{axis_y - 5}" x2="{_f(x(rank))}" y2="{axis_y}"/>')
        body.append(f'<text class="chart-tick" x="{_f(x(rank))}" y="{axis_y - 9}" text-anchor="middle">{rank}</text>')
    if math.isfinite(critical_difference):
        end = x(low + min(critical_difference, high - low))
        body.append(f'<line class="chart-cd" x1="{left}" y1="18" x2="{_f(end)}" y2="18"/>')
        body.append(f'<text class="chart-tick" x="{_f(end + 6)}" y="22">CD = {critical_difference:.2f}</text>')
    for level, group in enumerate(tied):
        ranks = [mean_ranks[i] for i in group]
        y = axis_y + 14 + 10 * level
        body.append(f'<line class="chart-tie" x1="{_f(x(min(ranks)) - 3)}" y1="{y}" x2="{_f(x(max(ranks)) + 3)}" y2="{y}"/>')
    for position, arm in enumerate(order):
        on_left = position < half
        row = position if on_left else count - 1 - position
        y = rows_top + 20 * row
        px = x(mean_ranks[arm])
        label_x = left - 10 if on_left else right + 10
        body.append(f'<path class="chart-leader" d="M{_f(px)},{axis_y}V{y}H{_f(label_x + (6 if on_left else -6))}"/>')
        anchor = "end" if on_left else "start"
        body.append(f'<text class="chart-tick" x="{_f(label_x)}" y="{y + 4}" text-anchor="{anchor}">'
                    f'<title>{escape(names[arm])}</title>{escape(_short(names[arm]))} ({mean_ranks[arm]:.2f})</text>')
    return _frame(title, body, height)


def _short(name: str, chars: int = 16) -> str:
    """An arm name cut to ``chars`` characters with an ellipsis, to fit a chart's label column (16 fit
    the CD diagram's 140 pixels); the whole name stays in the label's tooltip and in every table."""
    return name if len(name) <= chars else name[:chars - 1] + "…"


def verdict_bar(counts: list[tuple[str, int]], *, title: str) -> Markup:
    """One stacked bar of item counts (e.g. improved / unchanged / regressed), each part labelled."""
    total = sum(count for _, count in counts)
    if total == 0:
        return Markup("")
    height, top, bar = 64, 8, 28
    x, body = 0.0, []
    for name, count in counts:
        if not count:
            continue
        width = (WIDTH - 2) * count / total
        body.append(f'<rect class="chart-verdict chart-verdict-{escape(name)}" x="{_f(1 + x)}" y="{top}" '
                    f'width="{_f(width)}" height="{bar}"><title>{escape(name)}: {count}</title></rect>')
        if width > 60:
            body.append(f'<text class="chart-verdict-label" x="{_f(1 + x + width / 2)}" y="{top + bar / 2 + 4}" '
                        f'text-anchor="middle">{count}</text>')
        x += width
    legend = " · ".join(f"{name} {count}" for name, count in counts)
    body.append(f'<text class="chart-tick" x="1" y="{top + bar + 20}">{escape(legend)}</text>')
    return _frame(title, body, height)


def dumbbells(rows: list[tuple[str, float, float]], *, x_label: str, title: str) -> Markup:
    """One row per item: a line from its baseline score to its current score, ends marked."""
    if not rows:
        return Markup("")
    row, label_width = 18, 150
    height = MARGIN_TOP + row * len(rows) + MARGIN_BOTTOM
    values = [v for _, before, after in rows for v in (before, after)]
    lo, hi = _padded(min(values), max(values), False)
    x = Axis(lo, hi, label_width, WIDTH - MARGIN_RIGHT)
    bottom = MARGIN_TOP + row * len(rows)
    body = [f'<line class="chart-axis" x1="{label_width}" y1="{bottom}" x2="{WIDTH - MARGIN_RIGHT}" y2="{bottom}"/>']
    for tick in (t for t in nice_ticks(lo, hi) if lo <= t <= hi):
        body.append(f'<line class="chart-grid" x1="{_f(x(tick))}" y1="{MARGIN_TOP}" x2="{_f(x(tick))}" y2="{bottom}"/>')
        body.append(f'<text class="chart-tick" x="{_f(x(tick))}" y="{bottom + 16}" text-anchor="middle">{escape(tick_label(tick))}</text>')
    body.append(f'<text class="chart-label" x="{_f((label_width + WIDTH - MARGIN_RIGHT) / 2)}" y="{height - 10}" text-anchor="middle">{escape(x_label)}</text>')
    for index, (label, before, after) in enumerate(rows):
        cy = MARGIN_TOP + row * index + row / 2
        kind = "up" if after > before else "down" if after < before else "same"
        body.append(f'<text class="chart-tick" x="{label_width - 8}" y="{_f(cy + 4)}" text-anchor="end">{escape(label)}</text>')
        body.append(f'<line class="chart-dumbbell chart-dumbbell-{kind}" x1="{_f(x(before))}" y1="{_f(cy)}" x2="{_f(x(after))}" y2="{_f(cy)}"/>')
        body.append(f'<circle class="chart-before" cx="{_f(x(before))}" cy="{_f(cy)}" r="3.5"><title>{escape(label)}: baseline {before:.3f}</title></circle>')
        body.append(f'<circle class="chart-after chart-dumbbell-{kind}" cx="{_f(x(after))}" cy="{_f(cy)}" r="4"><title>{escape(label)}: current {after:.3f}</title></circle>')
    return _frame(title, body, height)


def sequence_chart(looks: list[tuple[int, float, float]], *, stop: int, margin: float | None, title: str,
                   stop_label: str) -> Markup:
    """A ``stop_when`` pair's confidence sequence narrowing look by look: the band of each look's
    (items, low, high), 0 and ±``margin`` as guides, the look it stopped at marked."""
    if not looks:
        return Markup("")
    values = [v for _, low, high in looks for v in (low, high)] + [0.0] + ([margin, -margin] if margin else [])
    y_lo, y_hi = _padded(min(values), max(values), False)
    x = Axis(0.0, float(max(n for n, _, _ in looks)), MARGIN_LEFT, WIDTH - MARGIN_RIGHT)
    y = Axis(y_lo, y_hi, HEIGHT - MARGIN_BOTTOM, MARGIN_TOP)
    body = _axes(x, y, [t for t in nice_ticks(0.0, x.hi) if 0 <= t <= x.hi],
                 [t for t in nice_ticks(y_lo, y_hi) if y_lo <= t <= y_hi], "items seen by every arm", "difference (ahead − behind)")
    upper = "".join(f"{'M' if i == 0 else 'L'}{_f(x(n))},{_f(y(high))}" for i, (n, _, high) in enumerate(looks))
    lower = "".join(f"L{_f(x(n))},{_f(y(low))}" for n, low, _ in reversed(looks))
    body.append(f'<path class="chart-band" d="{upper}{lower}Z"/>')
    for guide, css in [(0.0, "chart-zero"), *([(margin, "chart-margin"), (-margin, "chart-margin")] if margin else [])]:
        body.append(f'<line class="{css}" x1="{_f(x.start)}" y1="{_f(y(guide))}" x2="{_f(x.end)}" y2="{_f(y(guide))}"/>')
    for n, low, high in looks:
        body.append(f'<line class="chart-interval" x1="{_f(x(n))}" y1="{_f(y(low))}" x2="{_f(x(n))}" y2="{_f(y(high))}">'
                    f"<title>{n} items: [{low:.3f}, {high:.3f}]</title></line>")
    body.append(f'<line class="chart-stop" x1="{_f(x(stop))}" y1="{_f(y.start)}" x2="{_f(x(stop))}" y2="{_f(y.end)}"/>')
    body.append(f'<text class="chart-point-label" x="{_f(x(stop) - 4)}" y="{_f(y.end + 12)}" text-anchor="end">'
                f"{escape(stop_label)}</text>")
    return _frame(title, body)
