"""What a ``python:`` scorer costs per case, now that a sync one runs in a thread under its deadline.

Rerun: ``python bench/python_scorer.py [CASES]`` from the repository root (default 5000). Prints
cases scored per second by a trivial sync ``python:`` evaluator through ``score_case``, under its
default deadline (on a daemon thread) and with ``timeout_s: null`` (inline).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalsite.scoring.case import score_case
from evalsite.scoring.evaluators import CaseView, build_evaluators


def main(count: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "bench_checks.py").write_text("def polite(output):\n    return 'please' in output\n")
        views = [CaseView(input="q", output=f"please {n}", expected=None, row={}) for n in range(count)]
        for label, extra in (("timeout_s 30 (thread)", {}), ("timeout_s null (inline)", {"timeout_s": None})):
            evaluators = build_evaluators([{"type": "python:bench_checks:polite", **extra}], Path(folder))

            async def score_all(evaluators=evaluators) -> None:
                for view in views:
                    await score_case(evaluators, view, None)

            started = time.perf_counter()
            asyncio.run(score_all())
            seconds = time.perf_counter() - started
            print(f"python: scorer, {label}, {count} cases: {count / seconds:,.0f} cases/s "
                  f"({seconds * 1e6 / count:.0f} µs a case)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
