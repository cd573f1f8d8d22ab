"""docs/reference/commands/output.md runs as written: its ``sh`` blocks, in order, in one shell,
in a fresh folder, with this checkout's evalsite; its ``console`` refusals print what it says."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from example_support import REPO

PAGE = REPO / "docs" / "reference" / "commands" / "output.md"


def test_every_shell_command_of_the_output_page_runs(tmp_path):
    text = PAGE.read_text()
    commands = [line for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S) for line in block.splitlines()]
    assert commands[0].startswith("evalsite init my-evals") and len(commands) >= 8
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "evalsite").write_text(f'#!/bin/sh\nexec {sys.executable} -m evalsite "$@"\n')
    (bin_dir / "evalsite").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    refusals = re.findall(r"^\$ (evalsite leaderboard -o \S+)\n(Error: .*)$", text, flags=re.M)
    script = "set -e\n" + "\n".join(commands) + "\n" + "".join(f"{cmd} 2>&1 || true\n" for cmd, _ in refusals)
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    project = tmp_path / "my-evals"
    for written in ("runs.csv", "board.csv", "board.md", "reverse.json", "claims.junit.xml", "quiet.csv", "board.json", "arms.csv"):
        assert (project / written).stat().st_size > 0, written
    header = (project / "board.csv").read_text().splitlines()[0]
    assert header == re.search(r"^\$ head -3 board.csv\n(.*)$", text, flags=re.M).group(1)
    assert len(refusals) == 2 and all(message in done.stdout for _, message in refusals)
    assert "\x1b[" not in done.stdout
