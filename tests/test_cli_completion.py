"""Shell completion of RUN arguments (docs/reference/commands.md#shell-completion), through click's
completion protocol and through bash itself, in a real ``evalsite init`` project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("duckdb", "scipy", "numpy", "pyarrow", "jinja2", "httpx")


@pytest.fixture
def completion_project(cli, tmp_path, monkeypatch) -> Path:
    """An ``evalsite init`` project after its first run (two arms), and an ``evalsite`` on PATH."""
    monkeypatch.chdir(tmp_path)
    assert cli("init", "p").exit_code == 0
    monkeypatch.chdir(tmp_path / "p")
    assert cli("run", "experiments/example.yaml", "--allow-failures").exit_code == 0
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "evalsite"  # a console script as pip writes it: the program is called "evalsite"
    script.write_text(f"#!{sys.executable}\nfrom evalsite.cli import main\nmain()\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "p"


def complete(words: str, cwd: Path, shell: str = "bash") -> list[str]:
    """What ``evalsite`` answers a shell asking to complete the last of ``words`` (click's protocol)."""
    parts = words.split(" ")
    env = {**os.environ, "_EVALSITE_COMPLETE": f"{shell}_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)}
    done = subprocess.run(["evalsite"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return [line for line in done.stdout.splitlines() if line]  # nothing to offer: an empty line


def newest_first(completion_project: Path) -> list[str]:
    """The run ids by their recorded start, newest first (what ``ARM@latest`` orders by)."""
    started = {p.name: json.loads((p / "run.json").read_text())["started_at"] for p in (completion_project / "runs").iterdir() if p.is_dir()}
    return sorted(started, key=lambda run_id: (started[run_id], run_id), reverse=True)


def test_a_run_argument_completes_to_the_run_ids_newest_first_then_arm_at_latest(completion_project):
    ids = newest_first(completion_project)
    assert len(ids) == 2
    arms = [run_id.split("-")[1] for run_id in ids]
    expected = [f"plain,{run_id}" for run_id in ids] + [f"plain,{arm}@latest" for arm in arms]
    for words in ("evalsite show ", "evalsite compare ", "evalsite compare x --baseline ", "evalsite family-test x --vs ",
                  "evalsite noise ", "evalsite ci summary ", "evalsite runs --exclude ",
                  "evalsite run experiments/example.yaml --resume ", "evalsite run experiments/example.yaml --baseline "):
        assert complete(words, completion_project) == expected, words
    assert complete("evalsite show rev", completion_project) == ["plain,reverse@latest"]
    assert complete(f"evalsite show {ids[0][:-3]}", completion_project) == [f"plain,{ids[0]}"]
    assert complete("evalsite show nosuch", completion_project) == []


def test_zsh_shows_each_runs_arm_beside_its_id(completion_project):
    ids = newest_first(completion_project)
    answer = complete("evalsite show 2", completion_project, shell="zsh")
    assert answer == [line for run_id in ids for line in ("plain", run_id, run_id.split("-")[1])]


def test_completion_reads_the_runs_location_the_command_would_and_nothing_outside_a_project(completion_project, tmp_path):
    elsewhere = tmp_path / "store"
    shutil.copytree(completion_project / "runs", elsewhere)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert complete("evalsite show ", empty) == []
    listed = complete(f"evalsite --runs {elsewhere} show ", empty)
    assert listed[: len(newest_first(completion_project))] == [f"plain,{run_id}" for run_id in newest_first(completion_project)]
    (elsewhere / newest_first(completion_project)[0] / "run.json").write_text("{not json")
    unreadable = complete(f"evalsite --runs {elsewhere} show ", empty)
    assert f"plain,{newest_first(completion_project)[0]}" in unreadable and len(unreadable) == 3  # its arm@latest is unknown


def test_completing_a_run_loads_no_database_or_statistics(completion_project):
    probe = ("import atexit, sys\n"
             f"atexit.register(lambda: sys.stderr.write(' '.join(m for m in {HEAVY!r} if m in sys.modules)))\n"
             "from evalsite.cli import main\nmain(prog_name='evalsite')\n")
    env = {**os.environ, "_EVALSITE_COMPLETE": "bash_complete", "COMP_WORDS": "evalsite show ", "COMP_CWORD": "2"}
    done = subprocess.run([sys.executable, "-c", probe], cwd=completion_project, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "@latest" in done.stdout
    assert done.stderr == "", f"completing `show RUN` imported {done.stderr}"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_documented_bash_line_completes_run_ids_in_bash(completion_project):
    """The ``eval "$(_EVALSITE_COMPLETE=bash_source evalsite)"`` of the docs, then bash's own call."""
    script = ('eval "$(_EVALSITE_COMPLETE=bash_source evalsite)"\n'
              'COMP_WORDS=(evalsite show rev); COMP_CWORD=2; _evalsite_completion evalsite 2>/dev/null\n'
              'printf "%s\\n" "${COMPREPLY[@]}"\n'
              'COMPREPLY=(); COMP_WORDS=(evalsite sh); COMP_CWORD=1; _evalsite_completion evalsite 2>/dev/null\n'
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    done = subprocess.run(["bash", "-c", script], cwd=completion_project, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["reverse@latest", "show"]
