"""Runs in memory for the comparison matrix tests (no run folder: the matrix reads runs already read)."""

from __future__ import annotations

import random
from pathlib import Path

from evalsite.runlog.records import Case, Footer, RunHeader
from evalsite.runlog.store import Run

EVALUATORS = {"exact": {"type": "exact", "version": "v1", "weight": 1.0, "threshold": None}}


def make_run(run_id: str, arm: str, cells: dict[str, list[tuple]], inputs_id: str = "golden@aaa") -> Run:
    """``cells``: item id → one ``(output, score, latency_ms, cost_usd, tokens)`` per repeat."""
    cases = [
        {
            "item_id": item_id, "repeat": repeat, "input": f"question {item_id}", "expected": "4",
            "output": output, "score": score, "passed": score == 1.0, "latency_ms": latency,
            "cost_usd": cost, "input_tokens": tokens, "output_tokens": None if tokens is None else 1, "error": None,
        }
        for item_id, repeats in cells.items()
        for repeat, (output, score, latency, cost, tokens) in enumerate(repeats)
    ]
    header = {
        "format_version": 1, "run_id": run_id, "arm_id": arm, "dataset": {"dataset_id": "golden@111"},
        "fingerprint": {"dataset": {"dataset_id": "golden@111", "inputs_id": inputs_id}, "evaluators": EVALUATORS},
    }
    footer = Footer.from_json({"status": "completed"}, "end.json")
    return Run(Path(run_id), RunHeader.from_json(header, "run.json"), footer, footer.status,
               [Case.from_json(case, "cases.jsonl") for case in cases])


def random_runs(seed: int):
    """Up to five runs; odd seeds give every case a single repeat (the matrix's one-value path)."""
    rng = random.Random(seed)
    most = 1 if seed % 2 else 3
    outputs = ["4", " 4\n", "5", "x", {"a": 1}, ["b"], None]
    runs = []
    for n in range(rng.randint(1, 5)):
        items = {}
        for item in range(rng.randint(1, 12)):
            if rng.random() < 0.2:
                continue  # this run lacks the item
            items[f"i{item}"] = [(rng.choice(outputs), rng.choice([0.0, 0.5, 1.0, 1.0, None]), rng.choice([1, 2, 10, 10.5, 30]),
                                  rng.choice([0.1, 0.1, 0.2, None]), rng.choice([2, 5, None]))
                                 for _ in range(rng.randint(1, most))]
        if not items:
            items["i0"] = [("4", 1.0, 1, 0.1, 2)]
        runs.append(make_run(f"r{n}", f"arm{n}", items))
    return runs
