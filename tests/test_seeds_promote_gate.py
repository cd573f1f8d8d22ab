"""Promotion gate (seed 003): promote refuses a failed critical row and too many failed generations."""

from __future__ import annotations

import json

import pytest
from compare_support import CRITICAL, run_arm
from runner_support import only_run, questions, write_experiment

from evalsite.errors import ProjectError
from evalsite.project import Project, max_error_rate


def decisions(root) -> list[dict]:
    path = root / "runs" / "decisions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_run_with_a_failed_critical_row_is_refused_unless_allowed(golden_project, cli):
    run = run_arm(cli, golden_project, params={"wrong": [CRITICAL]})
    refused = cli("promote", run, "--reason", "looks fine", "--allow-dirty")
    assert refused.exit_code == 1
    assert refused.stderr == (f"Error: {run}: refusing to promote a run whose critical rows failed ({CRITICAL}); "
                              "fix them or pass --allow-critical\n")
    assert decisions(golden_project) == []
    allowed = cli("promote", run, "--reason", "known issue, tracked", "--allow-dirty", "--allow-critical")
    assert allowed.exit_code == 0, allowed.output
    assert decisions(golden_project)[0]["allow_critical"] is True


def test_a_non_critical_failure_does_not_block_promotion(golden_project, cli):
    run = run_arm(cli, golden_project, params={"wrong": ["g05"]})
    assert cli("promote", run, "--reason", "one miss", "--allow-dirty").exit_code == 0
    assert decisions(golden_project)[0]["allow_critical"] is False


FLAKY = "def answer(row):\n    if row['id'] in ('q0', 'q1', 'q2'):\n        raise RuntimeError('down')\n    return 'echo: ' + row['input']\n"


@pytest.mark.parametrize("setting, refused", [(None, True), ("max_error_rate = 0.75", False), ("max_error_rate = 0.6", False),
                                              ("max_error_rate = 0.5", True)])
def test_errors_above_ci_max_error_rate_are_refused(runner_project, cli, setting, refused):
    (runner_project / "flaky_arm.py").write_text(FLAKY)
    if setting:
        (runner_project / "evalsite.toml").write_text(f"[ci]\n{setting}\n")
    manifest = write_experiment(runner_project, questions(5), [{"id": "flaky", "target": "python:flaky_arm:answer"}])
    cli("run", manifest)
    run = only_run(runner_project).run_id
    result = cli("promote", run, "--reason", "r", "--allow-dirty")
    assert (result.exit_code == 1) == refused, result.output
    if refused:
        assert "refusing to promote: 3 of 5 cases failed to generate (60%, above [ci] max_error_rate 0.5) (evalsite.toml [ci])" in result.stderr


@pytest.mark.parametrize("value", ["'high'", "1.5", "-0.1", "true"])
def test_a_bad_max_error_rate_is_one_line_naming_the_key(value, tmp_path):
    import tomllib

    with pytest.raises(ProjectError, match=r"evalsite.toml: \[ci\] max_error_rate: needs a number from 0 to 1"):
        max_error_rate(Project(tmp_path, tomllib.loads(f"[ci]\nmax_error_rate = {value}\n")))
    assert max_error_rate(Project(tmp_path, {})) == 0.5


def test_the_documented_ci_setting_reads_as_documented(tmp_path):
    import re
    import tomllib
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs/reference/commands/compare.md").read_text()
    (block,) = re.findall(r"```toml\n# evalsite.toml\n(.*?)```", page, re.DOTALL)
    assert max_error_rate(Project(tmp_path, tomllib.loads(block))) == 0.05


def test_validate_reports_a_bad_max_error_rate(runner_project, cli):
    (runner_project / "evalsite.toml").write_text("[ci]\nmax_error_rate = 2\n")
    result = cli("validate")
    assert result.exit_code == 1
    assert "evalsite.toml: [ci] max_error_rate: needs a number from 0 to 1, got 2" in result.output
