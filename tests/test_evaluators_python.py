"""python:module:function evaluators: what a function may return, and versions that follow its source."""

from __future__ import annotations

import asyncio
import importlib
import itertools
import sys
import textwrap

import pytest

from evalsite.errors import EvaluatorError
from evalsite.scoring.evaluators import CaseView, Score, build_evaluators

_numbers = itertools.count()


@pytest.fixture
def scorer_project(tmp_path, monkeypatch):
    """Write scoring modules into a tmp project; ``scorer_project.write(source)`` returns a module name."""
    monkeypatch.setattr(sys, "path", [*sys.path])
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # a rewrite within one second must not hit a stale .pyc
    written: list[str] = []

    class Project:
        root = tmp_path

        def write(self, source: str, name: str | None = None) -> str:
            name = name or f"scorers_{next(_numbers)}"
            (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
            sys.modules.pop(name, None)  # a new process would import the file afresh
            importlib.invalidate_caches()
            written.append(name)
            return name

        def build(self, spec: dict):
            (evaluator,) = build_evaluators([spec], tmp_path)
            return evaluator

    yield Project()
    for name in written:
        sys.modules.pop(name, None)


def run(project, spec: dict, output="out", expected="exp", **fields) -> Score:
    view = CaseView(input="in", output=output, expected=expected, row={"id": "r1"}, **fields)
    (result,) = asyncio.run(project.build(spec).ascore(view))
    return result


RETURNS = '''
    def yes(output):
        return output == "out"

    def half():
        return 0.5

    def label(output):
        return "polite" if "please" in output else "rude"

    def nothing():
        return None

    def mapping(output, expected):
        return {"score": 0.25, "passed": True, "label": "meh", "detail": f"{output} vs {expected}"}

    def too_big():
        return 42

    def a_list():
        return [1]

    def bad_key():
        return {"score": 1, "confidence": 0.3}

    async def slow_yes(output, params):
        return {"passed": output == params["want"]}

    def everything(**kwargs):
        return {"label": ",".join(sorted(kwargs))}

    def boom(output):
        raise ValueError("cannot score " + output)
'''


@pytest.mark.parametrize(
    "function, fields",
    [
        ("yes", dict(score=1.0, passed=True, label=None, skipped=False)),
        ("half", dict(score=0.5, passed=None, label=None, skipped=False)),
        ("label", dict(score=None, passed=None, label="rude", skipped=False)),
        ("nothing", dict(score=None, passed=False, label=None, skipped=True)),
        ("mapping", dict(score=0.25, passed=True, label="meh", detail="out vs exp")),
    ],
)
def test_what_a_function_may_return(scorer_project, function, fields):
    name = scorer_project.write(RETURNS)
    result = run(scorer_project, {"type": f"python:{name}:{function}"})
    assert result.error is None
    assert {key: getattr(result, key) for key in fields} == fields


def test_a_number_passes_at_the_threshold_and_labels_at_pass_labels(scorer_project):
    name = scorer_project.write(RETURNS)
    assert run(scorer_project, {"type": f"python:{name}:half", "threshold": 0.5}).passed is True
    assert run(scorer_project, {"type": f"python:{name}:half", "threshold": 0.6}).passed is False
    spec = {"type": f"python:{name}:label", "pass_labels": ["polite"]}
    assert run(scorer_project, spec, output="please").passed is True
    assert run(scorer_project, spec, output="now").passed is False


@pytest.mark.parametrize(
    "function, message",
    [
        ("too_big", "returned 42; scores must be numbers from 0 to 1"),
        ("a_list", "returned a list; return a bool, a number from 0 to 1, a label"),
        ("bad_key", "returned unknown key 'confidence'"),
        ("boom", "ValueError: cannot score out"),
    ],
)
def test_bad_returns_and_exceptions_are_error_scores(scorer_project, function, message):
    name = scorer_project.write(RETURNS)
    result = run(scorer_project, {"type": f"python:{name}:{function}"})
    assert message in result.error and result.passed is False and result.score is None


def test_async_functions_and_params(scorer_project):
    name = scorer_project.write(RETURNS)
    assert run(scorer_project, {"type": f"python:{name}:slow_yes", "want": "out"}).passed is True
    assert run(scorer_project, {"type": f"python:{name}:slow_yes", "params": {"want": "no"}}).passed is False


def test_keyword_catch_all_receives_every_offered_argument(scorer_project):
    name = scorer_project.write(RETURNS)
    offered = run(scorer_project, {"type": f"python:{name}:everything"}).label.split(",")
    assert offered == sorted(["output", "expected", "input", "row", "latency_ms", "cost_usd", "transcript",
                              "turn_outputs", "turn", "params", "case"])


@pytest.mark.parametrize(
    "type_, message",
    [
        ("python", "'python' should be written 'python:<reference>'"),
        ("python:nowhere_at_all:f", "cannot import module 'nowhere_at_all'"),
        ("python:{name}:missing", "has no function 'missing'"),
        ("python:{name}:odd", "takes 'answer', which evalsite cannot supply"),
        ("exact:extra", "'exact:extra' should be written 'exact' with nothing after it"),
    ],
)
def test_bad_python_references_fail_at_build(scorer_project, type_, message):
    name = scorer_project.write("def odd(answer):\n    return True\n")
    with pytest.raises(EvaluatorError, match=message):
        scorer_project.build({"type": type_.format(name=name)})


def test_a_module_that_fails_to_import_is_a_build_error(scorer_project):
    name = scorer_project.write("def check(output):\n    return output ==\n")
    with pytest.raises(EvaluatorError, match=f"importing .{name}. failed: SyntaxError"):
        scorer_project.build({"type": f"python:{name}:check"})


def test_type_name_and_default_name_are_the_full_reference(scorer_project):
    name = scorer_project.write(RETURNS)
    evaluator = scorer_project.build({"type": f"python:{name}:yes"})
    assert evaluator.type_name == evaluator.name == f"python:{name}:yes"


SCORER = '''
LIMIT = {limit}

def _clean(text):
    return text.strip(){clean_extra}

def unrelated():
    return {unrelated}

def short_enough(output):
    return len(_clean(output)) <= LIMIT
'''


def scorer_version(project, name: str, limit=10, clean_extra="", unrelated=1) -> str:
    project.write(SCORER.format(limit=limit, clean_extra=clean_extra, unrelated=unrelated), name)
    return project.build({"type": f"python:{name}:short_enough"}).version


def test_version_follows_the_function_its_helpers_and_constants(scorer_project):
    base = scorer_version(scorer_project, "length_scorer")
    assert scorer_version(scorer_project, "length_scorer") == base
    assert scorer_version(scorer_project, "length_scorer", unrelated=2) == base
    assert scorer_version(scorer_project, "length_scorer", limit=12) != base
    assert scorer_version(scorer_project, "length_scorer", clean_extra=".lower()") != base


def test_version_changes_when_the_function_source_changes(scorer_project):
    scorer_project.write("def check(output):\n    return output == 'a'\n", "changing")
    before = scorer_project.build({"type": "python:changing:check"}).version
    scorer_project.write("def check(output):\n    return output in ('a', 'A')\n", "changing")
    assert scorer_project.build({"type": "python:changing:check"}).version != before


def test_version_covers_helpers_imported_from_other_project_modules(scorer_project):
    scorer_project.write("def norm(text):\n    return text.strip()\n", "helpers_mod")
    scorer_project.write("from helpers_mod import norm\n\ndef check(output):\n    return norm(output) == 'a'\n", "main_mod")
    before = scorer_project.build({"type": "python:main_mod:check"}).version
    scorer_project.write("def norm(text):\n    return text.strip().lower()\n", "helpers_mod")
    scorer_project.write("from helpers_mod import norm\n\ndef check(output):\n    return norm(output) == 'a'\n", "main_mod")
    assert scorer_project.build({"type": "python:main_mod:check"}).version != before
