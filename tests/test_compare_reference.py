"""``compare --json`` against an independent slow path: the same report computed here case by case
from the plain Python reader (:func:`evalsite.runlog.store.read_cases`), one dict per case, as the
report was computed before it read case columns. Two evaluators (one without a pass rule on some
cases), errors, skips, unequal repeats, items in one run only, items unscored on one side, critical rows."""

from __future__ import annotations

import math
import random
from statistics import fmean

import pytest

from evalsite.analysis.regression import CONFIDENCE, IMPROVED, REGRESSED, SEED, UNCHANGED
from evalsite.runlog.rows import item_order
from evalsite.runlog.store import RunWriter, read_cases
from evalsite.stats.pairs import paired_difference

THRESHOLD = 0.05
EVALUATORS = ("exact", "judge")


def score_of(rng: random.Random, evaluator: str) -> dict:
    roll = rng.random()
    if roll < 0.05:
        return {"evaluator": evaluator, "version": "1", "score": None, "passed": False, "error": "boom"}
    if roll < 0.1:
        return {"evaluator": evaluator, "version": "1", "score": None, "passed": None, "skipped": True}
    value = rng.choice([0.0, 0.25, 0.5, 1.0])
    ruled = evaluator == "exact" or rng.random() < 0.5
    return {"evaluator": evaluator, "version": "1", "score": value, "passed": value >= 0.5 if ruled else None}


def write_run(root, rng: random.Random, items: list[int], repeats: int) -> str:
    header = {"arm_id": "main", "dataset": {"path": "d.jsonl", "dataset_id": "d@0"}}
    writer = RunWriter.create(root / "runs", "main", header)
    for item in items:
        for repeat in range(repeats):
            scores = [score_of(rng, name) for name in EVALUATORS if rng.random() < 0.95]
            values = [s["score"] for s in scores if s["score"] is not None]
            verdicts = [s["passed"] for s in scores if s["passed"] is not None]
            writer.append_case({
                "item_id": f"q{item}", "item_sha": f"s{item}", "repeat": repeat, "expected": "x", "output": "x",
                "error": "failed" if rng.random() < 0.03 else None, "critical": item % 5 == 0, "scores": scores,
                "score": fmean(values) if values else None, "passed": all(verdicts) if verdicts else None,
            })
    writer.finish({"status": "completed"})
    return writer.run_id


