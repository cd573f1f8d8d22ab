"""Helpers for the ``evalsite import`` tests: the committed fixtures and ways to look at imported runs.

The fixtures under ``tests/fixtures/external/`` were written by promptfoo, Inspect AI and
lm-evaluation-harness themselves; their README documents every file and the per-arm numbers
each tool reported, which the tests check against.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean
from typing import Any

from evalsite.execute.importers import ImportReport
from evalsite.runlog.store import Run, read_run, run_directories

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "external"
PROMPTFOO = FIXTURES / "promptfoo"
INSPECT_EVAL = sorted((FIXTURES / "inspect" / "logs-eval").glob("*.eval"))
INSPECT_JSON = sorted((FIXTURES / "inspect" / "logs-json").glob("*.json"))
LMEVAL = FIXTURES / "lmeval"
ITEMS = FIXTURES / "data" / "items-24.jsonl"
PLAIN = FIXTURES.parent / "plain"  # a plain per-item file as another tool might write it

# the README's "Observed per-arm results": what each tool itself reported
ALL_PASS = {"model-a": 17 / 24, "model-b": 10 / 24}


def imported_runs(project: Path) -> list[Run]:
    return [read_run(d) for d in run_directories(project / "runs")]


def runs_by_arm(project: Path) -> dict[str, Run]:
    runs = imported_runs(project)
    by_arm = {run.header.arm_id: run for run in runs}
    assert len(by_arm) == len(runs), "expected one run per arm"
    return by_arm


def evaluator_means(run: Run) -> dict[str, float]:
    """Mean score per evaluator over every case of ``run``."""
    values: dict[str, list[float]] = {}
    for case in run.cases:
        for score in case["scores"]:
            values.setdefault(score["evaluator"], []).append(score["score"])
    return {name: fmean(v) for name, v in values.items()}


def pass_rate(run: Run) -> float:
    return fmean(case["passed"] for case in run.cases)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_files(report: ImportReport, root: Path) -> dict[str, dict[str, Any]]:
    """Each run ``report`` wrote under project ``root``, by arm: its ``run.json`` (ids and import
    time left out), its ``cases.jsonl`` bytes and its ``end.json``, to compare two imports'."""
    runs = {}
    for run in report.runs:
        folder = root / "runs" / run.run_id
        header = json.loads((folder / "run.json").read_text())
        for key in ("run_id", "batch_id"):
            header.pop(key)
        header["source"].pop("imported_at")
        runs[run.arm_id] = {
            "run.json": header,
            "cases.jsonl": (folder / "cases.jsonl").read_bytes(),
            "end.json": json.loads((folder / "end.json").read_text()),
        }
    return runs
