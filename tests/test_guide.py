"""docs/guide.md runs as written: every fenced ``sh`` block, in order, in one shell, in a fresh
folder, with this checkout's evalsite. A command that exits non-zero fails the test, naming it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from example_support import REPO

GUIDE = REPO / "docs" / "guide.md"


def guide_commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", GUIDE.read_text(), flags=re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_every_shell_command_of_the_guide_runs_in_a_fresh_folder(tmp_path):
    commands = guide_commands()
    assert commands[0] == "evalsite init my-evals" and len(commands) > 15
    bin_dir = tmp_path / "bin"  # `evalsite` on PATH is this checkout's, run by this interpreter
    bin_dir.mkdir()
    (bin_dir / "evalsite").write_text(f"#!/bin/sh\nexec {sys.executable} -m evalsite \"$@\"\n")
    (bin_dir / "evalsite").chmod(0o755)
    script = "set -e\n" + "".join(
        f"echo '>>> {number}' >&2\n{command}\n" for number, command in enumerate(commands))
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    started = re.findall(r">>> (\d+)", done.stderr)
    failed = commands[int(started[-1])] if started else "(none)"
    assert done.returncode == 0, f"guide command failed: {failed}\n{done.stderr[-2000:]}"
    assert (Path(tmp_path) / "my-evals" / "site" / "index.html").exists()
