"""The study pipeline's scratch project (the ``study_project`` fixture writes these files) and helpers.

The target ``study_target:answer`` answers ``ok <input>`` and appends every call to
``calls.log``; ``flaky`` fails transiently on the first attempt of each item. The steps in
``study_steps`` append what they saw to ``steps.log`` (one JSON line each) and ``fail_q1``
raises for item q1.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from evalsite.runlog.store import read_run, run_directories

TARGET = '''
import json, pathlib
from evalsite.calls.targets import TransientTargetError

SEEN = set()

def answer(input, repeat):
    with open("calls.log", "a") as log:
        log.write(json.dumps({"input": input, "repeat": repeat}) + "\\n")
    return "ok " + str(input)

def flaky(input, repeat):
    if (input, repeat) not in SEEN:
        SEEN.add((input, repeat))
        raise TransientTargetError("first attempt fails")
    return answer(input, repeat)
'''

STEPS = '''
import json

def _log(context, **extra):
    with open(context.project_root / "steps.log", "a") as log:
        log.write(json.dumps({"level": context.level, "phase": context.phase, "step": context.step,
                              **{k: v for k, v in context.ids.items() if k in ("item_id", "repeat")},
                              "checkpoint": context.checkpoint, **extra}) + "\\n")

def note(context):
    _log(context, inputs=len(context.inputs), level_dir=str(context.level_dir))

def fail_q1(context):
    note(context)
    if context.ids.get("item_id") == "q1":
        raise RuntimeError("no fixture for q1")

def plot(context):
    context.output.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>')

def metrics(context):
    import json as j
    context.output.write_text(j.dumps({"item_id": context.ids["item_id"], "repeat": context.ids["repeat"],
                                       "arm": "a", "score": context.case["score"]}))

def boom(context):
    raise ValueError("post went wrong")

def vandal(context):
    """Changes everything it is handed: the case and the item's row."""
    note(context)
    context.case["score"], context.case["passed"], context.case["item_id"] = -7.0, False, "gone"
    context.case["scores"].clear()
    context.extra["row"]["expected"] = "changed"
'''


def write_study(root: Path, *, items: int = 3, target: str = "python:study_target:answer", **manifest) -> str:
    document = {
        "name": "study",
        "rows": [{"id": f"q{i}", "input": f"x{i}", "expected": f"ok x{i}"} for i in range(items)],
        "arms": [{"id": "a", "target": target}],
        "evaluators": [{"type": "exact"}],
        "schedule": {"backoff_s": 0.01, "max_backoff_s": 0.02},
        **manifest,
    }
    (root / "experiments/study.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return "experiments/study.yaml"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def runs(root: Path):
    return sorted((read_run(d) for d in run_directories(root / "runs")), key=lambda r: r.header.raw["started_at"])
