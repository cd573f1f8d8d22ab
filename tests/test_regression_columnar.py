"""The regression report, read through the item matrix of the two runs, against a brute-force
reading of the cases written: items in one run only, items without a score on one side, unequal
repeats, verdicts missing on some repeats, critical rows."""

from __future__ import annotations

import random
from statistics import fmean

import pytest

from evalsite.analysis.case_scan import scan_cases
from evalsite.analysis.regression import IMPROVED, REGRESSED, UNCHANGED, UNSCORED, regression_report
from evalsite.runlog.rows import item_order
from evalsite.runlog.store import RunWriter, read_run

THRESHOLD = 0.05


def write_run(root, name: str, rng: random.Random, items: list[int], repeats: int) -> tuple[str, list[dict]]:
    header = {"arm_id": name, "dataset": {"path": "d.jsonl", "dataset_id": "d@0"}}
    writer = RunWriter.create(root / "runs", name, header)
    cases = []
    for item in items:
        for repeat in range(repeats):
            score = None if rng.random() < 0.15 else rng.choice([0.0, 0.5, 1.0])
            case = {"item_id": f"q{item}", "item_sha": f"s{item}", "repeat": repeat, "expected": "x",
                    "output": "x", "score": score, "critical": item % 4 == 0,
                    "passed": None if score is None or rng.random() < 0.1 else score >= 0.5,
                    "scores": [] if score is None else [{"evaluator": "exact", "version": "1", "score": score,
                                                         "passed": score >= 0.5}]}
            cases.append(case)
            writer.append_case(case)
    writer.finish({"status": "completed"})
    return writer.run_id, cases


def by_item(cases: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for case in cases:
        grouped.setdefault(case["item_id"], []).append(case)
    return grouped


def mean(cases: list[dict]) -> float | None:
    scores = [c["score"] for c in cases if c["score"] is not None]
    return fmean(scores) if scores else None


def passed(cases: list[dict]) -> bool | None:
    verdicts = [c["passed"] for c in cases if c["passed"] is not None]
    return all(verdicts) if verdicts else None


@pytest.mark.parametrize("seed", range(6))
def test_the_report_equals_a_brute_force_reading_of_both_runs(tmp_path, seed):
    rng = random.Random(seed)
    everything = list(range(40))
    old_items = [i for i in everything if rng.random() < 0.9]
    new_items = [i for i in everything if rng.random() < 0.9]
    old_id, old_cases = write_run(tmp_path, "main", rng, old_items, rng.randint(1, 3))
    new_id, new_cases = write_run(tmp_path, "main", rng, new_items, rng.randint(1, 3))
    folders = tmp_path / "runs" / old_id, tmp_path / "runs" / new_id
    report = regression_report(tmp_path, read_run(folders[0]), read_run(folders[1]),
                               (scan_cases(folders[0]), scan_cases(folders[1])), threshold=THRESHOLD)

    before, after = by_item(old_cases), by_item(new_cases)
    shared = sorted(before.keys() & after.keys(), key=item_order)
    assert report.only_in_baseline == sorted(before.keys() - after.keys(), key=item_order)
    assert report.only_in_current == sorted(after.keys() - before.keys(), key=item_order)
    expected_items, unscored = [], []
    for item_id in shared:
        old, new = mean(before[item_id]), mean(after[item_id])
        if old is None or new is None:
            unscored.append(item_id)
            continue
        delta = new - old
        kind = IMPROVED if delta > THRESHOLD + 1e-9 else REGRESSED if delta < -THRESHOLD - 1e-9 else UNCHANGED
        expected_items.append((item_id, old, new, kind))
    assert report.unscored == unscored
    assert [(c.item_id, c.classification) for c in report.items] == [(i, kind) for i, _, _, kind in expected_items]
    assert [c.baseline_score for c in report.items] == pytest.approx([old for _, old, _, _ in expected_items], rel=1e-12)
    assert [c.current_score for c in report.items] == pytest.approx([new for _, _, new, _ in expected_items], rel=1e-12)
    assert UNSCORED not in {c.classification for c in report.items}
    assert report.summary.compared == len(expected_items)
    if expected_items:
        assert report.summary.mean_delta == pytest.approx(
            fmean(n for _, _, n, _ in expected_items) - fmean(o for _, o, _, _ in expected_items))
    assert report.critical_newly_failing == [
        i for i in shared if int(i[1:]) % 4 == 0 and passed(before[i]) is True and passed(after[i]) is False
    ]
