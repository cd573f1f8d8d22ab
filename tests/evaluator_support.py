"""A small project for evaluator and rescore tests: three support rows (one critical), an arm
that fails on one of them and logs every call, and a scoring module with a throwing function."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from evalsite.runlog.store import Run, read_run

ROWS = [
    {"id": "ok", "input": "hello", "expected": "HELLO"},
    {"id": "crit", "input": "refund", "expected": "REFUND!", "metadata": {"critical": True}},
    {"id": "fail", "input": "crash", "expected": "CRASH"},
]
ARM = '''
from pathlib import Path

def shout(input):
    with open(Path(__file__).parent / "calls.log", "a") as log:
        log.write(input + "\\n")
    if input == "crash":
        raise RuntimeError("model exploded")
    return input.upper()
'''
CHECKS = '''
def picky(output):
    if output == "HELLO":
        raise ValueError("cannot judge greetings")
    return True
'''
PROJECT_MODULES = ("support_arm", "support_checks")
MANIFEST = '''
name: support
dataset:
  path: data/support.jsonl
arms:
  - id: shout
    target: python:support_arm:shout
evaluators: {evaluators}
'''


def make_project(root: Path, evaluators: str) -> Path:
    """Write the support project into ``root`` (the ``evaluator_project`` fixture) with these evaluators."""
    (root / "data").mkdir()
    (root / "experiments").mkdir()
    (root / "data" / "support.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (root / "support_arm.py").write_text(textwrap.dedent(ARM))
    (root / "support_checks.py").write_text(textwrap.dedent(CHECKS))
    (root / "experiments" / "support.yaml").write_text(MANIFEST.format(evaluators=evaluators))
    return root


def only_run(root: Path) -> Run:
    (directory,) = [p for p in (root / "runs").iterdir() if p.is_dir()]
    return read_run(directory)
