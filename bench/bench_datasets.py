"""How fast datasets load, freeze and verify, and how fast a full plan is built and estimated.

Rerun from the repository root:  python bench/bench_datasets.py [ROWS]   (default 100000)

Writes synthetic datasets to a temporary folder and prints, per step, seconds, rows (or cases)
per second, and the process's peak resident memory so far. Figures depend on the machine; compare
runs on the same one.
"""

from __future__ import annotations

import csv
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalsite.experiment.datasets import load_dataset
from evalsite.experiment.estimate import estimate_plan
from evalsite.experiment.locks import freeze_dataset, verify_dataset
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.plan import build_plan
from evalsite.project import Project


def rows(count: int) -> list[dict]:
    return [{"id": f"r{i}", "input": f"What is {i} + {i % 97}? Answer with the number only.",
             "expected": str(i + i % 97), "metadata": {"split": "test" if i % 5 else "dev"}} for i in range(count)]


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(label: str, count: int, unit: str, step) -> None:
    start = time.perf_counter()
    step()
    seconds = time.perf_counter() - start
    print(f"{label:<34} {seconds:8.3f} s  {count / seconds:12,.0f} {unit}/s  peak {peak_mb():7.1f} MB")


def main(count: int) -> None:
    data = rows(count)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "data").mkdir()
        jsonl = root / "data/bench.jsonl"
        jsonl.write_text("".join(json.dumps(row) + "\n" for row in data))
        with open(root / "data/bench.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, ["id", "input", "expected"], extrasaction="ignore")
            writer.writeheader()
            writer.writerows(data)
        pq.write_table(pa.Table.from_pylist([{k: r[k] for k in ("id", "input", "expected")} for r in data]),
                       root / "data/bench.parquet")

        print(f"{count:,} rows")
        for name in ("bench.jsonl", "bench.csv", "bench.parquet"):
            measure(f"load_dataset {name}", count, "rows", lambda name=name: load_dataset(root / "data" / name))
        measure("dataset freeze bench.jsonl", count, "rows", lambda: freeze_dataset(jsonl))
        measure("dataset verify bench.jsonl", count, "rows", lambda: verify_dataset(jsonl))

        manifest = root / "experiments/bench.yaml"
        manifest.parent.mkdir()
        manifest.write_text(
            "name: bench\ndataset: {path: data/bench.jsonl, split: test, limit: 1000}\n"
            "prompt: '{{ style }}: {{ input }}'\n"
            "arms: [{id: a, target: none}, {id: b, target: none, params: {max_tokens: 64}, price: {input: 1, output: 2}}]\n"
            "sweep: {variables: {style: [terse, chatty]}}\nlimits: {max_cases: 5000}\n"
        )
        project = Project(root)
        cases = 2 * 2 * 1000
        measure("build_plan (load + checks + render)", cases, "cases",
                lambda: build_plan(project, load_manifest(manifest)))
        plan = build_plan(project, load_manifest(manifest))
        measure("estimate_plan", cases, "cases", lambda: estimate_plan(plan))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
