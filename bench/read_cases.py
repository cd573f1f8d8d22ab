"""Reading a large cases.jsonl: json parsing alone (``--json-only``) or through the typed, checked
reader (default): ``python bench/read_cases.py`` and ``python bench/read_cases.py --json-only``,
each a few times as whole processes (quote medians). Prints cases read per second."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from evalsite.runlog.store import read_cases, read_jsonl

CASES = 50_000
SCORE = {"evaluator": "exact", "version": "v", "score": 1.0, "passed": True, "label": None, "detail": None,
         "error": None, "skipped": False, "turn": None, "spread": None, "cost_usd": None}
CASE = {"item_id": "q1", "repeat": 0, "item_sha": "a" * 64, "input": "question " * 20, "expected": "4",
        "output": "answer " * 30, "error": None, "latency_ms": 12.5, "input_tokens": 30, "output_tokens": 40,
        "cost_usd": 0.0001, "finish_reason": "stop", "scores": [SCORE, {**SCORE, "evaluator": "contains"}],
        "score": 1.0, "passed": True, "started_at": "2026-01-01T00:00:00.000Z", "critical": False}


def main() -> None:
    folder = Path(tempfile.mkdtemp()) / "run"
    folder.mkdir()
    path = folder / "cases.jsonl"
    path.write_text("".join(json.dumps({**CASE, "item_id": f"q{i}"}) + "\n" for i in range(CASES)))
    started = time.perf_counter()
    read = len(list(read_jsonl(path))) if "--json-only" in sys.argv else len(read_cases(path))
    print(f"{read / (time.perf_counter() - started):,.0f} cases/s")


if __name__ == "__main__":
    main()
