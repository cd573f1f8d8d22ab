"""README.md's commands run as written: the main job, then every "Then try" command, in order, in a
scratch copy of the example project, with this checkout's evalsite. Each compare shows the change
the README says it shows, against the promoted baseline."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from example_support import REPO

README = (REPO / "README.md").read_text()


def readme_blocks() -> list[list[str]]:
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.S)
    return [[line for line in block.splitlines() if line.strip()] for block in blocks]


def run_in_copy(tmp_path: Path, commands: list[str]) -> list[subprocess.CompletedProcess[str]]:
    for folder in ("data", "experiments", "arms", "reports"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    bin_dir = tmp_path / "bin"  # `evalsite` on PATH is this checkout's, run by this interpreter
    bin_dir.mkdir()
    (bin_dir / "evalsite").write_text(f"#!/bin/sh\nexec {sys.executable} -m evalsite \"$@\"\n")
    (bin_dir / "evalsite").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    results = []
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"README command failed: {command}\n{done.stderr[-2000:]}"
        results.append(done)
    return results


def test_the_main_job_and_every_then_try_command_run_and_show_real_changes(tmp_path):
    (main_job, test_command), then_try = readme_blocks()
    assert test_command.startswith("pip install '.[test]' && pytest")
    install, _, job = main_job.partition(" && ")
    assert install == "pip install ."
    commands = [job.split("#")[0].strip(), *then_try]
    results = run_in_copy(tmp_path, commands)
    assert (tmp_path / "site" / "index.html").exists()
    compares = [(c, r.stdout) for c, r in zip(commands, results) if " compare " in f" {c} "]
    assert len(compares) == 2
    (_, better), (gate, worse) = compares
    for output in (better, worse):
        assert "promoted" in output.splitlines()[1], output[:400]  # the baseline line names the promotion
    improved = int(re.search(r"(\d+) improved", better).group(1))
    assert improved > 0 and "0 regressed" in better
    assert int(re.search(r"(\d+) regressed", worse).group(1)) > 0
    assert "--fail-on regression" in gate and "gate: fail" in results[commands.index(gate)].stderr + worse
