"""Benchmark the site build: 20 runs × 5,000 cases (one dataset, one experiment).

Rerun from the repository root:  python bench/site.py  [--runs 20] [--cases 5000] [--keep DIR]

Prints the full build time, the incremental rebuild times (nothing changed; one new run of an
existing arm, which also gets a compare page against its prior run), the
peak resident memory of the process, the site's total size and file count, and its largest file.
Runs are synthetic but shaped like real ones: outputs of ~100 characters, seeded scores, latency
and cost, one exact-style evaluator.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalsite.project import find_project
from evalsite.site import build_site

DATASET_ID = "bench@0123456789ab"


def write_run(runs_dir: Path, index: int, cases: int, arm_index: int | None = None) -> None:
    """Run number ``index`` of arm ``arm_index`` (default: its own arm)."""
    rng = random.Random(index)
    arm_index = index if arm_index is None else arm_index
    arm = f"arm{arm_index:02d}"
    run_id = f"20260101T{index:06d}Z-{arm}-{index:04x}"
    folder = runs_dir / run_id
    folder.mkdir(parents=True)
    accuracy = 0.55 + 0.02 * arm_index
    priced = arm_index % 2 == 0
    header = {
        "format_version": 1, "run_id": run_id, "batch_id": "bench", "experiment": "bench", "arm_id": arm,
        "config": {"arm_id": arm, "target": "python:bench:arm", "params": {"temperature": round(0.05 * arm_index, 2)}},
        "config_id": f"cfg{arm_index:04d}", "dataset": {"path": "data/bench.jsonl", "dataset_id": DATASET_ID, "items": cases},
        "evaluators": {"exact": {"type": "exact", "version": "v1"}},
        "fingerprint": {"dataset": {"dataset_id": DATASET_ID}, "config_id": f"cfg{arm_index:04d}"},
        "fingerprint_hash": f"fp{arm_index:04d}", "started_at": f"2026-01-01T00:00:{index:02d}.000Z",
    }
    (folder / "run.json").write_text(json.dumps(header))
    with open(folder / "cases.jsonl", "w") as handle:
        for item in range(cases):
            passed = rng.random() < accuracy
            answer = f"The answer to question {item} is {item * 7 if passed else item * 7 + 1}. " + "Reasoning text. " * 4
            handle.write(json.dumps({
                "item_id": f"q{item:05d}", "item_sha": f"{item:064x}", "repeat": 0,
                "input": f"Question {item}: what is {item} times 7? Explain briefly.", "expected": str(item * 7),
                "output": answer, "error": None, "latency_ms": round(rng.lognormvariate(5, 0.5), 3),
                "input_tokens": 20, "output_tokens": 30, "cost_usd": 0.00002 * (arm_index + 1) if priced else None,
                "finish_reason": "stop",
                "scores": [{"evaluator": "exact", "version": "v1", "score": float(passed), "passed": passed,
                            "label": None, "detail": None if passed else f"expected '{item * 7}'", "error": None,
                            "skipped": False}],
                "score": float(passed), "passed": passed, "started_at": "2026-01-01T00:00:00.000Z",
            }) + "\n")
    (folder / "end.json").write_text(json.dumps({"status": "completed", "ended_at": "2026-01-01T01:00:00.000Z"}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--keep", type=Path, help="Build the project here and keep it (default: a temp folder).")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="evalsite-bench-"))
    (root / "data").mkdir(parents=True, exist_ok=True)
    for index in range(args.runs):
        write_run(root / "runs", index, args.cases)
    project = find_project(root)

    started = time.perf_counter()
    report = build_site(project)
    full = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    files = [p for p in (root / "site").rglob("*") if p.is_file()]
    largest = max(files, key=lambda p: p.stat().st_size)

    started = time.perf_counter()
    build_site(project)
    unchanged = time.perf_counter() - started
    write_run(root / "runs", args.runs, args.cases, arm_index=0)  # arm00 again: compared with its first run
    started = time.perf_counter()
    incremental = build_site(project)
    one_more = time.perf_counter() - started

    print(f"site for {args.runs} runs × {args.cases:,} cases ({args.runs * args.cases:,} cases)")
    print(f"full build:             {full:8.1f} s  ({args.runs * args.cases / full:,.0f} cases/s)")
    print(f"rebuild, nothing new:   {unchanged:8.2f} s")
    print(f"rebuild, one new run:   {one_more:8.1f} s  ({incremental.rendered} of {incremental.rendered + incremental.kept} jobs rendered, compare page included)")
    print(f"peak memory (RSS):      {peak_mb:8.0f} MB")
    print(f"site size:              {report.bytes / 1e6:8.1f} MB in {report.files:,} files ({report.pages:,} pages)")
    print(f"largest file:           {largest.stat().st_size / 1e6:8.2f} MB  ({largest.relative_to(root / 'site')})")
    if not args.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