def by_item(cases: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for case in cases:
        grouped.setdefault(case["item_id"], []).append(case)
    return grouped


def item_mean(cases: list[dict]) -> float | None:
    scores = [c["score"] for c in cases if c["score"] is not None]
    return fmean(scores) if scores else None


def item_passed(cases: list[dict]) -> bool | None:
    verdicts = [c["passed"] for c in cases if c["passed"] is not None]
    return all(verdicts) if verdicts else None


def evaluator_side(name: str, groups: dict[str, list[dict]], items: list[str]) -> dict:
    """One evaluator over the compared items, score by score (docs/reference/evaluators.md)."""
    entries = [(item, case, s) for item in items for case in groups[item] for s in case["scores"] if s["evaluator"] == name]
    ruled = any(not s.get("error") and not s.get("skipped") and s["passed"] is not None and not case["error"]
                for _, case, s in entries)
    passes = sum(1 for _, _, s in entries if s["passed"] is True and not s.get("error"))
    repeat_means: dict[str, list[float]] = {}
    for item, _, s in entries:
        if not s.get("error") and not s.get("skipped") and s["score"] is not None:
            repeat_means.setdefault(item, []).append(s["score"])  # one score per case and evaluator here
    means = [fmean(values) for values in repeat_means.values()]
    passed = {}
    for item in items:
        mine = [s for i, _, s in entries if i == item]
        passed[item] = (all(s["passed"] is True and not s.get("error") for s in mine) if mine and ruled else None)
    return {"pass_rate": passes / len(entries) if ruled and entries else None,
            "mean": math.fsum(means) / len(means) if means else None,
            "errors": sum(1 for _, _, s in entries if s.get("error")), "passed": passed}


def difference(new, old):
    return None if new is None or old is None else new - old


@pytest.mark.parametrize("seed", range(4))
def test_compare_json_equals_the_report_computed_case_by_case(tmp_path, monkeypatch, cli, seed):
    rng = random.Random(seed)
    old_id = write_run(tmp_path, rng, [i for i in range(60) if rng.random() < 0.92], rng.randint(1, 3))
    new_id = write_run(tmp_path, rng, [i for i in range(60) if rng.random() < 0.92], rng.randint(1, 3))
    monkeypatch.chdir(tmp_path)
    report = cli.json("compare", new_id, "--baseline", old_id)["regression"]

    before = by_item([case.raw for case in read_cases(tmp_path / "runs" / old_id / "cases.jsonl")])
    after = by_item([case.raw for case in read_cases(tmp_path / "runs" / new_id / "cases.jsonl")])
    shared = sorted(before.keys() & after.keys(), key=item_order)
    items = []
    for item in shared:
        old, new = item_mean(before[item]), item_mean(after[item])
        if old is not None and new is not None:
            delta = new - old
            kind = IMPROVED if delta > THRESHOLD + 1e-9 else REGRESSED if delta < -THRESHOLD - 1e-9 else UNCHANGED
            items.append({"item_id": item, "baseline_score": old, "current_score": new, "delta": delta,
                          "classification": kind, "rescored": False, "note": None})
    assert report["items"] == items
    assert report["only_in_baseline"] == sorted(before.keys() - after.keys(), key=item_order)
    assert report["only_in_current"] == sorted(after.keys() - before.keys(), key=item_order)
    assert report["unscored"] == [i for i in shared if i not in {c["item_id"] for c in items}]
    assert report["critical_newly_failing"] == [
        i for i in shared if int(i[1:]) % 5 == 0 and item_passed(before[i]) is True and item_passed(after[i]) is False]

    evaluators = []
    for name in EVALUATORS:
        old, new = evaluator_side(name, before, shared), evaluator_side(name, after, shared)
        evaluators.append({
            "evaluator": name,
            **{key: [i for i in shared if old["passed"][i] is was and new["passed"][i] is now]
               for key, was, now in (("newly_failing", True, False), ("newly_passing", False, True),
                                     ("still_failing", False, False))},
            "baseline_pass_rate": old["pass_rate"], "current_pass_rate": new["pass_rate"],
            "pass_rate_delta": difference(new["pass_rate"], old["pass_rate"]),
            "baseline_mean": old["mean"], "current_mean": new["mean"], "mean_delta": difference(new["mean"], old["mean"]),
            "baseline_errors": old["errors"], "current_errors": new["errors"], "error_delta": new["errors"] - old["errors"],
        })
    assert sorted(report["evaluators"], key=lambda e: e["evaluator"]) == evaluators

    summary = report["summary"]
    baseline, current = [c["baseline_score"] for c in items], [c["current_score"] for c in items]
    test = paired_difference(current, baseline, seed=SEED, confidence=CONFIDENCE)
    assert {key: summary[key] for key in ("compared", "improved", "regressed", "unchanged", "gt_changed", "rescored",
                                          "baseline_mean", "current_mean", "mean_delta", "net_delta", "p_value")} == {
        "compared": len(items), **{kind: sum(1 for c in items if c["classification"] == kind)
                                   for kind in (IMPROVED, REGRESSED, UNCHANGED)},
        "gt_changed": 0, "rescored": 0, "baseline_mean": fmean(baseline), "current_mean": fmean(current),
        "mean_delta": fmean(current) - fmean(baseline), "net_delta": math.fsum(c["delta"] for c in items),
        "p_value": test.p_value,
    }
    assert (summary["ci_low"], summary["ci_high"]) == (test.interval.low, test.interval.high)
