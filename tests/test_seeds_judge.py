"""Judge limits (seed 000): what a judge receives is bounded, the detail is short, every call is paid for."""

from __future__ import annotations

import asyncio
import itertools
import sys

import pytest

from evalsite.scoring.evaluators import CaseView, build_evaluators
from evalsite.scoring.evaluators.judge import truncate

RECORDING = '''
import json

seen = []

def record(input, params):
    seen.append({"user": input[1]["content"], "params": dict(params)})
    return json.dumps({"score": 9, "reason": "r" * 500})

def costly_garbage(input):
    return {"output": "not json at all", "cost_usd": 0.25}

def costly_then_down(input):
    if len(input) > 2:
        raise RuntimeError("judge is down")
    return {"output": "not json", "cost_usd": 0.5}
'''
_numbers = itertools.count()


@pytest.fixture
def judge_module(tmp_path, monkeypatch):
    """The name of a fresh module holding the recording judge, importable from ``tmp_path``."""
    monkeypatch.setattr(sys, "path", [*sys.path])
    name = f"seeds_judges_{next(_numbers)}"
    (tmp_path / f"{name}.py").write_text(RECORDING)
    yield name
    sys.modules.pop(name, None)


def score(spec: dict, project, input="q", output="a"):
    (evaluator,) = build_evaluators([spec], project)
    view = CaseView(input=input, output=output, expected="ref", row={"id": "r1"})
    (result,) = asyncio.run(evaluator.ascore(view))
    return evaluator, result


def section(user: str, title: str) -> str:
    return user.split(f"{title}:\n", 1)[1].split("\n\n", 1)[0]


def test_a_recording_judge_sees_at_most_4000_and_6000_characters_and_max_tokens_200(judge_module, tmp_path):
    spec = {"type": "llm_judge", "judge": f"python:{judge_module}:record"}
    score(spec, tmp_path, input="i" * 19_000, output="o" * 30_000)
    (seen,) = sys.modules[judge_module].seen
    shown_input, shown_output = section(seen["user"], "Input"), section(seen["user"], "Output to grade")
    assert len(shown_input) == 4000 and shown_input.startswith("i" * 3900)
    assert len(shown_output) == 6000 and shown_output.startswith("o" * 5900)
    assert "cut: 19000 characters" in shown_input and "cut: 30000 characters" in shown_output
    assert seen["params"] == {"max_tokens": 200}


def test_short_texts_are_sent_whole_and_the_limits_are_configurable(judge_module, tmp_path):
    spec = {"type": "llm_judge", "judge": {"target": f"python:{judge_module}:record", "params": {"max_tokens": 50}},
            "max_input_chars": 100, "max_output_chars": 20000, "detail_chars": 40}
    _, result = score(spec, tmp_path, input="short question", output="o" * 15_000)
    (seen,) = sys.modules[judge_module].seen
    assert section(seen["user"], "Input") == "short question"
    assert section(seen["user"], "Output to grade") == "o" * 15_000
    assert seen["params"] == {"max_tokens": 50}
    assert len(result.detail) == 40 and result.detail.startswith("9/10: rrr")


def test_the_kept_detail_is_200_characters_by_default(judge_module, tmp_path):
    _, result = score({"type": "llm_judge", "judge": f"python:{judge_module}:record"}, tmp_path)
    assert len(result.detail) == 200 and result.score == 0.9


@pytest.mark.parametrize("text, limit", [("x" * 10, 10), ("x" * 11, 10), ("y" * 5000, 100), ("z" * 50, 3)])
def test_truncate_never_exceeds_its_limit(text, limit):
    cut = truncate(text, limit)
    assert len(cut) <= limit and (cut == text) == (len(text) <= limit)


def test_an_unparseable_reply_records_the_cost_of_both_calls(judge_module, tmp_path):
    _, result = score({"type": "llm_judge", "judge": f"python:{judge_module}:costly_garbage", "samples": 2}, tmp_path)
    assert "even after a re-ask" in result.error
    assert result.cost_usd == pytest.approx(4 * 0.25), "two samples, each asked twice"


def test_a_judge_failing_on_the_reask_still_records_the_first_call(judge_module, tmp_path):
    _, result = score({"type": "llm_judge", "judge": f"python:{judge_module}:costly_then_down"}, tmp_path)
    assert result.error.startswith("judge failed:")
    assert result.cost_usd is None, "the failed call's cost is unknown, so the total is unknown (never 0)"


def test_openai_judge_written_with_params_model_builds(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    spec = {"type": "llm_judge", "judge": {"target": "openai", "params": {"model": "gpt-4o-mini", "temperature": 0}}}
    (evaluator,) = build_evaluators([spec], tmp_path)
    assert evaluator.describe()["judge"] == {"target": "openai:gpt-4o-mini", "model": "gpt-4o-mini"}
