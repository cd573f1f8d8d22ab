"""Text output fits the terminal: ``leaderboard``, ``compare`` and ``runs`` drawn on a real
pseudo-terminal of 80 and 50 columns (its size set with TIOCSWINSZ, COLUMNS unset) never write
a line wider than it; ``--wide``, and a pipe, print every column in full."""

from __future__ import annotations

import re
import unicodedata

import click
import pytest
from terminal_support import in_terminal

from evalsite.cli.fit import Fit, Shrink, cut, display_width, plan_table, wrap

COMMANDS = {
    "leaderboard": ("leaderboard",),
    "compare": ("compare", "careful@latest", "--baseline", "left_to_right@latest"),
    "runs": ("runs",),
}
#: Each table's header line, and columns only the full table has.
HEADER = {"leaderboard": "rank ", "runs": "run_id "}
FULL_ONLY = {"leaderboard": ("mean rank", "p95 ms", "cost/correct"), "runs": ("experiment", "pass_rate")}


def header_of(name: str, lines: list[str]) -> str:
    return next(line for line in lines if line.startswith(HEADER[name]))


def columns_of(line: str) -> int:
    """Terminal columns of one drawn line (wide characters count two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def drawn_lines(text: str) -> list[str]:
    return click.unstyle(text).replace("\r\n", "\n").rstrip("\n").split("\n")


@pytest.fixture(scope="module")
def run_project(example_runs):
    return example_runs


@pytest.fixture(scope="module")
def drawn(run_project):
    """``evalsite ARGS`` drawn on a terminal of ``columns`` columns (COLUMNS unset), its lines: each
    drawing made once for the file (the project is not changed by any test here, and a command's
    drawing depends only on its arguments and the terminal's size)."""
    drawings: dict[tuple[int, tuple[str, ...]], list[str]] = {}

    def draw(*args: str, columns: int) -> list[str]:
        if (columns, args) not in drawings:
            drawings[columns, args] = drawn_lines(in_terminal(run_project, *args, columns=columns, env={"COLUMNS": None}))
        return drawings[columns, args]
    return draw


@pytest.mark.parametrize("name", list(COMMANDS))
@pytest.mark.parametrize("columns", [80, 50])
def test_no_line_is_wider_than_the_terminal(drawn, name, columns):
    lines = drawn(*COMMANDS[name], columns=columns)
    widest = max(lines, key=columns_of)
    assert columns_of(widest) <= columns, widest
    wide = drawn(*COMMANDS[name], "--wide", columns=columns)
    assert max(map(columns_of, wide)) > columns  # the same report in full does not fit: fitting did something
    text = "\n".join(lines)
    for arm in ("careful", "left_to_right"):
        assert arm[:7] in text
    if name in FULL_ONLY:
        assert "--wide shows them" in text
        assert not all(word in header_of(name, lines) for word in FULL_ONLY[name])
        assert all(word in header_of(name, wide) for word in FULL_ONLY[name])


@pytest.mark.parametrize("name", list(COMMANDS))
def test_wide_on_a_terminal_is_the_full_report_a_pipe_gets(cli, run_project, drawn, name, monkeypatch):
    monkeypatch.chdir(run_project)
    monkeypatch.delenv("COLUMNS", raising=False)
    piped = cli(*COMMANDS[name])
    assert piped.exit_code == 0, piped.output
    wide = drawn(*COMMANDS[name], "--wide", columns=50)
    assert wide == piped.stdout.rstrip("\n").split("\n")


def test_columns_fits_a_pipe_too(cli, run_project, monkeypatch):
    monkeypatch.chdir(run_project)
    monkeypatch.setenv("COLUMNS", "60")
    result = cli("leaderboard")
    assert result.exit_code == 0, result.output
    assert max(map(columns_of, result.stdout.splitlines())) <= 60
    assert "(hidden at 60 columns: run, mean rank" in result.stdout


@pytest.mark.parametrize("columns", ["²", "9" * 5000, "-5", "wide"])
def test_a_columns_that_is_no_width_is_ignored(cli, run_project, monkeypatch, columns):
    """'²' is a digit int() cannot read and 5,000 digits are past what it converts: both were a
    ValueError traceback from every command that prints a table."""
    monkeypatch.chdir(run_project)
    monkeypatch.delenv("COLUMNS", raising=False)
    piped = cli("runs")
    monkeypatch.setenv("COLUMNS", columns)
    result = cli("runs")
    assert (result.exit_code, result.output) == (0, piped.output)


def test_a_fitted_leaderboard_keeps_rank_group_arm_mean_and_interval(drawn):
    lines = drawn("leaderboard", columns=50)
    header = next(line for line in lines if line.startswith("rank"))
    assert re.split(r"\s{2,}", header) == ["rank", "group", "arm", "mean", "95% CI"]
    careful = next(line for line in lines if " careful " in line)
    assert re.search(r"\[0\.\d{3}, 0\.\d{3}\]", careful)


# The pieces ----------------------------------------------------------------------------------------


def test_wrap_breaks_at_spaces_and_keeps_the_indent():
    text = "  still failing (5): q000, q001, q002, q003, q004"
    assert wrap(text, 24, "    ") == ["  still failing (5):", "    q000, q001, q002,", "    q003, q004"]
    assert wrap("abcdefghij", 4) == ["abcd", "efgh", "ij"]
    assert all(display_width(line) <= 10 for line in wrap("評価 " * 12, 10))


def test_cut_marks_what_it_left_out():
    assert cut("left_to_right", 8, middle=True) == "left…ght"
    assert cut("2–3 (not separated)", 4) == "2–3…"
    assert cut("short", 8) == "short"
    assert display_width(cut("評価評価評価", 5)) <= 5


def test_a_table_drops_columns_in_the_declared_order_then_cuts():
    headers = ["arm", "mean", "p95 ms", "run"]
    cells = [["a-very-long-arm-name", "0.933", "10.4", "20261202T063505Z-careful-fc24"]]
    fit = Fit(drop=("run", "p95 ms"), shrink=(Shrink("arm", 8, middle=True),), wrap=False)
    assert plan_table(headers, cells, None, fit).columns == [0, 1, 2, 3]
    plan = plan_table(headers, cells, 40, fit)
    assert plan.hidden == ["run"] and plan.columns == [0, 1, 2]
    plan = plan_table(headers, cells, 20, fit)
    assert plan.hidden == ["run", "p95 ms"] and plan.widths[0] == 20 - 2 - 5
