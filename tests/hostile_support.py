"""The small project the hostile-run tests damage copies of: arms scoring recorded outputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

ARMS = ("a", "b", "c", "d", "e")
READERS = (("runs",), ("query", "SELECT count(*) AS n FROM cases"), ("leaderboard",), ("build",))


def make_project(cli, root: Path, arms=ARMS[:2]) -> Path:
    """A project whose arms score the dataset's recorded outputs (``target: none``), already run once."""
    (root / "data").mkdir(parents=True)
    (root / "experiments").mkdir()
    rows = [{"id": f"q{i}", "input": f"question {i}", "expected": "4", "output": "4" if i % 3 else "5"} for i in range(6)]
    (root / "data/d.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    arm_lines = "".join(f"  - id: {arm}\n    target: none\n" for arm in arms)
    (root / "experiments/e.yaml").write_text(f"name: e\ndataset: {{path: data/d.jsonl}}\narms:\n{arm_lines}evaluators:\n  - type: exact\n")
    here = os.getcwd()
    os.chdir(root)
    try:
        result = cli("run", "experiments/e.yaml")
    finally:
        os.chdir(here)
    assert len(list((root / "runs").iterdir())) == len(arms), result.output  # exit 1: some cases fail, as meant
    return root
