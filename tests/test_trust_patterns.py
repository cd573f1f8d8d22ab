"""Every user pattern runs under a deadline: a catastrophic ``json_schema`` pattern ends the case
with an error score in seconds instead of hanging the run (issue 15, defect 3)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalsite.errors import EvaluatorError
from evalsite.runlog.store import CASES_FILE, read_cases, run_directories
from evalsite.scoring.evaluators import CaseView, build_evaluators

REPO = Path(__file__).resolve().parent.parent
CATASTROPHIC = r"^(a|aa)+$"  # exponential in Python's re and in regex alike
SLOW_TEXT = "a" * 60 + "b"


def score(schema: dict, output: str, **params):
    (evaluator,) = build_evaluators([{"type": "json_schema", "schema": schema, **params}], None)
    (result,) = asyncio.run(evaluator.ascore(CaseView(input="q", output=output, expected=None, row={})))
    return result


@pytest.mark.parametrize("schema, document", [
    ({"properties": {"s": {"type": "string", "pattern": CATASTROPHIC}}}, {"s": SLOW_TEXT}),
    ({"patternProperties": {CATASTROPHIC: {}}}, {SLOW_TEXT: 1}),
    ({"patternProperties": {CATASTROPHIC: {}}, "additionalProperties": False}, {SLOW_TEXT: 1}),
    ({"patternProperties": {CATASTROPHIC: {}}, "unevaluatedProperties": False}, {SLOW_TEXT: 1}),
    ({"propertyNames": {"pattern": CATASTROPHIC}}, {SLOW_TEXT: 1}),
])
def test_a_catastrophic_schema_pattern_is_an_error_score(schema, document):
    result = score(schema, json.dumps(document), timeout=0.05)
    assert result.score is None and "ran longer than 0.05s" in result.error and CATASTROPHIC in result.error


def test_schema_patterns_still_match_and_fail_as_before():
    schema = {"properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"}}}
    assert score(schema, '{"code": "ABC-12"}').passed is True
    failed = score(schema, '{"code": "abc"}')
    assert failed.passed is False and "does not match" in failed.detail


def test_a_schema_pattern_over_max_chars_is_an_error_and_limits_are_checked():
    schema = {"properties": {"s": {"type": "string", "pattern": "x"}}}
    assert "more than max_chars 10" in score(schema, json.dumps({"s": "y" * 11}), max_chars=10).error
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(EvaluatorError, match="timeout and max_chars"):
            build_evaluators([{"type": "json_schema", "schema": schema, "timeout": bad}], None)


ARM = '''
def reply(input):
    return '{"s": "%s"}' % ("a" * 60 + "b")
'''
MANIFEST = f'''
name: hang
dataset:
  path: data/d.jsonl
arms:
  - id: a
    target: python:hang_arm:reply
evaluators:
  - type: json_schema
    schema:
      properties:
        s: {{type: string, pattern: "{CATASTROPHIC}"}}
'''


def test_a_run_with_a_catastrophic_schema_pattern_finishes_and_records_the_error(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "experiments").mkdir()
    (tmp_path / "data/d.jsonl").write_text('{"input": "x"}\n{"input": "y"}\n')
    (tmp_path / "hang_arm.py").write_text(textwrap.dedent(ARM))
    (tmp_path / "experiments/hang.yaml").write_text(MANIFEST)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        done = subprocess.run([sys.executable, "-m", "evalsite", "run", "experiments/hang.yaml"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the run hung on the schema pattern")
    assert "Traceback" not in done.stderr
    (directory,) = run_directories(tmp_path / "runs")
    cases = read_cases(directory / CASES_FILE)
    assert len(cases) == 2
    assert all("ran longer than" in case["scores"][0]["error"] for case in cases)
