"""``compare_runs`` given the current run's cases already read, and the baseline's columns kept from
an earlier reading (as the site passes them), reports exactly what it reports reading both runs itself: random runs with items on one side only,
unequal repeats, missing scores and verdicts, critical rows and edited expected values (whose
records are read whole to re-score)."""

from __future__ import annotations

import random

import pytest

from evalsite.analysis.case_columns import columns_arrays, columns_of_arrays
from evalsite.analysis.case_scan import ScannedCases, cases_in_hand
from evalsite.analysis.compare import compare_runs
from evalsite.project import find_project
from evalsite.runlog.store import CASES_FILE, RunWriter, read_cases

EVALUATORS = {"exact": {"type": "exact", "version": "1"}}


def write_run(root, rng: random.Random, items: list[int], repeats: int, edited: set[int]) -> str:
    header = {"arm_id": "main", "dataset": {"path": "d.jsonl", "dataset_id": "d@0"}, "evaluators": EVALUATORS,
              "fingerprint": {"dataset": {"dataset_id": "d@0", "inputs_id": "d@in"}, "evaluators": EVALUATORS}}
    writer = RunWriter.create(root / "runs", "main", header)
    for item in items:
        for repeat in range(repeats):
            score = None if rng.random() < 0.15 else rng.choice([0.0, 0.5, 1.0])
            writer.append_case({
                "item_id": f"q{item}", "item_sha": f"s{item}", "repeat": repeat, "output": rng.choice(["x", "y"]),
                "expected": "y" if item in edited else "x", "score": score, "critical": item % 4 == 0,
                "passed": None if score is None or rng.random() < 0.1 else score >= 0.5,
                "scores": [] if score is None else [{"evaluator": "exact", "version": "1", "score": score, "passed": score >= 0.5}],
            })
    writer.finish({"status": "completed"})
    return writer.run_id


@pytest.mark.parametrize("seed", range(6))
def test_a_comparison_from_the_cases_in_hand_equals_one_that_reads_both_runs(tmp_path, seed):
    rng = random.Random(seed)
    (tmp_path / "evalsite.toml").write_text("")
    baseline = write_run(tmp_path, rng, [i for i in range(40) if rng.random() < 0.9], rng.randint(1, 3), set())
    current = write_run(tmp_path, rng, [i for i in range(40) if rng.random() < 0.9], rng.randint(1, 3),
                        {i for i in range(40) if rng.random() < 0.2})
    project = find_project(tmp_path)
    read = compare_runs(project, current, baseline=baseline, run_code=False)
    in_hand = compare_runs(project, current, baseline=baseline, run_code=False,
                           current_cases=cases_in_hand(read_cases(project.runs_dir / current / CASES_FILE)))
    path = project.runs_dir / baseline / CASES_FILE
    kept = ScannedCases.kept(columns_of_arrays(columns_arrays(cases_in_hand(read_cases(path)).columns)), path)
    both = compare_runs(project, current, baseline=baseline, run_code=False, baseline_cases=kept,
                        current_cases=cases_in_hand(read_cases(project.runs_dir / current / CASES_FILE)))
    assert read.regression is not None and read.regression.items
    assert in_hand.to_json() == read.to_json() == both.to_json()
