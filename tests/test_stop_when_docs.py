"""docs/stop-when.md runs as written: its ``sh`` blocks, in order, in one shell, in a fresh folder,
with this checkout's evalsite; the verdict it quotes is the one the leaderboard prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from example_support import REPO

PAGE = REPO / "docs" / "stop-when.md"


def test_the_stop_when_page_runs_and_stops_where_it_says(tmp_path):
    text = PAGE.read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "evalsite").write_text(f"#!/bin/sh\nexec {sys.executable} -m evalsite \"$@\"\n")
    (bin_dir / "evalsite").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(["bash", "-c", "set -e\n" + "\n".join(blocks)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    quoted = re.search(r"^verdict: .*$", text, flags=re.M)
    assert quoted is not None and quoted.group(0) in done.stdout.splitlines()
    cases = [len((folder / "cases.jsonl").read_text().splitlines()) for folder in (tmp_path / "stop-demo" / "runs").iterdir()
             if folder.is_dir()]
    assert sum(cases) == 160  # "160 calls instead of 2,000"
    page = (tmp_path / "stop-demo" / "site" / "experiments" / "example.html").read_text()
    assert "Stopped when decided" in page and 'class="chart-stop"' in page
