"""Helpers for the ``stop_when`` tests: a project of three sweep configs of one python arm, the
documented seeded item order, and runs by config."""

from __future__ import annotations

import hashlib
import json

import yaml

TARGET = """
import time

def answer(input, row, repeat):
    with open("calls.log", "a") as log:
        log.write(f"{input}#{repeat}\\n")
    time.sleep(float(row.get("metadata", {}).get("sleep", 0)))
    return {"output": "echo: " + input, "cost_usd": 0.001}
"""
TAILS = ["", " a", " b"]  # the sweep's three configs: right on 100%-share, 30% and 0% of the items


def write_project(root, *, items: int = 300, stop_when: dict | None = None, sleep: float = 0.0, cluster: int = 0,
                  **extra) -> str:
    """Three configs of one arm; config tail '' is right wherever the expected answer has no tail
    (70% of items), ' a' on the other 30%, ' b' never."""
    (root / "pt_stop.py").write_text(TARGET)
    rows = [{"id": f"q{i}", "input": f"question {i}", "expected": f"echo: question {i}{' a' if i % 10 < 3 else ''}",
             "metadata": {"sleep": sleep, **({"group": f"g{i // cluster}"} if cluster else {})}} for i in range(items)]
    (root / "data" / "exp.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    manifest = {
        "name": "exp", "dataset": {"path": "data/exp.jsonl"}, "prompt": "{{ input }}{{ tail }}",
        "arms": [{"id": "echo", "target": "python:pt_stop:answer"}], "sweep": {"variables": {"tail": TAILS}},
        "evaluators": [{"type": "exact"}], **({"stop_when": stop_when} if stop_when else {}), **extra,
    }
    (root / "experiments" / "exp.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return "experiments/exp.yaml"


def seeded_order(item_ids: list[str], seed: int) -> list[str]:
    """The documented draw order, computed here from its definition (sha256 of seed NUL item id)."""
    return sorted(item_ids, key=lambda i: hashlib.sha256(f"{seed}\0{i}".encode()).digest())


def by_tail(runs) -> dict[str, object]:
    return {run.header.config["prompt_variables"]["tail"]: run for run in runs}
