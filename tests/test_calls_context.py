"""A judge's retries stop with the batch: the cost ceiling, the deadline and a cancel end them as they
end generation's (calls/context.py). The judge is a real HTTP endpoint on 127.0.0.1 answering 503
slowly; what is asserted is how many requests it received, never how long anything took."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from fakeserver import FakeServer
from runner_support import only_run, questions, write_experiment

from evalsite.calls.context import Abandoned, CallContext
from evalsite.execute.stopping import Budget
from evalsite.scoring.evaluators import CaseView, build_evaluators

_modules = itertools.count()
GRADED = "grade: echo: question 0"  # what the judge's prompt below renders for the one row


@pytest.fixture
def failing_judge(monkeypatch):
    """A judge endpoint whose every answer to :data:`GRADED` is a 503 after 0.2 s."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(script={GRADED: [{"status": 503, "delay": 0.2}] * 10}) as server:
        yield server


def judge_spec(server: FakeServer) -> dict:
    return {"type": "llm_judge", "prompt": "grade: {{ output }}",
            "judge": {"target": "openai:judge-model", "settings": {"base_url": server.url + "/v1"}}}


def experiment(root, server: FakeServer, generation_cost: float) -> str:
    module = f"cc_arm_{next(_modules)}"  # a fresh name: python targets' modules stay imported between tests
    (root / f"{module}.py").write_text(
        f"def echo(input):\n    return {{'output': 'echo: ' + input, 'cost_usd': {generation_cost}}}\n"
    )
    arms = [{"id": "arm", "target": f"python:{module}:echo"}]
    return write_experiment(root, questions(1), arms, evaluators=[judge_spec(server)], concurrency=1)


def test_without_a_stop_the_judge_retries_its_503s_to_max_attempts(runner_project, failing_judge, cli):
    cli("run", experiment(runner_project, failing_judge, 0.0))
    assert failing_judge.calls_for(GRADED) == 3  # the judge's default max_attempts
    (case,) = only_run(runner_project).cases
    assert case["scores"][0]["error"].startswith("judge failed: HTTP 503")


def test_a_judge_stops_retrying_once_the_generation_reached_the_ceiling(runner_project, failing_judge, cli):
    cli("run", experiment(runner_project, failing_judge, 1.0), "--max-cost", "0.5")
    assert failing_judge.calls_for(GRADED) == 1, "the generation's $1 reached the ceiling: no judge retry"
    run = only_run(runner_project)
    assert run.footer.status == "stopped_cost_ceiling"
    assert run.cases == [], "an abandoned case stays unrecorded, so a resume judges it"
    assert run.footer.raw["cost_ceiling"]["spent_usd"] == 1.0, "what the abandoned case spent still counts"


def test_a_judge_stops_retrying_when_the_deadline_passes(runner_project, failing_judge, cli):
    cli("run", experiment(runner_project, failing_judge, 0.0), "--timeout", "0.5")
    # the first 503 comes after 0.2 s and the first backoff is 0.5 s or more: the deadline ends it
    assert failing_judge.calls_for(GRADED) == 1
    assert only_run(runner_project).footer.status == "timed_out"


def test_a_judge_stops_retrying_on_cancel(failing_judge, tmp_path):
    (judge,) = build_evaluators([judge_spec(failing_judge)], tmp_path)
    canceled = CallContext(stopping=lambda: failing_judge.calls_for(GRADED) >= 1)  # a Ctrl-C after the first request
    view = CaseView(input="question 0", output="echo: question 0", expected=None, row={"id": "q0"}, calls=canceled)
    with pytest.raises(Abandoned, match="HTTP 503.*not retried: the run is stopping"):
        asyncio.run(judge.ascore(view))
    assert failing_judge.calls_for(GRADED) == 1


def test_a_judge_call_that_costs_counts_against_the_batch_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeServer(script={GRADED: [{"reply": '{"score": 8, "reason": "ok"}', "cost": 0.25}]}) as server:
        (judge,) = build_evaluators([judge_spec(server)], tmp_path)
        budget = Budget(limit=1.0, spent=0.5)
        view = CaseView(input="q", output="echo: question 0", expected=None, row={}, calls=CallContext(budget=budget))
        (score,) = asyncio.run(judge.ascore(view))
    assert (score.score, score.cost_usd, budget.spent) == (0.8, 0.25, 0.75)


def test_no_retry_starts_past_the_deadline_or_the_ceiling():
    assert CallContext(deadline=0.0).stop_reason() == "the deadline has passed"
    assert CallContext(budget=Budget(limit=1.0, spent=1.0)).stop_reason() == "the cost ceiling is reached"
    assert CallContext(budget=Budget(limit=1.0, spent=0.9)).stop_reason() is None
    assert CallContext(deadline=time.monotonic() + 3600).stop_reason() is None
