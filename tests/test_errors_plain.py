"""Library errors are plain exceptions: ``evalsite.run_experiment`` raises them without click, and
the CLI turns each, in one place, into the one ``Error:`` line and exit code 1 it always printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from runner_support import questions, write_experiment

import evalsite
from evalsite.errors import EvalsiteError, ManifestError, PlanError


def test_the_error_tree_does_not_derive_from_click_and_its_module_loads_no_click():
    assert not issubclass(EvalsiteError, click.ClickException)
    probe = "import sys, evalsite.errors; print('click' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "False"


def test_a_message_is_bounded_and_is_the_errors_str():
    error = ManifestError("unknown arm " + "x" * 5000)
    assert str(error) == error.message == "unknown arm " + "x" * 60 + "…(5,000 chars)"
    assert error.exit_code == 1


def test_the_library_raises_the_plain_error(runner_project):
    manifest = write_experiment(runner_project, questions(1), [{"id": "a", "target": "python:nowhere:f"}])
    with pytest.raises(PlanError) as raised:
        evalsite.run_experiment(manifest, project=runner_project)
    assert raised.value.message.startswith("arm 'a': target 'nowhere:f': cannot find module 'nowhere'")
    assert not isinstance(raised.value, click.ClickException)


def test_the_cli_prints_the_same_error_as_one_line_with_exit_code_1(runner_project, cli):
    manifest = write_experiment(runner_project, questions(1), [{"id": "a", "target": "python:nowhere:f"}])
    with pytest.raises(EvalsiteError) as raised:
        evalsite.run_experiment(manifest, project=runner_project)
    result = cli("run", manifest)
    assert result.exit_code == 1
    assert result.stderr == f"Error: {raised.value.message}\n"
    assert result.stdout == ""


def test_an_error_raised_by_the_group_itself_is_converted_too(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)  # not a project: the group refuses before any command runs
    result = cli("runs")
    assert result.exit_code == 1 and result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1


def test_a_usage_error_still_exits_2(runner_project, cli):
    result = cli("run", "--no-such-option")
    assert result.exit_code == 2 and "No such option" in result.stderr


def test_the_architecture_pages_example_runs_and_prints_what_the_cli_prints(runner_project, cli, capsys):
    page = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Errors: plain in the library", 1)[1]
    (example,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    exec(compile(example, "docs/architecture.md", "exec"), {})
    printed = capsys.readouterr().out
    assert cli("compare", "no-such-run").stderr == f"Error: {printed}"
