"""llm_judge with a judge arm behind a python: target: strict parsing, one re-ask, samples."""

from __future__ import annotations

import asyncio
import itertools
import sys

import pytest

from evalsite.errors import EvaluatorError
from evalsite.scoring.case import score_case
from evalsite.scoring.evaluators import CaseView, Score, build_evaluators
from evalsite.scoring.evaluators.judge import parse_judge_reply

JUDGES = '''
import asyncio
import json

def valid(input):
    return '{"score": 8, "reason": "correct and complete"}'

def fenced(input):
    return '```json\\n{"score": 6, "reason": "partly right"}\\n```'

def prose_before_number(input):
    return "In 2024 the answer was 9 out of 10, a fine reply."

def garbage(input):
    return "<html>502 Bad Gateway</html>"

def garbage_then_valid(input):
    if len(input) == 4 and input[2]["content"] == "meh" and "JSON object" in input[3]["content"]:
        return '{"score": 7, "reason": "fine on the second try"}'
    return "meh"

def out_of_range(input):
    return '{"score": 11, "reason": "excellent"}'

def by_sample(repeat):
    return json.dumps({"score": [6, 8, 7][repeat], "reason": f"sample {repeat}"})

def show_prompt(input, params):
    return json.dumps({"score": 10, "reason": params.get("model", "") + "|" + input[0]["content"] + "|" + input[1]["content"]})

def down(input):
    raise RuntimeError("judge is down")

def billed(input):
    return {"output": '{"score": 5, "reason": "half"}', "cost_usd": 0.002}

def by_tokens(input):
    return {"output": '{"score": 5, "reason": "half"}', "input_tokens": 1000, "output_tokens": 100}

busy_calls = []

def busy_once(input):
    from evalsite.calls.targets import TransientTargetError
    busy_calls.append(1)
    if len(busy_calls) == 1:
        raise TransientTargetError("HTTP 429", retry_after=0.01)
    return '{"score": 9, "reason": "answered after one retry"}'

arrived = []

async def rendezvous(input):
    """Answers only once two judges are waiting at the same time (gives up after 5 s)."""
    arrived.append(asyncio.Event())
    if len(arrived) == 2:
        for event in arrived:
            event.set()
    await asyncio.wait_for(arrived[-1].wait(), 5)
    return '{"score": 10, "reason": "met the other judge"}'
'''
_numbers = itertools.count()


@pytest.fixture
def judges(tmp_path, monkeypatch):
    """A project with a judge module; yields a function making judge specs for it."""
    monkeypatch.setattr(sys, "path", [*sys.path])
    name = f"judges_{next(_numbers)}"
    (tmp_path / f"{name}.py").write_text(JUDGES)

    def spec(function: str, **extra) -> dict:
        return {"type": "llm_judge", "judge": f"python:{name}:{function}", **extra}

    yield spec
    sys.modules.pop(name, None)


def judge(spec: dict, tmp_path, output="Paris", expected="Paris", transcript=None) -> Score:
    (evaluator,) = build_evaluators([spec], tmp_path)
    view = CaseView(input="Capital of France?", output=output, expected=expected, row={"id": "q1"},
                    transcript=transcript)
    (result,) = asyncio.run(evaluator.ascore(view))
    return result


def test_valid_json_reply_scores_on_the_0_to_1_scale(judges, tmp_path):
    result = judge(judges("valid"), tmp_path)
    assert (result.score, result.passed, result.error) == (0.8, True, None)
    assert result.detail == "8/10: correct and complete"


def test_fenced_json_reply_is_parsed_and_the_default_threshold_is_0_7(judges, tmp_path):
    result = judge(judges("fenced"), tmp_path)
    assert (result.score, result.passed) == (0.6, False)


def test_prose_before_a_number_never_scores(judges, tmp_path):
    result = judge(judges("prose_before_number"), tmp_path)
    assert result.score is None and result.passed is False
    assert result.error.startswith("judge reply is not a JSON object with a 0-10 score, even after a re-ask: ")
    assert "'In 2024 the answer was 9 out of 10, a fine reply.'" in result.error


