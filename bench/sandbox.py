"""What the ``code_tests`` sandbox costs, and what a fork bomb inside it reaches.

Rerun from the repository root with:

    python bench/sandbox.py [PROGRAMS]

It prints the median wall-clock seconds of one passing program run alone (a fresh interpreter,
its limits, its folder), the programs per second the evaluator reaches with 1, 2 and 4
``workers`` over PROGRAMS (default 24) HumanEval canonical solutions, and, for a fork bomb
under ``processes: 16`` and a 2 s wall clock, the most processes of the sandbox seen at once
(sampled every 5 ms) and how many are left after it is killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalsite.scoring.case import score_case
from evalsite.scoring.evaluators import CaseView, build_evaluators
from evalsite.scoring.sandbox import Limits, run_python

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "humaneval" / "data" / "humaneval_sample.jsonl"
BOMB = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"


def sandbox_pids() -> set[int]:
    found = set()
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and b"sandbox_child.py" in Path(f"/proc/{name}/cmdline").read_bytes():
                found.add(int(name))
        except OSError:
            continue
    return found


def one_program() -> float:
    times = []
    for _ in range(10):
        started = time.perf_counter()
        assert run_python("assert sum(range(10)) == 45\n", Limits()).label == "passed"
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def score_all(rows: list[dict], workers: int) -> float:
    (evaluator,) = build_evaluators([{"type": "code_tests", "workers": workers}])
    views = [CaseView(input=r["input"], output=r["output"], expected=None, row=r) for r in rows]
    started = time.perf_counter()
    results = await asyncio.gather(*(score_case([evaluator], view, None) for view in views))
    assert all(result.passed for result in results)
    return len(rows) / (time.perf_counter() - started)


def fork_bomb() -> tuple[int, int, str]:
    peak, done = 0, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, len(sandbox_pids()))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    ran = run_python(BOMB, Limits(wall_s=2, cpu_s=2, processes=16))
    done.set()
    sampler.join()
    return peak, len(sandbox_pids()), ran.label


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    lines = SAMPLE.read_text().splitlines()
    rows = [json.loads(lines[i % len(lines)]) for i in range(count)]
    print(f"one passing program alone: {one_program():.3f} s (median of 10)")
    for workers in (1, 2, 4):
        print(f"workers={workers}: {asyncio.run(score_all(rows, workers)):.1f} programs/s over {count}")
    peak, left, label = fork_bomb()
    print(f"fork bomb (processes: 16, 2 s): label {label}, at most {peak} sandbox processes at once, {left} left after")


if __name__ == "__main__":
    main()
