"""Evaluator timeouts (seed 003): a scorer past ``timeout_s`` records an error score; the run goes on."""

from __future__ import annotations

import asyncio

import pytest
from runner_support import only_run, questions, write_experiment

from evalsite.errors import EvaluatorError
from evalsite.scoring.evaluators import CaseView, build_evaluators

SCORERS = '''
import asyncio
import time

def slow(output):
    time.sleep(3)
    return True

async def slow_async(output):
    await asyncio.sleep(30)
    return True

def quick(output):
    return 0.5
'''


def test_a_sync_scorer_past_timeout_s_records_an_error_and_the_run_completes(runner_project, cli):
    (runner_project / "t_arm.py").write_text("def echo(input):\n    return 'echo: ' + input\n")
    (runner_project / "t_scorers.py").write_text(SCORERS)
    evaluators = [{"type": "python:t_scorers:slow", "name": "slow", "timeout_s": 1},
                  {"type": "python:t_scorers:quick", "name": "quick"}]
    manifest = write_experiment(runner_project, questions(2), [{"id": "a", "target": "python:t_arm:echo"}],
                                evaluators=evaluators, concurrency=2)
    result = cli("run", manifest)
    run = only_run(runner_project)
    assert run.footer.raw["status"] == "completed" and result.exit_code == 1, "error scores fail the pass rule"
    for case in run.cases:
        slow, quick = case["scores"]
        assert slow["error"] == "timed out after 1 s (timeout_s)" and slow["passed"] is False
        assert quick["score"] == 0.5 and quick["error"] is None
        assert case["score"] == 0.5, "the timed-out scorer has no score, so it is left out of the case score"


def score(spec: dict, project):
    (evaluator,) = build_evaluators([spec], project)
    return asyncio.run(evaluator.ascore(CaseView(input="q", output="a", expected=None, row={})))[0]


def test_an_async_scorer_is_bounded_too_and_python_scorers_default_to_30_s(runner_project):
    (runner_project / "t_async.py").write_text(SCORERS)
    assert score({"type": "python:t_async:slow_async", "timeout_s": 0.2}, runner_project).error == (
        "timed out after 0.2 s (timeout_s)"
    )
    (evaluator,) = build_evaluators([{"type": "python:t_async:quick"}], runner_project)
    assert evaluator.timeout_s == 30.0
    assert build_evaluators([{"type": "exact"}], runner_project)[0].timeout_s is None


def test_timeout_s_is_not_part_of_the_version(runner_project):
    (runner_project / "t_version.py").write_text(SCORERS)
    versions = {build_evaluators([{"type": "python:t_version:quick", "timeout_s": t}], runner_project)[0].version
                for t in (1, 5, None)}
    assert len(versions) == 1


@pytest.mark.parametrize("value", [0, -1, "soon", True])
def test_a_bad_timeout_s_fails_at_build(value, runner_project):
    with pytest.raises(EvaluatorError, match="timeout_s: needs a number of seconds > 0"):
        build_evaluators([{"type": "exact", "timeout_s": value}], runner_project)


def test_an_explicit_null_timeout_means_no_deadline(runner_project):
    (runner_project / "t_null.py").write_text(SCORERS)
    (evaluator,) = build_evaluators([{"type": "python:t_null:quick", "timeout_s": None}], runner_project)
    assert evaluator.timeout_s is None
    assert score({"type": "python:t_null:quick", "timeout_s": None}, runner_project).score == 0.5
