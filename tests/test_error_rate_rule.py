"""One error-rate rule (issue 26, item 9): ``run`` and ``promote`` read the same answer from
``[ci] max_error_rate``, and a run with no successful case is never green nor a baseline."""

from __future__ import annotations

import json
import sys

import pytest
from example_support import forget_project_modules
from runner_support import all_runs, questions, write_experiment

from evalsite.execute.outcomes import BatchOutcome, RunOutcome
from evalsite.project import error_rate_problem
from evalsite.runlog.records import RunStatus
from evalsite.runlog.totals import RunTotals

CRASH = "def answer(row):\n    raise RuntimeError('target down')\n"
FLAKY = "def answer(row):\n    if row['id'] in ('q0', 'q1', 'q2'):\n        raise RuntimeError('down')\n    return 'echo: ' + row['input']\n"


def independent_rule(errors: int, cases: int, limit: float) -> bool:
    """What the docs say, written again: some case succeeded and the failed share is at most the limit."""
    successes = cases - errors
    return successes > 0 and errors <= limit * cases


@pytest.mark.parametrize("limit", [0.0, 0.2, 0.5, 0.6, 0.99, 1.0])
def test_the_rule_passes_exactly_what_the_documented_rule_passes(limit):
    for cases in range(0, 12):
        for errors in range(0, cases + 1):
            problem = error_rate_problem(errors, cases, limit)
            assert (problem is None) == independent_rule(errors, cases, limit), (errors, cases, limit, problem)


def test_max_error_rate_1_still_refuses_a_run_where_every_case_failed():
    problem = error_rate_problem(5, 5, 1.0)
    assert problem == ("5 of 5 cases failed to generate (100%): a run with no successful case measured nothing, "
                       "whatever [ci] max_error_rate says")
    assert error_rate_problem(0, 0, 1.0) == "no case was recorded: a run with no successful case measured nothing"
    assert error_rate_problem(4, 5, 1.0) is None


@pytest.fixture
def arms(runner_project, monkeypatch):
    for name, source in (("crash", CRASH), ("flaky", FLAKY)):
        (runner_project / f"rule_{name}.py").write_text(source)
        forget_project_modules(f"rule_{name}")
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield runner_project
    for name in ("crash", "flaky"):
        forget_project_modules(f"rule_{name}")


@pytest.mark.parametrize("target, limit", [("crash", 1), ("crash", 0.5), ("flaky", 1), ("flaky", 0.6), ("flaky", 0.5),
                                           ("flaky", 0)])
def test_run_and_promote_give_the_same_answer(arms, cli, target, limit):
    """Before the rule was one function, ``max_error_rate = 1`` failed ``run`` on a run whose every case
    errored while ``promote`` accepted it as a baseline."""
    (arms / "evalsite.toml").write_text(f"[ci]\nmax_error_rate = {limit}\n")
    manifest = write_experiment(arms, questions(5), [{"id": target, "target": f"python:rule_{target}:answer"}])
    ran = cli("run", manifest, "--allow-failures")
    (run,) = all_runs(arms)
    promoted = cli("promote", run.run_id, "--reason", "r", "--allow-dirty")
    passes = independent_rule(5 if target == "crash" else 3, 5, limit)
    assert (ran.exit_code == 0) == passes, ran.stderr
    assert (promoted.exit_code == 0) == passes, promoted.stderr
    decisions = arms / "runs" / "decisions.jsonl"
    written = [json.loads(line) for line in decisions.read_text().splitlines()] if decisions.exists() else []
    assert len(written) == (1 if passes else 0)
    if not passes:
        problem = error_rate_problem(5 if target == "crash" else 3, 5, limit)
        assert f"failed: {target}: {problem}; --allow-failures does not accept it" in ran.stderr
        assert promoted.stderr == f"Error: {run.run_id}: refusing to promote: {problem} (evalsite.toml [ci])\n"


def test_the_batch_outcome_applies_the_same_rule():
    summary = {"cases": 4, "errors": 4, "passed": None, "critical_failures": [], "evaluators": {}}
    batch = BatchOutcome([RunOutcome("r1", "down", RunStatus.COMPLETED, RunTotals.from_json(summary, "summary"))], [], None, None, 0.0)
    assert batch.failure_reasons(allow_failures=True, max_error_rate=1.0) == [
        f"down: {error_rate_problem(4, 4, 1.0)}; --allow-failures does not accept it"]


def test_a_completed_run_with_nothing_planned_passes_the_batch_but_is_no_baseline():
    """An empty shard (``run --shard 1/2`` of a dataset the split gave wholly to shard 2) has
    nothing to fail; the rule still refuses it as a baseline (promote reads error_rate_problem)."""
    empty = {"cases": 0, "errors": 0, "passed": None, "critical_failures": [], "evaluators": {}}
    batch = BatchOutcome([RunOutcome("r1", "shard", RunStatus.COMPLETED, RunTotals.from_json(empty, "summary"))], [], None, None, 0.0)
    assert batch.failure_reasons(allow_failures=False) == []
    assert error_rate_problem(0, 0, 1.0) is not None
