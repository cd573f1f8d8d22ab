"""Timings of ``evalsite compare`` and the comparison matrix on a large synthetic project.

Rerun from the repository root with:

    python bench/compare.py [ITEMS] [REPEATS]

It writes, in a temporary project, a dataset of ITEMS rows (default 5,000) and three runs of
REPEATS repeats (default 3) through the real run-log writer, with 2% of the expected values
edited between the baseline and the current run so re-scoring is exercised. It prints seconds,
cases per second and peak traced memory (Python allocations) for the regression report and for the matrix.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalsite.analysis.compare import compare_runs
from evalsite.analysis.matrix import comparison_matrix
from evalsite.experiment.datasets import load_dataset
from evalsite.experiment.manifest import ArmSpec
from evalsite.experiment.plan import make_config
from evalsite.project import Project
from evalsite.runlog.fingerprint import build_fingerprint, fingerprint_hash, git_identity
from evalsite.runlog.store import RunWriter, read_run
from evalsite.scoring.evaluators import Score, build_evaluators

EVALUATORS = [{"type": "exact", "ignore_whitespace": True}]


def write_dataset(project: Path, items: int, edited: set[int]) -> None:
    rows = [
        {"id": f"i{n:05d}", "input": f"question {n}", "expected": f"answer {n}" + (" (new)" if n in edited else "")}
        for n in range(items)
    ]
    (project / "data").mkdir(exist_ok=True)
    (project / "data" / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_run(project: Project, arm: str, accuracy: float, repeats: int, seed: int) -> str:
    dataset = load_dataset(project.root / "data" / "bench.jsonl")
    config = make_config(ArmSpec(id=arm, target="python:bench_arm:answer", params={"accuracy": accuracy}))
    evaluators = build_evaluators(EVALUATORS)
    fingerprint = build_fingerprint(project=project, dataset=dataset, config=config, prompt=None,
                                    evaluators=evaluators, code=git_identity(project.root))
    header = {"arm_id": arm, "dataset": {"path": "data/bench.jsonl", "dataset_id": dataset.dataset_id},
              "fingerprint": fingerprint, "fingerprint_hash": fingerprint_hash(fingerprint),
              "started_at": f"2026-01-01T00:00:0{seed}.000Z"}
    writer = RunWriter.create(project.runs_dir, arm, header)
    rng = random.Random(seed)
    version = evaluators[0].version
    for item in dataset.items:
        for repeat in range(repeats):
            output = item.row["expected"] if rng.random() < accuracy else "wrong"
            passed = output == item.row["expected"]
            score = Score("exact", version, score=float(passed), passed=passed)
            writer.append_case({
                "item_id": item.item_id, "item_sha": item.sha, "repeat": repeat, "input": item.row["input"],
                "expected": item.row["expected"], "output": output, "error": None, "latency_ms": rng.uniform(50, 500),
                "input_tokens": 20, "output_tokens": 5, "cost_usd": rng.uniform(0, 0.001),
                "scores": [score.to_json()], "score": score.score, "passed": score.passed,
            })
    writer.finish({"status": "completed"})
    return writer.run_id


def measure(label: str, cases: int, work: Callable[[], object]) -> None:
    """Seconds from a plain call; peak memory from a second call under tracemalloc (which slows it)."""
    start = time.perf_counter()
    work()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    work()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    print(f"{label:<44} {seconds:7.2f} s   {cases / seconds:10,.0f} cases/s   peak {peak:6.1f} MB")


def main(items: int = 5000, repeats: int = 3) -> None:
    with tempfile.TemporaryDirectory() as folder:
        project = Project(Path(folder))
        write_dataset(project.root, items, edited=set())
        baseline = write_run(project, "main", 0.80, repeats, seed=1)
        other = write_run(project, "other", 0.70, repeats, seed=2)
        write_dataset(project.root, items, edited=set(range(0, items, 50)))
        current = write_run(project, "main", 0.78, repeats, seed=3)
        cases = 2 * items * repeats
        print(f"{items} items × {repeats} repeats per run; {items // 50} expected values edited")
        measure("compare (report, re-scoring, stats)", cases, lambda: compare_runs(project, current, baseline=baseline))
        runs = [read_run(project.runs_dir / run_id) for run_id in (baseline, other)]
        measure("comparison matrix, 2 runs", cases, lambda: comparison_matrix(runs))


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
