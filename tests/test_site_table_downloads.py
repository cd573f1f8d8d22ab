"""A table's CSV and JSON downloads, written a column at a time, are the bytes of the documented
row-by-row rules: each record ``json.dumps(record, ensure_ascii=False, allow_nan=False)`` one per
line (a link as its text, an interval as ``{value, low, high}``, NaN as null), and each CSV row by
``csv.writer``, a cell by the one cell rule (an interval as its value and two bounds)."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsite.site.tables import Column, Link, ShownInterval, Table
from evalsite.site.tables import _csv as _cell  # one cell's text: the rule itself; its columns are what is checked

TEXTS = st.text(
    alphabet=st.sampled_from(["a", "=", "+", "-", "@", "\t", "\r", "\n", ",", '"', "{", "}", "é", "\u2028", "\x00"]),
    max_size=6,
)
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    FLOATS,
    TEXTS,
    st.builds(Link, TEXTS, TEXTS),
    st.builds(ShownInterval, st.one_of(st.none(), FLOATS)),
    st.dictionaries(TEXTS, st.integers(), max_size=2),
    st.lists(st.integers(), max_size=2),
)
NAMES = st.sampled_from(["", "x", "{a}}", 'é"\u2028', "c0"])
KINDS = st.sampled_from(["text", "number", "interval"])


def _plain(value: Any) -> Any:
    if isinstance(value, Link):
        return value.text
    if isinstance(value, ShownInterval):
        return {"value": value.value, "low": value.low, "high": value.high}
    return None if isinstance(value, float) and math.isnan(value) else value


def reference_json(table: Table) -> str:
    records = [{c.name: _plain(row.get(c.key)) for c in table.columns} for row in table.rows]
    lines = [json.dumps(record, ensure_ascii=False, allow_nan=False) for record in records]
    return "[\n" + ",\n".join(lines) + "\n]\n" if lines else "[]\n"


def reference_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([name for c in table.columns for name in c.csv_names()])
    for row in table.rows:
        cells: list[str] = []
        for c in table.columns:
            value = row.get(c.key)
            if c.kind == "interval":
                shown = value if isinstance(value, ShownInterval) else ShownInterval(value)
                cells += [_cell(shown.value), _cell(shown.low), _cell(shown.high)]
            else:
                cells.append(_cell(_plain(value)))
        writer.writerow(cells)
    return buffer.getvalue()


def _outcome(write: Any) -> str:
    try:
        return str(write())
    except ValueError:  # an infinity, which JSON cannot hold
        return "ValueError"


@st.composite
def tables(draw: st.DrawFn) -> Table:
    columns = [Column(f"c{n}", f"C{n}", draw(KINDS), download=draw(NAMES)) for n in range(draw(st.integers(0, 4)))]
    same = {c.key: draw(VALUES) for c in columns}  # a column of one value takes the fast paths
    rows = []
    for _ in range(draw(st.integers(0, 5))):
        rows.append(
            {c.key: same[c.key] if draw(st.booleans()) else draw(VALUES) for c in columns if draw(st.integers(0, 9))}
        )
    return Table("t", columns, rows)


@settings(max_examples=600, deadline=None)
@given(tables())
def test_the_downloads_are_the_bytes_of_the_row_by_row_rules(table):
    assert table.to_csv() == reference_csv(table)
    assert _outcome(table.to_json) == _outcome(lambda: reference_json(table))
    if _outcome(table.to_json) != "ValueError":
        assert table.records() == json.loads(table.to_json())


@pytest.mark.parametrize(
    "values", [["a", None, "=b"], [1, 2.5, None, -0.0, 1e-05, 10**30], [float("nan"), 1.0], [True, None]]
)
def test_a_column_of_one_kind_of_value(values):
    table = Table("t", [Column("v", "v")], [{"v": value} for value in values])
    assert (table.to_csv(), table.to_json()) == (reference_csv(table), reference_json(table))
