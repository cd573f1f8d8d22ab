"""A target kind from an installed package, found through its ``evalsite.targets`` entry point."""

from __future__ import annotations

import textwrap

import pytest
from runner_support import only_run, questions, write_experiment

from evalsite.calls.targets import base

PLUGIN = """
from evalsite.calls.targets import TargetResult, register_target


class Shout:
    kind = "shout"

    def __init__(self, suffix):
        self.suffix = suffix

    async def generate(self, request):
        return TargetResult(output=request.input.upper() + self.suffix)

    async def aclose(self):
        return None


@register_target("shout")
def make(rest, settings, project_root):
    return Shout(rest or "!")
"""


@pytest.fixture(autouse=True)
def own_registry():
    """The kinds a test's plugin registers stay in that test (later tests list the built-ins only)."""
    with base.TARGETS.isolated():
        yield


def install(site, name: str, module_text: str) -> None:
    """A minimal installed distribution: a module plus dist-info declaring the entry point."""
    (site / f"{name}.py").write_text(textwrap.dedent(module_text))
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[evalsite.targets]\n{name} = {name}\n")


def test_a_plugin_kind_runs_like_a_built_in(runner_project, cli, tmp_path_factory, monkeypatch):
    site = tmp_path_factory.mktemp("site")
    install(site, "evalsite_shout", PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    arms = [{"id": "loud", "target": "shout:?!"}]
    assert cli("run", write_experiment(runner_project, questions(2), arms, evaluators=[])).exit_code == 0
    assert sorted(c["output"] for c in only_run(runner_project).cases) == ["QUESTION 0?!", "QUESTION 1?!"]


def test_a_broken_plugin_is_named(runner_project, cli, tmp_path_factory, monkeypatch):
    site = tmp_path_factory.mktemp("site")
    install(site, "evalsite_broken", "raise RuntimeError('missing dependency')\n")
    monkeypatch.syspath_prepend(str(site))
    result = cli("run", write_experiment(runner_project, questions(1), [{"id": "x", "target": "nope"}]))
    assert result.exit_code == 1
    assert result.output.strip() == (
        "Error: target plugin 'evalsite_broken' (evalsite_broken) failed to load: missing dependency"
    )


def test_an_unknown_kind_lists_the_known_ones(runner_project, cli):
    result = cli("run", write_experiment(runner_project, questions(1), [{"id": "x", "target": "opena:gpt"}]))
    assert result.exit_code == 1
    assert result.output.startswith(
        "Error: experiments/exp.yaml: arms[0].target: unknown target kind 'opena'; did you mean 'openai'? (known: anthropic, ")
