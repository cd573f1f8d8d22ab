"""docs/reference/evaluators.md: every family is documented and every example builds and runs."""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from evalsite.scoring.case import score_case
from evalsite.scoring.evaluators import CaseView, base, build_evaluators, evaluator_types

DOC = Path(__file__).resolve().parent.parent / "docs" / "reference" / "evaluators.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text()) if lang == language]


@pytest.fixture
def docs_project(tmp_path, monkeypatch):
    """The doc's example modules (python blocks opening with '# <name>.py') written to a project."""
    monkeypatch.setattr(sys, "path", [*sys.path])
    names = []
    for body in blocks("python"):
        first = body.splitlines()[0]
        if re.fullmatch(r"# \w+\.py", first):
            (tmp_path / first[2:]).write_text(body)
            names.append(first[2:-3])
    for name in names:
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield tmp_path
    for name in names:
        sys.modules.pop(name, None)


def test_every_family_has_a_section():
    headings = re.findall(r"^### (.+)$", DOC.read_text(), re.MULTILINE)
    documented = set(" ".join(headings).replace(",", " ").split())
    assert [kind for kind in evaluator_types() if kind not in documented and kind != "python:…"] == []
    assert "A function: `python:module:function`" in headings


@pytest.mark.parametrize("snippet", blocks("yaml"), ids=lambda s: s.splitlines()[1].strip()[:40])
def test_every_manifest_snippet_builds(snippet, docs_project):
    specs = yaml.safe_load(snippet)["evaluators"]
    assert len(build_evaluators(specs, docs_project)) == len(specs)


def score_with(snippet_marker: str, output: str, project: Path, expected=None):
    (snippet,) = [s for s in blocks("yaml") if snippet_marker in s]
    evaluators = build_evaluators(yaml.safe_load(snippet)["evaluators"], project)
    view = CaseView(input="Where is my order?", output=output, expected=expected, row={"id": "r1"})
    return asyncio.run(score_case(evaluators, view, None))


def test_the_code_evaluator_examples_score(docs_project):
    result = score_with("within_budget", "Sorry, please wait " + "word " * 60, docs_project)
    polite, tone, budget = result.scores
    assert (polite.passed, tone.label, tone.passed) == (True, "apologetic", True)
    assert budget.score == pytest.approx(40 / 63) and budget.passed is True and budget.detail == "63 words"


def test_the_judge_example_scores_with_its_offline_judge(docs_project):
    (judged,) = score_with("name: helpful", "It ships tomorrow.", docs_project).scores
    assert (judged.score, judged.spread, judged.passed) == (1.0, 0.0, True)
    (empty,) = score_with("name: helpful", "", docs_project).scores
    assert (empty.score, empty.passed) == (0.0, False)


def test_the_humaneval_example_scores_a_completion_and_labels_a_wrong_one(docs_project):
    (row,) = [json.loads(b) for b in blocks("json") if '"entry_point"' in b]
    (snippet,) = [s for s in blocks("yaml") if "type: code_tests" in s]
    evaluators = build_evaluators(yaml.safe_load(snippet)["evaluators"], docs_project)
    outcomes, details = {}, {}
    for completion in ("    return number % 1.0\n", "    return number\n", "    return number %\n"):
        view = CaseView(input=row["input"], output=completion, expected=None, row=row)
        (score,) = asyncio.run(score_case(evaluators, view, None)).scores
        outcomes[completion.strip()] = (score.score, score.label)
        details[completion.strip()] = without_timing(score.detail)
    assert outcomes == {"return number % 1.0": (1.0, "passed"), "return number": (0.0, "failed"),
                        "return number %": (0.0, "syntax_error")}
    (shown,) = [b for b in blocks("text") if b.startswith("AssertionError (program.py")]
    assert details["return number"] == without_timing(shown)


def without_timing(detail: str) -> str:
    """A detail without its seconds and traceback carets (which Python versions draw differently)."""
    lines = re.sub(r"\(\d+\.\d\d s\)", "(… s)", detail).splitlines()
    return "\n".join(line for line in lines if not re.fullmatch(r"\s*[\^~]+\s*", line))


def test_the_plugin_example_registers_and_scores(docs_project, monkeypatch):
    with base.EVALUATORS.isolated():  # the example registers no_urls in a registry restored afterwards
        (plugin,) = [b for b in blocks("python") if "register_evaluator(" in b]
        (docs_project / "plugin_example.py").write_text(plugin)
        monkeypatch.syspath_prepend(str(docs_project))
        monkeypatch.delitem(sys.modules, "plugin_example", raising=False)
        importlib.import_module("plugin_example")
        (evaluator,) = build_evaluators([{"type": "no_urls", "allow": ["https://example.com"]}])
        view = CaseView(input="", output="see https://example.com/a and http://evil.test", expected=None, row={})
        (result,) = asyncio.run(evaluator.ascore(view))
        assert (result.passed, result.detail) == (False, "links: http://evil.test")
