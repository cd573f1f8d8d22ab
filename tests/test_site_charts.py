"""Inline SVG charts: well-formed, escaped, deterministic, and a correct Pareto frontier."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from evalsite.site.charts import Point, cd_diagram, interval_bars, line_chart, pareto_frontier, quality_cost_scatter

SVG = "{http://www.w3.org/2000/svg}"


def dominated(point: Point, others: list[Point]) -> bool:
    """Some other point is at least as cheap and as good, and strictly better on one axis."""
    return any(o.x <= point.x and o.y >= point.y and (o.x < point.x or o.y > point.y) for o in others)


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=12))
def test_the_frontier_is_exactly_the_undominated_points(pairs):
    points = [Point(f"p{i}", float(x), float(y)) for i, (x, y) in enumerate(pairs)]
    frontier = pareto_frontier(points)
    undominated = {(p.x, p.y) for p in points if not dominated(p, points)}
    assert {(p.x, p.y) for p in frontier} == undominated
    assert [p.x for p in frontier] == sorted(p.x for p in frontier)  # cheapest first, quality rising
    assert all(a.y < b.y for a, b in zip(frontier, frontier[1:]))


def test_charts_are_well_formed_svg_with_escaped_labels_and_stable_bytes():
    evil = '<script>alert(1)</script>" onload="x'
    points = [Point(evil, 0.001, 0.5, 0.4, 0.6, href="../runs/a.html"), Point("b", 0.01, 0.7), Point("c", 0.2, 0.6)]
    charts = [
        quality_cost_scatter(points, x_label="cost", y_label="score", title=evil),
        line_chart({"s": points}, x_label="temperature", y_label="score", title="t"),
        interval_bars(points, x_label="score", title="t"),
        cd_diagram([evil, "b", "c"], [1.2, 2.0, 2.8], 0.9, [[0, 1], [1, 2]], title="cd"),
    ]
    for chart in charts:
        root = ET.fromstring(str(chart))
        assert root.tag == f"{SVG}svg"
        assert not [e for e in root.iter() if e.tag in (f"{SVG}script", "script")]
        assert not [name for e in root.iter() for name in e.attrib if name.startswith("on")]
        assert evil in "".join(root.itertext())  # shown, as text
    assert str(quality_cost_scatter(points, x_label="cost", y_label="score", title="t")) == \
        str(quality_cost_scatter(list(reversed(points)), x_label="cost", y_label="score", title="t"))


def test_costs_spanning_orders_of_magnitude_get_a_log_axis_that_says_so():
    spread = [Point("a", 0.0001, 0.5), Point("b", 0.1, 0.9)]
    assert "(log scale)" in str(quality_cost_scatter(spread, x_label="cost", y_label="score", title="t"))
    close = [Point("a", 0.01, 0.5), Point("b", 0.02, 0.9)]
    assert "(log scale)" not in str(quality_cost_scatter(close, x_label="cost", y_label="score", title="t"))


def test_the_cd_diagram_draws_one_bar_per_tied_group_and_the_critical_difference():
    svg = ET.fromstring(str(cd_diagram(["a", "b", "c", "d"], [1.0, 1.5, 3.0, 3.4], 0.8, [[0, 1], [2, 3]], title="cd")))
    ties = [e for e in svg.iter(f"{SVG}line") if e.get("class") == "chart-tie"]
    assert len(ties) == 2
    assert "CD = 0.80" in "".join(svg.itertext())