def test_garbage_reply_is_an_error_quoting_the_reply(judges, tmp_path):
    result = judge(judges("garbage"), tmp_path)
    assert result.score is None and "'<html>502 Bad Gateway</html>'" in result.error


def test_one_reask_with_the_bad_reply_in_the_conversation(judges, tmp_path):
    result = judge(judges("garbage_then_valid"), tmp_path)
    assert (result.score, result.error) == (0.7, None)


def test_scores_outside_0_to_10_are_unparseable(judges, tmp_path):
    assert "even after a re-ask" in judge(judges("out_of_range"), tmp_path).error


def test_two_judges_on_one_case_run_concurrently(judges, tmp_path):
    specs = [judges("rendezvous", name="first"), judges("rendezvous", name="second")]
    view = CaseView(input="q", output="a", expected=None, row={})
    result = asyncio.run(score_case(build_evaluators(specs, tmp_path), view, None))
    assert [(s.score, s.error) for s in result.scores] == [(1.0, None), (1.0, None)]


def test_a_failing_judge_records_an_error(judges, tmp_path):
    result = judge(judges("down"), tmp_path)
    assert result.error == "judge failed: RuntimeError: judge is down"


def test_a_busy_judge_is_retried_like_a_generation(judges, tmp_path):
    result = judge(judges("busy_once"), tmp_path)
    assert (result.score, result.error) == (0.9, None)


def test_judge_calls_carry_their_cost_billed_or_priced_and_unknown_otherwise(judges, tmp_path):
    assert judge(judges("billed", samples=2), tmp_path).cost_usd == pytest.approx(0.004)
    spec = judges("by_tokens")
    spec["judge"] = {"target": spec["judge"], "price": {"input": 2.0, "output": 10.0}}
    assert judge(spec, tmp_path).cost_usd == pytest.approx((1000 * 2.0 + 100 * 10.0) / 1e6)
    assert judge(judges("by_tokens"), tmp_path).cost_usd is None
    assert judge(judges("valid"), tmp_path).cost_usd is None


def test_the_judge_price_is_not_part_of_the_version(judges, tmp_path):
    plain = judges("by_tokens")
    priced = {**plain, "judge": {"target": plain["judge"], "price": {"input": 2.0, "output": 10.0}}}
    cheaper = {**plain, "judge": {"target": plain["judge"], "price": {"input": 1.0, "output": 5.0}}}
    versions = [build_evaluators([spec], tmp_path)[0].version for spec in (priced, cheaper)]
    assert versions[0] == versions[1]
    other_model = {**plain, "judge": {"target": plain["judge"], "params": {"model": "m2"}, "price": {"input": 1.0}}}
    assert build_evaluators([other_model], tmp_path)[0].version != versions[0]


def test_a_bad_judge_timeout_fails_at_build(judges, tmp_path):
    spec = judges("valid")
    spec["judge"] = {"target": spec["judge"], "settings": {"timeout": -1}}
    with pytest.raises(EvaluatorError, match="judge.settings.timeout: needs a number of seconds > 0, got -1"):
        build_evaluators([spec], tmp_path)


def test_samples_record_the_mean_and_the_judges_spread(judges, tmp_path):
    result = judge(judges("by_sample", samples=3), tmp_path)
    assert result.score == pytest.approx(0.7) and result.passed is True
    assert result.spread == pytest.approx(0.2)
    assert result.detail == "samples 6, 8, 7 (/10, spread 0.20); first reason: sample 0"


def test_prompt_carries_rubric_input_reference_output_and_transcript(judges, tmp_path):
    spec = judges("show_prompt", rubric="Is it polite?", detail_chars=10_000)  # the detail carries the prompt
    spec["judge"] = {"target": spec["judge"], "params": {"model": "grader-1"}}
    transcript = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Paris"}]
    detail = judge(spec, tmp_path, output="Lyon", transcript=transcript).detail
    model, system, user = detail.removeprefix("10/10: ").split("|")
    assert model == "grader-1" and "strict, fair grader" in system
    assert user.startswith(
        "Rubric:\nIs it polite?\n\nInput:\nCapital of France?\n\nReference answer:\nParis\n\n"
        "Conversation:\nuser: hi\nassistant: Paris\n\nOutput to grade:\nLyon\n\n"
    )
    assert user.endswith('{"score": <integer 0-10>, "reason": "<one short sentence>"}')


