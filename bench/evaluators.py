"""Evaluator throughput and rescore speed.

Rerun: ``python bench/evaluators.py [CASES]`` from the repository root (default 20000 cases).
Prints, per built-in family (the judge excluded: it is as fast as its target), cases scored per
second, then the seconds and peak memory of ``evalsite rescore`` over a run of CASES cases.
"""

from __future__ import annotations

import asyncio
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalsite.execute.rescore import rescore_run
from evalsite.project import Project
from evalsite.runlog.store import RunWriter
from evalsite.scoring.case import score_case
from evalsite.scoring.evaluators import CaseView, build_evaluators

SPECS = [
    {"type": "exact", "ignore_case": True, "ignore_whitespace": True},
    {"type": "contains_all", "value": ["refund", "order number"]},
    {"type": "starts_with", "value": ["Yes", "No"]},
    {"type": "regex", "pattern": r"#\d{4}\b"},
    {"type": "similarity"},
    {"type": "json", "schema": {"type": "object", "required": ["intent"]}, "fields": ["intent"]},
    {"type": "length", "unit": "words", "max": 60},
    {"type": "numeric", "tolerance": 0.5, "extract": r"(-?\d+(?:\.\d+)?)"},
    {"type": "latency", "max_ms": 500},
]


def views(count: int) -> list[CaseView]:
    rng = random.Random(0)
    words = "yes no refund order number shipping please thanks sorry the a of to".split()
    result = []
    for index in range(count):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(5, 60))) + f" #{index % 10000:04d} {index}"
        output = json.dumps({"intent": rng.choice(["refund", "status"]), "text": text}) if index % 2 else text
        result.append(CaseView(input="q", output=output, expected=text if index % 3 else '{"intent": "refund"}',
                               row={}, latency_ms=rng.uniform(10, 900)))
    return result


def per_family(count: int) -> None:
    cases = views(count)
    for spec in SPECS:
        evaluators = build_evaluators([spec])

        async def score_all(evaluators=evaluators):
            for view in cases:
                await score_case(evaluators, view, None)

        start = time.perf_counter()
        asyncio.run(score_all())
        elapsed = time.perf_counter() - start
        print(f"{spec['type']:<14} {count / elapsed:>10,.0f} cases/s")


def rescore(count: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "data").mkdir()
        (root / "experiments").mkdir()
        rows = [{"id": f"r{i}", "input": f"q{i}", "expected": f"answer {i}"} for i in range(count)]
        (root / "data" / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        evaluators = "\n".join(f"  - {json.dumps(spec)}" for spec in SPECS)
        (root / "experiments" / "bench.yaml").write_text(
            f"name: bench\ndataset: {{path: data/bench.jsonl}}\narms: [{{id: a, target: none}}]\nevaluators:\n{evaluators}\n"
        )
        header = {"arm_id": "a", "manifest_path": "experiments/bench.yaml", "dataset": {"path": "data/bench.jsonl"},
                  "config": {}, "fingerprint": {}}
        writer = RunWriter.create(root / "runs", "a", header)
        for view, row in zip(views(count), rows):
            writer.append_case({"item_id": row["id"], "repeat": 0, "input": row["input"], "output": view.output,
                                "error": None, "latency_ms": view.latency_ms, "scores": []})
        writer.finish({"status": "completed"})
        start = time.perf_counter()
        outcome = rescore_run(Project(root), writer.run_id)
        elapsed = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"rescore: {outcome.summary.cases or 0:,} cases x {len(SPECS)} evaluators in {elapsed:.2f} s "
              f"({(outcome.summary.cases or 0) / elapsed:,.0f} cases/s), process peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    per_family(size)
    rescore(size)
