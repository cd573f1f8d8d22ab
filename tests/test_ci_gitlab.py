"""The GitLab CI example of docs/ci.md: its script and after_script run for real in a fresh
``init`` project (all but the install line), as GitLab's shell executor runs them."""

from __future__ import annotations

import os
import subprocess
import sys

import yaml
from example_support import REPO


def _gitlab_job() -> dict:
    text = (REPO / "docs" / "ci.md").read_text().split("## GitLab CI", 1)[1]
    return yaml.safe_load(text.split("```yaml", 1)[1].split("```", 1)[0])["evalsite"]


def test_the_gitlab_example_runs_gates_and_summarises_an_init_project(cli, tmp_path):
    project = tmp_path / "p"
    assert cli("init", str(project)).exit_code == 0
    job = _gitlab_job()
    bin_dir = tmp_path / "bin"  # `evalsite` on PATH is this checkout's
    bin_dir.mkdir()
    (bin_dir / "evalsite").write_text(f'#!/bin/sh\nexec {sys.executable} -m evalsite "$@"\n')
    (bin_dir / "evalsite").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1"}
    lines = [line for line in job["script"] if not line.startswith("pip install")] + job["after_script"]
    for line in lines:
        done = subprocess.run(["bash", "-e", "-c", line], cwd=project, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{line}: {done.stderr[-1500:]}"
    assert (project / "example.yaml.runs.json").exists() and (project / "claims.junit.xml").exists()
    assert (project / "public" / "index.html").exists()
    summary = (project / "summary.md").read_text()
    assert summary.startswith("### evalsite runs\n") and "### evalsite compare:" in summary
