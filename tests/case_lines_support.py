"""Case lines as evalsite writes them (every optional field sometimes absent or null), written to a
run folder, and a run summary as comparable text: shared by the DuckDB-reading tests."""

from __future__ import annotations

import json
import random
from pathlib import Path

from evalsite.analysis.summary import summarise_run
from evalsite.runlog.store import CASES_FILE


def score(rng: random.Random, evaluator: str, turn: int | None = None) -> dict:
    errored = rng.random() < 0.1
    return {
        "evaluator": evaluator, "version": rng.choice(["v1", "v2", None]),
        "score": None if errored else rng.choice([0.0, 0.25, 1.0, 3, float("nan")]),
        "passed": None if errored else rng.choice([True, False, None]),
        "label": rng.choice([None, "good", "bad"]), "detail": rng.choice([None, "why"]),
        "error": "boom" if errored else rng.choice([None, ""]), "skipped": rng.random() < 0.1, "turn": turn,
    }


def good_case(rng: random.Random, item: int) -> dict:
    """A line as evalsite writes one, every optional field sometimes absent or null."""
    case = {
        "item_id": f"q{item}", "repeat": rng.randint(0, 2), "item_sha": rng.choice([f"{item:064x}", "", None]),
        "expected": rng.choice([str(item), {"b": [1, 2], "a": "x"}, None, 4.5]),
        "error": rng.choice([None, None, "HTTP 500", ""]), "latency_ms": rng.choice([12.5, 3, None, float("inf")]),
        "input_tokens": rng.choice([10, None]), "output_tokens": rng.choice([5, None]),
        "cost_usd": rng.choice([0.001, 0, None]), "scoring_cost_usd": rng.choice([0.0001, None]),
        "score": rng.choice([1.0, 0.0, 0.5, None, 2]), "passed": rng.choice([True, False, None]),
        "critical": rng.choice([True, False, None]), "served_model": rng.choice(["m-1", "m-2", "", None]),
        "scores": [score(rng, name) for name in rng.sample(["exact", "judge", "json"], rng.randint(0, 2))]
        + ([score(rng, "turns", turn) for turn in (1, 2)] if rng.random() < 0.3 else []),
    }
    for key in list(case):
        if key not in ("item_id", "repeat") and rng.random() < 0.15:
            del case[key]
    return case


def write_lines(folder: Path, lines: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / CASES_FILE).write_text("\n".join(lines) + "\n")
    return folder


def summary_text(cases) -> str:
    return json.dumps(summarise_run(cases).to_json(), sort_keys=True, default=str)
