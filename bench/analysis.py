"""Timings of the analysis commands on a large synthetic project.

Rerun from the repository root with:

    python bench/analysis.py [ARMS] [ITEMS] [REPEATS]

It writes, in a temporary project, ARMS runs (default 10) of ITEMS items (default 1,000) and
REPEATS repeats (default 3) with pass/fail scores, through the real run-log writer, then times
each step of ``evalsite leaderboard`` (run selection, the DuckDB read into the aligned matrix,
per-arm figures with their BCa intervals, the whole leaderboard with Friedman, Nemenyi and rank
stability) and ``evalsite family-test`` of the first arm against all the others. It prints
seconds, cases per second and peak traced memory (Python allocations, measured on a second
call so tracing does not slow the timed one).
"""

from __future__ import annotations

import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalsite.analysis.arms import summarise_arms
from evalsite.analysis.db import open_database
from evalsite.analysis.family import family_test
from evalsite.analysis.items import item_matrix
from evalsite.analysis.leaderboard import leaderboard
from evalsite.analysis.selection import select_runs
from evalsite.project import Project
from evalsite.runlog.store import RunWriter

T = TypeVar("T")
EVALUATORS = {"exact": {"type": "exact", "version": "bench"}}


def write_runs(project: Path, arms: int, items: int, repeats: int) -> list[str]:
    rng = np.random.default_rng(0)
    run_ids = []
    for arm in range(arms):
        accuracy = 0.5 + 0.3 * arm / max(1, arms - 1)
        header = {
            "arm_id": f"arm{arm}", "config_id": f"config{arm}", "started_at": f"2026-01-01T00:00:{arm:02d}.000Z",
            "dataset": {"path": "data/bench.jsonl", "dataset_id": "bench@000000000000", "items": items},
            "evaluators": EVALUATORS,
        }
        writer = RunWriter.create(project / "runs", f"arm{arm}", header)
        passes = rng.random((items, repeats)) < accuracy
        for item in range(items):
            for repeat in range(repeats):
                ok = bool(passes[item, repeat])
                writer.append_case({
                    "item_id": f"i{item:05d}", "item_sha": f"sha{item}", "repeat": repeat, "output": "x",
                    "latency_ms": float(rng.gamma(2.0, 50.0)), "cost_usd": 1e-5, "score": float(ok), "passed": ok,
                    "scores": [{"evaluator": "exact", "version": "bench", "score": float(ok), "passed": ok}],
                })
        writer.finish({"status": "completed"})
        run_ids.append(writer.run_id)
    return run_ids


def measured(label: str, cases: int, step: Callable[[], T]) -> T:
    """Time one call, then trace a second one for its peak memory (tracing slows Python down)."""
    start = time.perf_counter()
    outcome = step()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    step()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(f"{label:<58} {seconds:8.3f} s  {cases / seconds:12,.0f} cases/s  peak {peak:7.1f} MB")
    return outcome


def main() -> None:
    arms, items, repeats = (int(a) for a in (sys.argv[1:] + ["10", "1000", "3"][len(sys.argv) - 1:])[:3])
    cases = arms * items * repeats
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        run_ids = write_runs(root, arms, items, repeats)
        project = Project(root)
        print(f"{arms} arms × {items:,} items × {repeats} repeats = {cases:,} cases")
        database = measured("open the DuckDB views", cases, lambda: open_database(project.runs_dir))
        selection = measured("select_runs (comparable runs, left out)", cases, lambda: select_runs(database))
        matrix = measured("item_matrix (read + align)", cases, lambda: item_matrix(database, selection.arms))
        measured("summarise_arms (BCa mean and pass rate per arm)", cases, lambda: summarise_arms(matrix))
        measured("leaderboard, end to end", cases, lambda: leaderboard(project))
        measured(f"family-test, 1 vs {arms - 1}, end to end", cases, lambda: family_test(project, run_ids[0], run_ids[1:]))


if __name__ == "__main__":
    main()
