"""The ``cases`` view holds every field a case line has, read from JSONL (typed or checked) and
from Parquet, including Parquet compacted before a field was a column."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
from example_support import REPO
from study_support import runs, write_study

from evalsite.analysis.db import CASE_COLUMNS

VIEW = "SELECT item_id, repeat, attempts, cache, checkpoint, transcript, turn_outputs FROM cases ORDER BY ALL"


def _study(root) -> str:
    (root / "warm.json").write_text("{}")
    return write_study(root, items=2, emulation={"cache": "auto"},
                       checkpoints=[{"id": "none"}, {"id": "warm", "path": "warm.json"}],
                       rows=[{"id": "q0", "input": "x0", "expected": "ok x0"},
                             {"id": "chat", "turns": [{"role": "user", "content": "hi"}], "expected": "x"}])


def _expected(root) -> list[tuple]:
    """The rows the view must give, from the case lines themselves."""
    rows = []
    for run in runs(root):
        for case in run.cases:
            rows.append((case["item_id"], case["repeat"], case.get("attempts"), case.get("cache"), case.get("checkpoint"),
                         case.get("transcript"), case.get("turn_outputs")))
    return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True))


def _view(cli) -> list[tuple]:
    rows = [(r["item_id"], r["repeat"], r["attempts"], r["cache"], r["checkpoint"],
             None if r["transcript"] is None else json.loads(r["transcript"]),
             None if r["turn_outputs"] is None else json.loads(r["turn_outputs"]))
            for r in cli.json("query", VIEW)]
    return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True))


def test_every_field_of_a_case_line_is_a_column_of_the_cases_view(study_project, cli):
    manifest = _study(study_project)
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    assert cli("run", manifest, "--allow-failures").exit_code == 0  # the second batch is served from the cache
    written = {key for run in runs(study_project) for case in run.cases for key in case}
    assert written <= set(CASE_COLUMNS), written - set(CASE_COLUMNS)
    expected = _expected(study_project)
    assert {row[3] for row in expected} == {"recorded", "hit"} and {row[4] for row in expected} == {"none", "warm"}
    assert any(row[5] for row in expected)  # the multi-turn row's transcript is there to compare
    assert _view(cli) == expected


def test_a_file_read_with_its_types_checked_gives_the_same_optional_columns(study_project, cli):
    assert cli("run", _study(study_project), "--allow-failures").exit_code == 0
    expected = _expected(study_project)
    for run in runs(study_project):  # a hand-edited file: its recorded sha256 no longer holds
        path = run.directory / "cases.jsonl"
        path.write_text(path.read_text() + "\n")
    assert _view(cli) == expected
    assert [r["cache"] for r in cli.json("query", "SELECT cache FROM cases WHERE attempts = 0")] == []


def test_compacted_runs_keep_the_columns_and_older_parquet_reads_them_as_null(study_project, cli):
    assert cli("run", _study(study_project), "--allow-failures").exit_code == 0
    expected = _expected(study_project)
    assert len(cli.json("compact")) == 2
    for run in runs(study_project):
        (run.directory / "cases.jsonl").rename(run.directory / "cases.jsonl.hidden")
    assert _view(cli) == expected  # read from Parquet alone
    older = next(iter(study_project.glob("runs/*/cases.parquet")))
    table = pq.read_table(older)
    pq.write_table(table.drop_columns(["cache", "checkpoint"]).replace_schema_metadata(table.schema.metadata), older)
    rows = cli.json("query", "SELECT run_id, cache, checkpoint FROM cases")
    assert len(rows) == len(expected)
    by_run = {run_id: {(r["cache"], r["checkpoint"]) for r in rows if r["run_id"] == run_id}
              for run_id in {r["run_id"] for r in rows}}
    assert by_run[older.parent.name] == {(None, None)}
    assert all(None not in pair for run_id, pairs in by_run.items() if run_id != older.parent.name for pair in pairs)


def test_the_query_docs_list_the_views_columns_and_their_example_runs(study_project, cli):
    docs = (REPO / "docs/reference/commands/runs.md").read_text()
    row = next(line for line in docs.splitlines() if line.startswith("| `cases` | case |"))
    listed = re.search(r"and `run_id`: `([^`]+)`", row).group(1).split(", ")
    columns = [r["column_name"] for r in cli.json("query", "SELECT column_name FROM (DESCRIBE cases)")]
    assert listed == columns
    command, *table = re.search(r"```\n\$ evalsite query \"(SELECT cache[^\"]+)\"\n(.*?)```", docs, re.S).groups()
    manifest = write_study(study_project, emulation={"cache": "auto"})
    assert cli("run", manifest).exit_code == 0 and cli("run", manifest).exit_code == 0
    assert cli("query", command).output == table[0]
