"""A notebook's view of the reports: ``Leaderboard`` and ``ComparisonReport`` give ``to_json()``
(the command's ``--json``), ``table()`` (the rows ``-o FILE.csv`` writes, same columns, same
values), ``to_pandas()`` and an escaped ``_repr_html_()``."""

from __future__ import annotations

import csv
import dataclasses
from html.parser import HTMLParser

import pandas
import pytest

import evalsite
from evalsite.analysis.rows import cell


def csv_rows(path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def as_csv(rows: list[dict]) -> list[dict[str, str]]:
    """The rows as a CSV reader gives them back: every cell as its text."""
    return [{key: str(cell(value)) for key, value in row.items()} for row in rows]


class Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._in_cell = False

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        self._in_cell = tag in ("td", "th")
        if self._in_cell:
            self.rows[-1].append("")

    def handle_endtag(self, tag):
        self._in_cell = False

    def handle_data(self, data):
        if self._in_cell:
            self.rows[-1][-1] += data


def html_cells(markup: str) -> list[list[str]]:
    parser = Cells()
    parser.feed(markup)
    return parser.rows


def test_the_leaderboard_is_the_clis_json_and_csv(example_with_runs, cli):
    board = evalsite.leaderboard()
    assert board.to_json() == cli.json("leaderboard")
    assert cli("leaderboard", "-o", "board.csv").exit_code == 0
    header, written = csv_rows(example_with_runs / "board.csv")
    table = board.table()
    assert list(table[0]) == header == list(board.TABLE_COLUMNS)
    assert as_csv(table) == written
    assert [row["arm"] for row in table] == ["careful", "left_to_right", "sampler"]
    assert table[0]["places"] == "1" and table[0]["items"] == 60 and table[0]["cases"] == 180
    assert table[0]["value"] == board.arms[0].summary.mean


def test_the_leaderboard_in_pandas_and_in_html(example_with_runs):
    board = evalsite.leaderboard()
    frame = board.to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns) == list(board.TABLE_COLUMNS)
    assert frame["arm"].tolist() == ["careful", "left_to_right", "sampler"]
    assert frame.loc[0, "value"] == pytest.approx(board.arms[0].summary.mean)
    cells = html_cells(board._repr_html_())
    assert cells[0] == list(board.TABLE_COLUMNS)
    assert cells[1:] == [list(row.values()) for row in as_csv(board.table())]


def test_the_html_view_escapes_what_it_shows(example_with_runs):
    board = evalsite.leaderboard()
    hostile = dataclasses.replace(board, arms=(dataclasses.replace(board.arms[0], label="<script>alert(1)</script>"),
                                               *board.arms[1:]))
    markup = hostile._repr_html_()
    assert "<script>" not in markup and "&lt;script&gt;alert(1)&lt;/script&gt;" in markup
    assert html_cells(markup)[1][3] == "<script>alert(1)</script>"  # the arm column, shown as text


def test_the_comparison_is_the_clis_json_and_csv(example_with_runs, cli):
    runs = {run.header.arm_id: run.run_id for run in evalsite.load_runs()}
    report = evalsite.compare(runs["sampler"], baseline=runs["careful"])
    assert report.to_json() == cli.json("compare", runs["sampler"], "--baseline", runs["careful"])
    assert cli("compare", runs["sampler"], "--baseline", runs["careful"], "-o", "items.csv").exit_code == 0
    header, written = csv_rows(example_with_runs / "items.csv")
    table = report.table()
    assert header == list(report.TABLE_COLUMNS) == ["item_id", "classification", "baseline_score", "score", "delta",
                                                    "rescored", "note"]
    assert len(table) == 60 and as_csv(table) == written
    regressed = [row for row in table if row["classification"] == "regressed"]
    assert regressed and all(row["score"] < row["baseline_score"] for row in regressed)
    assert report.to_pandas()["item_id"].tolist() == [row["item_id"] for row in table]


def test_to_pandas_without_pandas_says_how_to_get_it(example_with_runs, monkeypatch):
    board = evalsite.leaderboard()
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)
    with pytest.raises(ImportError, match=r"^to_pandas needs pandas: pip install pandas$"):
        board.to_pandas()