def test_a_custom_prompt_template(judges, tmp_path):
    spec = judges("show_prompt", prompt="Grade {{ output }} for {{ row.id }} by: {{ rubric }}", rubric="R")
    assert judge(spec, tmp_path).detail.endswith("|Grade Paris for q1 by: R")


def test_judge_model_prompt_and_rubric_are_part_of_the_version(judges, tmp_path):
    base = judges("valid")
    variants = [
        base,
        {**base, "judge": {"target": base["judge"], "params": {"model": "a"}}},
        {**base, "judge": {"target": base["judge"], "params": {"model": "b"}}},
        {**base, "rubric": "Is it short?"},
        {**base, "prompt": "{{ output }}"},
        {**base, "samples": 3},
    ]
    versions = {build_evaluators([spec], tmp_path)[0].version for spec in variants}
    assert len(versions) == len(variants)
    (with_model,) = build_evaluators([variants[1]], tmp_path)
    assert with_model.describe()["judge"] == {"target": base["judge"], "model": "a"}


@pytest.mark.parametrize(
    "judge_value, message",
    [
        (None, "judge: needs a target"),
        ("nope:x", "judge.target: unknown target kind 'nope'"),
        ("python:no_such_module_here:grade", "judge.target: .*cannot import module 'no_such_module_here'"),
        ({"target": "none", "model": "x"}, "judge: unknown key 'model'"),
    ],
)
def test_bad_judge_specs_fail_at_build(judge_value, message, tmp_path):
    with pytest.raises(EvaluatorError, match=message):
        build_evaluators([{"type": "llm_judge", "judge": judge_value}], tmp_path)


@pytest.mark.parametrize("samples", [0, 101, 300_000])
def test_samples_outside_1_to_100_fail_at_build(samples, judges, tmp_path):
    """Every sample of a case is asked at once: 300,000 of them ran out of memory after a minute."""
    with pytest.raises(EvaluatorError) as raised:
        build_evaluators([judges("valid", samples=samples)], tmp_path)
    assert raised.value.message == f"evaluators[0] (llm_judge): samples: needs a whole number from 1 to 100, got {samples}"


def test_a_bad_prompt_template_fails_at_build(judges, tmp_path):
    with pytest.raises(EvaluatorError, match="prompt: .*'unknown_variable' is undefined"):
        build_evaluators([judges("valid", prompt="{{ unknown_variable }}")], tmp_path)


@pytest.mark.parametrize(
    "reply, parsed",
    [
        ('{"score": 7, "reason": "ok"}', (7.0, "ok")),
        ('  ```json\n{"score": 0, "reason": "wrong"}\n```  ', (0.0, "wrong")),
        ('{"score": 9.5}', (9.5, "")),
        ({"score": 3, "reason": "structured"}, (3.0, "structured")),
        ('Score: {"score": 7, "reason": "ok"}', None),
        ('{"score": "7", "reason": "ok"}', None),
        ('{"score": true, "reason": "ok"}', None),
        ('{"score": -1, "reason": "ok"}', None),
        ('{"score": 7, "reason": 5}', None),
        ("7", None),
        ("In 2024 the answer is 7.", None),
        (None, None),
    ],
)
def test_parse_judge_reply_is_strict(reply, parsed):
    grade = parse_judge_reply(reply)
    assert (None if grade is None else (grade.score, grade.reason)) == parsed


def test_prompt_templates_render_sandboxed(judges, tmp_path):
    evil = judges("show_prompt", prompt="{{ row.__class__.__mro__ }}")
    with pytest.raises(EvaluatorError, match="unsafe"):
        build_evaluators([evil], tmp_path)
