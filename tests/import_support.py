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

from evalsite.errors import SourceError
from evalsite.execute.importers import ImportOptions, ImportReport, import_files
from evalsite.project import Project
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


def import_outcome(root: Path, format_name: str, source: Path, options: ImportOptions | None = None) -> object:
    """What importing ``source`` into a new project at ``root`` gives: each run's files
    (:func:`run_files`) and the warnings, or the error's message."""
    (root / "data").mkdir(parents=True)
    try:
        report = import_files(Project(root), format_name, [source], options or ImportOptions(again=True))
    except SourceError as error:
        return str(error)
    return run_files(report, root), report.warnings


def two_processes(monkeypatch: Any, run_chars: int) -> list[int]:
    """Two processes for any file (shared_reading), runs of ``run_chars``; the list counts the
    elements the second process mapped and this process took (``MainShare.claim``'s: a block counts its rows)."""
    from evalsite import forked
    from evalsite.execute.importers import jsonstream, shared_reading

    counted: list[int] = []
    original = shared_reading.MainShare.claim

    def counting(*args: Any) -> Any:
        taken = original(*args)
        counted.extend([1] * sum(len(value) if hasattr(value, "__len__") else 1 for value in taken or ()))
        return taken

    monkeypatch.setattr(shared_reading.MainShare, "claim", counting)
    monkeypatch.setattr(shared_reading, "MIN_BYTES", 0)
    monkeypatch.setattr(forked, "spare_core", lambda: True)
    monkeypatch.setattr(jsonstream, "RUN_CHARS", run_chars)
    return counted


def second_process_dies(monkeypatch: Any, sent: int) -> None:
    """The second process of a shared reading kills itself (as the out-of-memory killer would)
    before sending its message number ``sent`` (0: the first)."""
    import os
    import signal

    from evalsite.execute.importers import shared_reading

    original = shared_reading.WorkerShare._send
    messages: list[int] = []

    def send_then_die(share: shared_reading.WorkerShare, values: list[Any] | None) -> None:
        if len(messages) == sent:
            os.kill(os.getpid(), signal.SIGKILL)  # only the second process sends
        messages.append(1)
        original(share, values)

    monkeypatch.setattr(shared_reading.WorkerShare, "_send", send_then_die)
