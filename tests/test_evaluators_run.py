"""Evaluators inside a real run: failed generations, throwing evaluators, critical rows, unscored runs."""

from __future__ import annotations

import json

import pytest
from evaluator_support import make_project, only_run


def test_scores_of_a_run_with_a_failed_generation_a_throwing_evaluator_and_a_critical_row(evaluator_project, cli):
    make_project(evaluator_project, "\n  - type: exact\n  - type: python:support_checks:picky\n    name: picky")
    cli("run", "experiments/support.yaml")
    run = only_run(evaluator_project)
    cases = {c["item_id"]: c for c in run.cases}

    failed = cases["fail"]
    assert failed["error"] == "RuntimeError: model exploded"
    assert [(s["score"], s["passed"], s["detail"]) for s in failed["scores"]] == [
        (0.0, False, "generation failed: RuntimeError: model exploded")
    ] * 2
    assert (failed["score"], failed["passed"]) == (0.0, False)

    ok_exact, ok_picky = cases["ok"]["scores"]
    assert (ok_exact["passed"], ok_picky["error"]) == (True, "ValueError: cannot judge greetings")
    assert (cases["ok"]["score"], cases["ok"]["passed"]) == (1.0, False)

    assert cases["crit"]["critical"] is True and cases["crit"]["passed"] is False
    totals = run.footer.raw["totals"]
    assert (totals["passed"], totals["critical_failures"], totals["unscored"]) == (False, ["crit"], False)
    assert totals["evaluators"]["exact"] | {"version": None} == {
        "version": None, "n": 3, "ok": 3, "errors": 0, "skipped": 0, "pass_rate": pytest.approx(1 / 3),
        "mean": pytest.approx(1 / 3), "label_counts": {}, "critical_failures": ["crit"], "passed": False,
    }
    assert totals["evaluators"]["picky"]["errors"] == 1
    assert run.header.evaluators["picky"]["type"] == "python:support_checks:picky"


def test_a_run_without_evaluators_is_unscored(evaluator_project, cli):
    make_project(evaluator_project, "[]")
    cli("run", "experiments/support.yaml")
    run = only_run(evaluator_project)
    assert all(c["score"] is None and c["scores"] == [] for c in run.cases)
    totals = run.footer.raw["totals"]
    assert (totals["unscored"], totals["mean_score"], totals["passed"]) == (True, None, None)
    assert totals["critical_failures"] == []


def test_duckdb_reads_per_turn_and_spread_fields_and_the_critical_flag(evaluator_project, cli):
    make_project(evaluator_project, "\n  - type: exact")
    cli("run", "experiments/support.yaml")
    result = cli("query", "select c.item_id, c.critical, s.turn, s.spread from cases c "
                 "join scores s using (run_id, item_id, repeat) order by c.item_id", "--json")
    assert json.loads(result.output) == [
        {"item_id": "crit", "critical": True, "turn": None, "spread": None},
        {"item_id": "fail", "critical": False, "turn": None, "spread": None},
        {"item_id": "ok", "critical": False, "turn": None, "spread": None},
    ]


def test_a_bad_evaluator_stops_the_run_before_anything_is_written(evaluator_project, cli):
    make_project(evaluator_project, "\n  - type: regex\n    pattern: '('")
    result = cli("run", "experiments/support.yaml")
    assert result.exit_code == 1
    assert result.output.startswith("Error: evaluators[0] (regex): pattern: invalid regular expression '('")
    assert not (evaluator_project / "calls.log").exists()


def test_show_prints_a_table_of_evaluator_aggregates(evaluator_project, cli):
    make_project(evaluator_project, "\n  - type: exact\n  - type: length\n    max: 5")
    cli("run", "experiments/support.yaml")
    lines = cli("show", only_run(evaluator_project).run_id).output.splitlines()
    table = lines[lines.index("") + 1:]
    assert table[0].split() == ["evaluator", "n", "ok", "errors", "skipped", "pass_rate", "mean", "passed"]
    assert table[1].split() == ["exact", "3", "3", "0", "0", "0.333", "0.333", "no"]
    assert table[2].split() == ["length", "3", "3", "0", "0", "0.333", "0.333", "no"]  # REFUND is 6 chars
