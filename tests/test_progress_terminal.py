"""``evalsite run``'s progress display in a real pseudo-terminal: it fits a narrow terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios

from example_support import REPO

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_in_terminal(cwd, columns: int, *args: str) -> str:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {**os.environ, "COLUMNS": str(columns)}
    process = subprocess.Popen([sys.executable, "-m", "evalsite", *args], cwd=cwd, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_the_progress_line_never_wraps_in_a_50_column_terminal(tmp_path):
    for folder in ("data", "arms", "experiments"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shown = run_in_terminal(tmp_path, 50, "run", "experiments/arithmetic.yaml", "--allow-failures")
    drawn = [ANSI.sub("", piece) for piece in re.split(r"[\r\n]", shown)]
    bars = [line for line in drawn if "/180" in line]
    assert bars, shown[-500:]
    assert max(len(line) for line in bars) <= 50, max(bars, key=len)
    assert any("(1/3)" in line for line in bars) and any("(3/3)" in line for line in bars)
