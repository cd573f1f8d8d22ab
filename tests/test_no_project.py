"""Outside any project, a command says so in one line and exits 1, instead of an empty listing,
an "ok: 0 manifests checked" or a site built in the wrong folder."""

from __future__ import annotations

import subprocess
import sys

import pytest

NO_PROJECT = "no evalsite project in "


@pytest.mark.parametrize("command", [["runs"], ["validate"], ["build"], ["leaderboard"], ["check-claims"],
                                     ["show", "x@latest"], ["query", "select 1"]])
def test_a_command_in_an_empty_folder_says_there_is_no_project(tmp_path, command):
    done = subprocess.run([sys.executable, "-m", "evalsite", *command], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"Error: {NO_PROJECT}{tmp_path}") and "evalsite init" in line
    assert list(tmp_path.iterdir()) == []  # nothing made there (no site/, no runs/)


def test_help_init_and_a_folder_with_only_runs_still_work(tmp_path):
    def evalsite(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "evalsite", *args], cwd=tmp_path, capture_output=True, text=True)

    assert evalsite("runs", "--help").returncode == 0
    assert evalsite("schema").returncode == 0
    (tmp_path / "runs").mkdir()  # what `evalsite import` makes in an empty folder
    listed = evalsite("runs")
    assert listed.returncode == 0 and NO_PROJECT not in listed.stderr
    assert evalsite("init", "new").returncode == 0 and (tmp_path / "new" / "experiments").is_dir()
