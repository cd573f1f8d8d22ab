"""docs/reference/plugins.md: the package it shows is the one the tests install (file by file), and
its step and page examples register and work."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from example_support import REPO
from plugin_support import MANIFEST, PLUGIN

from evalsite.execute import builtin_steps
from evalsite.execute.builtin_steps import StepFailed
from evalsite.project import find_project
from evalsite.site import pages
from evalsite.site.build import build_site

DOC = REPO / "docs" / "reference" / "plugins.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text()) if lang == language]


def example(marker: str) -> str:
    (body,) = [b for b in blocks("python") if marker in b]
    return body


def test_the_page_shows_the_installed_package_as_it_is():
    shown = blocks("toml") + blocks("python")
    for path in [PLUGIN / "pyproject.toml", *sorted((PLUGIN / "evalsite_example_plugin").glob("[!_]*.py"))]:
        assert path.read_text() in shown, f"{path.relative_to(REPO)} differs from its copy in plugins.md"
    assert blocks("yaml") == [MANIFEST]


def test_every_entry_point_group_is_documented():
    groups = {registry.group for registry in (pages.PAGES, builtin_steps.STEPS)}
    groups |= {"evalsite.targets", "evalsite.evaluators", "evalsite.importers"}
    text = DOC.read_text()
    assert all(f"`{group}`" in text for group in groups)


def test_the_step_example_registers_and_runs(tmp_path: Path):
    with builtin_steps.STEPS.isolated():
        exec(example("register_step("), {})
        step = builtin_steps.STEPS.get("count_files")
    assert builtin_steps.STEPS.find("count_files") is None
    with pytest.raises(StepFailed, match="count_files: nothing in"):
        step(SimpleNamespace(level_dir=tmp_path))
    (tmp_path / "a.json").write_text("{}")
    assert step(SimpleNamespace(level_dir=tmp_path)) == "1 files"


@pytest.fixture
def page_example():
    """The doc's page family, registered until the test ends."""
    with pages.PAGES.isolated():
        exec(example("register_page("), {})
        yield


def test_the_page_example_is_built_with_the_site(tmp_path: Path, monkeypatch, cli, page_example):
    (tmp_path / "data").mkdir()
    (tmp_path / "experiments").mkdir()
    (tmp_path / "data/words.jsonl").write_text(json.dumps({"id": "w1", "input": "hi", "output": "<b>hi</b>"}) + "\n")
    (tmp_path / "experiments/loud.yaml").write_text(
        "name: loud\ndataset: {path: data/words.jsonl}\narms:\n  - {id: shouty, target: none}\n  - {id: quiet, target: none}\n")
    monkeypatch.chdir(tmp_path)
    assert cli("run", "experiments/loud.yaml", "--allow-failures").exit_code == 0
    build_site(find_project())
    assert (tmp_path / "site/arms.html").read_text() == "<!doctype html><title>Arms</title><ul><li>quiet</li><li>shouty</li></ul>"
    assert (tmp_path / "site/index.html").is_file()


def test_every_link_resolves():
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", DOC.read_text()):
        assert (DOC.parent / target).exists(), f"plugins.md: broken link {target}"
