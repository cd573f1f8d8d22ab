"""The import reference pages: every ``evalsite`` example in them runs, every link resolves."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = sorted((REPO / "docs" / "reference" / "importers").glob("*.md")) + [
    REPO / "docs" / "reference" / "commands" / "import.md"
]
SHELL_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
LINK = re.compile(r"\]\(([^)#]+)(#[^)]*)?\)")


def examples(page: Path) -> list[list[str]]:
    commands = []
    for block in SHELL_BLOCK.findall(page.read_text()):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "evalsite":
                commands.append(words[1:])
    return commands


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_example_runs(page, tmp_path, monkeypatch, cli):
    (tmp_path / "data").mkdir()
    (tmp_path / "tests").symlink_to(REPO / "tests")
    monkeypatch.chdir(tmp_path)
    commands = examples(page)
    programs = PYTHON_BLOCK.findall(page.read_text())
    assert commands or programs, f"{page.name} shows no example"
    for words in commands:
        result = cli(*words)
        assert result.exit_code == 0, f"{page.name}: evalsite {' '.join(words)}\n{result.output}"
    for program in programs:
        exec(compile(program, str(page), "exec"), {})


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_resolves(page):
    for target, _ in LINK.findall(page.read_text()):
        if not target.startswith(("http:", "https:")):
            assert (page.parent / target).exists(), f"{page.name}: broken link {target}"
