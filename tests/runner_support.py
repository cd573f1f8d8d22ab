"""Helpers for runner and target tests, which take the ``runner_project`` folder and the fake
provider (``server``) as fixtures: write an experiment, point an arm at the fake provider, read runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml
from example_support import REPO
from fakeserver import FakeServer

from evalsite.runlog.store import CASES_FILE, read_cases, read_run, run_directories

FAST_RETRIES = {"backoff_s": 0.01, "max_backoff_s": 0.05}


def write_experiment(root: Path, rows: list[dict], arms: list[dict], *, name: str = "exp", **manifest) -> str:
    """Write ``data/<name>.jsonl`` and ``experiments/<name>.yaml``; returns the manifest path."""
    with open(root / "data" / f"{name}.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    document = {
        "name": name,
        "dataset": {"path": f"data/{name}.jsonl"},
        "arms": arms,
        "evaluators": [{"type": "exact"}],
        "schedule": dict(FAST_RETRIES),
        **manifest,
    }
    path = f"experiments/{name}.yaml"
    (root / path).write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def openai_arm(server: FakeServer, arm_id: str = "gpt", **extra) -> dict:
    settings = {"base_url": server.url + "/v1", **extra.pop("settings", {})}
    return {"id": arm_id, "target": "openai:fake-model", "settings": settings, **extra}


def questions(count: int, **fields) -> list[dict]:
    """Rows ``q0…`` whose expected answer is what the fake server echoes."""
    return [{"id": f"q{i}", "input": f"question {i}", "expected": f"echo: question {i}", **fields} for i in range(count)]


def all_runs(root: Path):
    return [read_run(directory) for directory in run_directories(root / "runs")]


def only_run(root: Path):
    (run,) = all_runs(root)
    return run


def start_run(project: Path, *args: str) -> subprocess.Popen:
    """``evalsite run ARGS`` in its own process (this checkout's evalsite), output captured."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "evalsite", "run", *args], cwd=project, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_cases(project: Path, at_least: int, process: subprocess.Popen) -> Path:
    """The run folder of ``project`` once it holds ``at_least`` cases (the process still running)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        for directory in run_directories(project / "runs"):
            if len(read_cases(directory / CASES_FILE)) >= at_least:
                return directory
        time.sleep(0.01)
    raise AssertionError("the run never wrote enough cases")
