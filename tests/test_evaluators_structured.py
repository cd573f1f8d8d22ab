"""json / json_schema, and the latency and cost ceilings."""

from __future__ import annotations

import asyncio
import json

import pytest

from evalsite.errors import EvaluatorError
from evalsite.scoring.evaluators import CaseView, Score, build_evaluators

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
}


def score(spec: dict, output, expected=None, project_root=None, **fields) -> Score:
    (evaluator,) = build_evaluators([spec], project_root)
    (result,) = asyncio.run(evaluator.ascore(CaseView(input="q", output=output, expected=expected, row={}, **fields)))
    return result


def test_json_accepts_plain_and_fenced_json_and_rejects_prose():
    assert score({"type": "json"}, '{"a": 1}').passed is True
    assert score({"type": "json"}, '```json\n{"a": 1}\n```').passed is True
    assert score({"type": "json"}, '```\n[1, 2]\n```\n').passed is True
    prose = score({"type": "json"}, 'Here it is: {"a": 1}')
    assert (prose.score, prose.passed) == (0.0, False)
    assert prose.detail.startswith("not valid JSON: Expecting value at line 1 column 1")


def test_json_schema_violations_fail_with_the_path_and_reason():
    assert score({"type": "json", "schema": PERSON}, '{"name": "Ada", "age": 36}').passed is True
    result = score({"type": "json", "schema": PERSON}, '{"name": "Ada", "age": -1}')
    assert result.passed is False
    assert result.detail == "schema: age: -1 is less than the minimum of 0"


def test_json_schema_may_live_in_a_project_file(tmp_path):
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "person.json").write_text(json.dumps(PERSON))
    spec = {"type": "json_schema", "schema": "schemas/person.json"}
    assert score(spec, '{"name": "Ada"}', project_root=tmp_path).detail == "schema: (root): 'age' is a required property"


def test_json_schema_file_content_is_part_of_the_version(tmp_path):
    path = tmp_path / "person.json"
    path.write_text(json.dumps(PERSON))
    (before,) = build_evaluators([{"type": "json", "schema": "person.json"}], tmp_path)
    path.write_text(json.dumps({**PERSON, "required": ["name"]}))
    (after,) = build_evaluators([{"type": "json", "schema": "person.json"}], tmp_path)
    assert before.version != after.version


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"type": "json_schema"}, "schema: required"),
        ({"type": "json", "schema": {"type": "nonsense"}}, "schema: not a valid JSON Schema"),
        ({"type": "json", "schema": "missing.json"}, "schema: file 'missing.json' not found"),
        ({"type": "json", "fields": []}, "fields: needs a non-empty list"),
    ],
)
def test_json_params_are_checked_at_build(spec, message, tmp_path):
    with pytest.raises(EvaluatorError, match=message):
        build_evaluators([spec], tmp_path)


def test_json_fields_compare_with_the_expected_value():
    spec = {"type": "json", "fields": ["name", "address.city", "tags.0"]}
    expected = {"name": "Ada", "address": {"city": "London"}, "tags": ["math"], "ignored": 1}
    output = {"name": "Ada", "address": {"city": "Paris"}, "tags": ["math"], "ignored": 2}
    result = score(spec, json.dumps(output), json.dumps(expected))
    assert result.score == pytest.approx(2 / 3) and result.passed is False
    assert result.detail == "fields differ: address.city"
    assert score(spec, output, expected | {"address": {"city": "Paris"}}).passed is True


def test_json_fields_missing_from_expected_is_an_error_and_no_expected_is_a_skip():
    assert score({"type": "json", "fields": ["x"]}, '{"x": 1}', {"y": 1}).error == "the expected value has no field 'x'"
    assert score({"type": "json", "fields": ["x"]}, '{"x": 1}', None).skipped


@pytest.mark.parametrize(
    "spec, fields, passed, skipped",
    [
        ({"type": "latency", "max_ms": 100}, {"latency_ms": 99.5}, True, False),
        ({"type": "latency", "max_ms": 100}, {"latency_ms": 100.5}, False, False),
        ({"type": "latency", "max_ms": 100}, {}, False, True),
        ({"type": "cost", "max_usd": 0.01}, {"cost_usd": 0.002}, True, False),
        ({"type": "cost", "max_usd": 0.01}, {"cost_usd": 0.02}, False, False),
        ({"type": "cost", "max_usd": 0.01}, {}, False, True),
    ],
)
def test_ceilings_pass_at_or_below_and_skip_unknown_values(spec, fields, passed, skipped):
    result = score(spec, "out", **fields)
    assert (result.passed, result.skipped) == (passed, skipped)


def test_ceilings_need_their_limit_and_thread_scope():
    with pytest.raises(EvaluatorError, match="max_ms: needs a number of at least 0, got None"):
        build_evaluators([{"type": "latency"}])
    with pytest.raises(EvaluatorError, match="scope: cost supports only thread"):
        build_evaluators([{"type": "cost", "max_usd": 1, "scope": "single_turn"}])
