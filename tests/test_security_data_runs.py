"""Issue 32, Low 9 and Low 10: run logs that are wrong in ways a reader must not take on trust.

- a ``cases.jsonl`` that is a directory: every reading command used to end in a traceback; the
  run is now reported as unreadable, with the reason, and skipped like any unreadable run;
- the same (item_id, repeat) on two lines: it was counted twice and ``validate`` passed; the
  first line now counts, once, in every reader, and ``validate`` names the run and the key;
- a footer whose totals lie about the cases: ``validate`` passed; it now names the run and the
  figure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from import_support import write_jsonl

from evalsite.runlog.store import read_run, run_directories

SCORES = {"a": [1, 0, 1, 1], "b": [0, 0, 1, 0]}  # arm → score of items q0…q3


@pytest.fixture
def two_runs(import_project: Path, cli) -> dict[str, Path]:
    """Arms ``a`` and ``b`` on four items, imported: their run folders by arm."""
    rows = [{"arm": arm, "id": f"q{i}", "input": f"question {i}", "output": "x", "score": score}
            for arm, scores in SCORES.items() for i, score in enumerate(scores)]
    assert cli("import", "jsonl", str(write_jsonl(import_project / "results.jsonl", rows))).exit_code == 0
    assert cli("validate").exit_code == 0  # honest runs: every footer agrees with its cases
    return {read_run(folder).header.arm_id: folder for folder in run_directories(import_project / "runs")}


def _lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]


def _no_traceback(result) -> None:
    assert "Traceback" not in result.output, result.output


def test_a_cases_file_that_is_a_directory_makes_the_run_unreadable_not_a_traceback(two_runs, cli):
    folder = two_runs["a"]
    (folder / "cases.jsonl").unlink()
    (folder / "cases.jsonl").mkdir()
    reason = f"{folder.name}/cases.jsonl: is a directory; the run cannot be read"
    for command in (["runs"], ["leaderboard"], ["query", "SELECT count(*) AS n FROM cases"], ["build"]):
        result = cli(*command)
        _no_traceback(result)
        assert result.exit_code == 0, (command, result.output)
        assert reason in result.output, command
    assert cli.json("runs")[0]["arm"] == "b"
    shown = cli("show", folder.name)
    assert (shown.exit_code, shown.output) == (1, f"Error: {reason}\n")
    validated = cli("validate")
    assert validated.exit_code == 1 and f"runs/{reason}" in validated.output


def test_a_fifo_named_cases_jsonl_is_refused_without_opening_it(two_runs, cli):
    import os

    folder = two_runs["a"]
    (folder / "cases.jsonl").unlink()
    os.mkfifo(folder / "cases.jsonl")  # opening it for reading would block every reader
    result = cli("runs")
    assert result.exit_code == 0
    assert f"{folder.name}/cases.jsonl: is not a regular file; the run cannot be read" in result.output


def test_a_duplicated_case_counts_once_the_first_line_winning(two_runs, cli):
    folder = two_runs["a"]
    first = _lines(folder)[1]  # q1, score 0
    forged = {**first, "score": 1.0, "passed": True, "scores": [{**s, "score": 1.0, "passed": True} for s in first["scores"]]}
    with open(folder / "cases.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(forged) + "\n")
        handle.write(json.dumps(forged) + "\n")

    shown = cli.json("show", folder.name)
    assert shown["cases"] == 4 and shown["mean_score"] == pytest.approx(0.75)
    listed = {row["arm"]: row for row in cli.json("runs")}
    assert listed["a"]["cases"] == 4 and listed["a"]["mean_score"] == pytest.approx(0.75)
    counted = cli.json("query", f"SELECT count(*) AS n, avg(score) AS mean FROM cases WHERE run_id = '{folder.name}'")
    assert counted == [{"n": 4, "mean": pytest.approx(0.75)}]
    board = {row["arm_id"]: row for row in cli.json("leaderboard")["arms"]}
    assert board["a"]["value"] == pytest.approx(0.75)

    validated = cli("validate")
    assert validated.exit_code == 1
    message = (f"runs/{folder.name}/cases.jsonl: line 5: item 'q1' repeat 0 is already recorded on line 2; "
               "skipped (the first line counts)")
    assert message in validated.output
    assert "line 6: item 'q1' repeat 0 is already recorded on line 2" in validated.output


@pytest.mark.parametrize("figure, lie", [("cases", 40), ("errors", 3), ("mean_score", 0.99), ("pass_rate", 1.0),
                                         ("passed", True), ("items", 2)])
def test_a_footer_lying_about_its_totals_fails_validate(two_runs, cli, figure, lie):
    folder = two_runs["b"]
    footer = json.loads((folder / "end.json").read_text())
    truth = footer["totals"][figure]
    footer["totals"][figure] = lie
    (folder / "end.json").write_text(json.dumps(footer))
    validated = cli("validate")
    assert validated.exit_code == 1
    assert validated.output.splitlines()[0] == (f"runs/{folder.name}/end.json: totals.{figure} is {lie!r}, "
                                                f"but cases.jsonl gives {truth!r}")
