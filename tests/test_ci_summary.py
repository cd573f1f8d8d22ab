"""``evalsite ci summary`` and the scaffolded workflow's shell steps, run for real in a fresh
``init`` project (everything but the install step and the actions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from xml.etree import ElementTree

import yaml


def test_without_the_variable_or_o_it_is_one_error_line(cli, tmp_path, monkeypatch):
    (tmp_path / "runs").mkdir()  # a project (outside one, the command says that instead)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = cli("ci", "summary")
    assert result.exit_code == 1
    assert result.stderr == ("Error: $GITHUB_STEP_SUMMARY is not set (GitHub Actions sets it in every step); "
                             "pass -o FILE to write the summary to a file\n")
    refused = cli("ci", "summary", "-o", "summary.html")
    assert refused.stderr == "Error: summary.html: ci summary does not write .html; ci summary -o writes .md\n"


def test_it_appends_runs_comparisons_and_claims_to_the_step_summary(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("init", "p").exit_code == 0
    monkeypatch.chdir(tmp_path / "p")
    cli("run", "experiments/example.yaml", "--allow-failures", "-o", "runs.json")
    step = tmp_path / "step.md"
    step.write_text("### an earlier step\n\n")
    result = cli("ci", "summary", "--from", "runs.json", env={"GITHUB_STEP_SUMMARY": str(step)})
    assert result.exit_code == 0, result.output
    text = step.read_text()
    assert text.startswith("### an earlier step\n\n### evalsite runs\n")  # appended, as GitHub documents
    for run_id in (row["run_id"] for row in json.loads((tmp_path / "p" / "runs.json").read_text())):
        assert f"| {run_id} | completed |" in text and f"### evalsite compare: {run_id}" in text
    assert "### evalsite claims: " in text
    assert result.stderr == "appended the summary to $GITHUB_STEP_SUMMARY\n"
    quiet = cli("-q", "ci", "summary", "--from", "runs.json", "--no-claims", env={"GITHUB_STEP_SUMMARY": str(step)})
    assert quiet.stderr == "" and step.read_text().count("### evalsite runs") == 2


def test_the_scaffolded_workflow_steps_run_and_write_the_pull_request_summary(cli, tmp_path):
    project = tmp_path / "p"
    assert cli("init", str(project)).exit_code == 0
    workflow = yaml.safe_load((project / ".github/workflows/evalsite.yml").read_text())
    steps = [s for s in workflow["jobs"]["evaluate"]["steps"] if "run" in s and not s["run"].startswith("pip install")]
    bin_dir = tmp_path / "bin"  # `evalsite` on PATH is this checkout's
    bin_dir.mkdir()
    (bin_dir / "evalsite").write_text(f'#!/bin/sh\nexec {sys.executable} -m evalsite "$@"\n')
    (bin_dir / "evalsite").chmod(0o755)
    runner_temp, step_summary = tmp_path / "runner-temp", tmp_path / "step-summary.md"
    runner_temp.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "RUNNER_TEMP": str(runner_temp),
           "GITHUB_STEP_SUMMARY": str(step_summary), "NO_COLOR": "1"}
    for step in steps:  # GitHub runs each `run:` with `bash -e`
        done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=project, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, f"{step['name']}: {done.stderr[-1500:]}"
    assert (runner_temp / "experiments.tsv").read_text() == "experiments/example.yaml\t1\n"  # from evalsite.toml [ci]
    runs = json.loads((runner_temp / "example.yaml.runs.json").read_text())
    assert sorted(run["arm"] for run in runs) == ["lowercase", "reverse"]
    summary = (runner_temp / "summary.md").read_text()
    assert summary.startswith("### evalsite runs\n") and "### evalsite compare:" in summary
    assert "### evalsite claims: " in summary
    job_page = step_summary.read_text()
    assert "### evalsite run: example" in job_page and "### evalsite claims: " in job_page
    assert (runner_temp / "claims.junit.xml").exists() and (project / "site" / "index.html").exists()
    junit = ElementTree.parse(runner_temp / "example.yaml.junit.xml").getroot()  # what the workflow uploads
    assert len(junit.findall(".//testcase")) == 2 * 20  # per arm and item


def test_ci_experiments_reads_the_ci_table_and_names_a_bad_value(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli("init", "p")
    monkeypatch.chdir(tmp_path / "p")
    assert cli("ci", "experiments").stdout == "experiments/example.yaml\t1\n"
    toml = (tmp_path / "p" / "evalsite.toml")
    toml.write_text('[ci]\nexperiments = ["experiments/example.yaml"]\n')
    assert cli("ci", "experiments").stdout == "experiments/example.yaml\t\n"  # no ceiling
    for table, message in (('experiments = ["experiments/nope.yaml"]', "[ci] experiments: no manifest experiments/nope.yaml"),
                           ('experiments = "experiments/example.yaml"', "[ci] experiments: needs a list of manifest paths"),
                           ("max_cost_usd = -1", "[ci] max_cost_usd: needs a number of dollars ≥ 0, got -1")):
        toml.write_text(f"[ci]\n{table}\n")
        refused = cli("ci", "experiments")
        assert refused.exit_code == 1 and refused.stderr.startswith(f"Error: evalsite.toml: {message}")
        assert any(message in line for line in cli("validate").stdout.splitlines())
