"""``evalsite run``'s progress display in a real pseudo-terminal: it fits a narrow terminal."""

from __future__ import annotations

import re
import shutil

from example_support import REPO
from terminal_support import in_terminal

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_the_progress_line_never_wraps_in_a_50_column_terminal(tmp_path):
    for folder in ("data", "arms", "experiments"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shown = in_terminal(tmp_path, "run", "experiments/arithmetic.yaml", "--allow-failures", columns=50, stdout=False)
    drawn = [ANSI.sub("", piece) for piece in re.split(r"[\r\n]", shown)]
    bars = [line for line in drawn if "/180" in line]
    assert bars, shown[-500:]
    assert max(len(line) for line in bars) <= 50, max(bars, key=len)
    assert any("(1/3)" in line for line in bars) and any("(3/3)" in line for line in bars)
