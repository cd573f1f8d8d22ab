"""Write data/arithmetic.jsonl, the bundled example dataset (fixed seed, so the file is stable).

Run from the repository root: ``python scripts/make_example_data.py``. The rows are arithmetic
questions with exact integer answers, in four kinds: addition, subtraction, multiplication and
two-step expressions where operator precedence matters.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "data" / "arithmetic.jsonl"


def rows(seed: int = 20261130) -> list[dict]:
    rng = random.Random(seed)
    made = []
    for kind, count in (("add", 15), ("sub", 15), ("mul", 10), ("two_step", 20)):
        for _ in range(count):
            if kind == "add":
                a, b = rng.randint(10, 499), rng.randint(10, 499)
                question, answer = f"{a} + {b}", a + b
            elif kind == "sub":
                a, b = rng.randint(100, 999), rng.randint(10, 99)
                question, answer = f"{a} - {b}", a - b
            elif kind == "mul":
                a, b = rng.randint(12, 99), rng.randint(3, 40)
                question, answer = f"{a} * {b}", a * b
            else:
                a, b, c = rng.randint(2, 30), rng.randint(2, 12), rng.randint(2, 12)
                question, answer = f"{a} + {b} * {c}", a + b * c
            made.append({
                "id": f"q{len(made):03d}",
                "input": f"What is {question}? Answer with the number only.",
                "expected": str(answer),
                "metadata": {"kind": kind},
            })
    return made


def main() -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as handle:
        for row in rows():
            handle.write(json.dumps(row) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
