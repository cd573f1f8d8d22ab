"""The regression report's items as columns (analysis/item_changes.py) against plain Python: the
``--json`` rows against rows built from the cases written, the page's orders against ``sorted`` of
one object per item, and the item links against the per-id functions."""

from __future__ import annotations

import random
from statistics import fmean

import numpy as np
import pytest

from evalsite.analysis.compare import compare_runs
from evalsite.analysis.item_changes import (
    CLASSIFICATIONS,
    GT_CHANGED,
    IMPROVED,
    REGRESSED,
    UNCHANGED,
    ItemChange,
    item_changes,
)
from evalsite.project import find_project
from evalsite.runlog.rows import item_order
from evalsite.runlog.store import RunWriter
from evalsite.site import paths

THRESHOLD = 0.05


def write_run(root, rng: random.Random, items: list[int], repeats: int) -> tuple[str, dict[str, list[float]]]:
    header = {"arm_id": "main", "dataset": {"path": "d.jsonl", "dataset_id": "d@0"}}
    writer = RunWriter.create(root / "runs", "main", header)
    scores: dict[str, list[float]] = {}
    for item in items:
        for repeat in range(repeats):
            score = None if rng.random() < 0.1 else rng.choice([0.0, 0.25, 0.5, 1.0])
            writer.append_case({"item_id": f"q{item}", "item_sha": f"s{item}", "repeat": repeat, "expected": "x",
                                "output": "x", "score": score, "passed": None if score is None else score >= 0.5,
                                "scores": [] if score is None else [{"evaluator": "exact", "version": "1", "score": score,
                                                                     "passed": score >= 0.5}]})
            if score is not None:
                scores.setdefault(f"q{item}", []).append(score)
    writer.finish({"status": "completed"})
    return writer.run_id, scores


@pytest.mark.parametrize("seed", range(5))
def test_the_json_rows_equal_rows_built_from_the_cases_in_plain_python(tmp_path, seed):
    rng = random.Random(seed)
    (tmp_path / "evalsite.toml").write_text("")
    baseline, old = write_run(tmp_path, rng, [i for i in range(60) if rng.random() < 0.9], rng.randint(1, 3))
    current, new = write_run(tmp_path, rng, [i for i in range(60) if rng.random() < 0.9], rng.randint(1, 3))
    data = compare_runs(find_project(tmp_path), current, baseline=baseline, threshold=THRESHOLD).to_json()

    expected = []
    for item_id in sorted(old.keys() & new.keys(), key=item_order):
        before, after = fmean(old[item_id]), fmean(new[item_id])  # quarter steps: every mean is exact
        delta = after - before
        kind = IMPROVED if delta > THRESHOLD + 1e-9 else REGRESSED if delta < -THRESHOLD - 1e-9 else UNCHANGED
        expected.append({"item_id": item_id, "baseline_score": before, "current_score": after, "delta": delta,
                         "classification": kind, "rescored": False, "note": None})
    rows = data["regression"]["items"]
    assert rows == expected
    assert [list(row) for row in rows] == [list(row) for row in expected]  # the keys in the same order
    assert all(type(row["rescored"]) is bool and type(row["delta"]) is float for row in rows)


def changes(rng: random.Random, size: int):
    """Items of random deltas on a coarse grid (many ties), some without a delta or a score."""
    ids = [f"i{n}" for n in rng.sample(range(10 * size), size)]
    baseline = np.array([rng.choice([0.0, 0.5, 1.0, np.nan]) for _ in ids])
    current = np.array([rng.choice([0.0, 0.5, 1.0]) for _ in ids])
    code = np.array([rng.randrange(len(CLASSIFICATIONS)) for _ in ids])
    notes = [rng.choice([None, "why"]) for _ in ids]
    ids_column = np.empty(size, dtype=object)
    ids_column[:] = ids
    return item_changes(ids_column, baseline, current, current - baseline, code, np.array([rng.random() < 0.3 for _ in ids]), notes)


def one_by_one(columns) -> list[ItemChange]:
    """The rows as objects built value by value, not through the columns' own listing."""
    return [ItemChange(columns.item_id[row], None if np.isnan(columns.baseline_score[row]) else float(columns.baseline_score[row]),
                       float(columns.current_score[row]), None if np.isnan(columns.delta[row]) else float(columns.delta[row]),
                       CLASSIFICATIONS[columns.code[row]], bool(columns.rescored[row]), columns.note[row])
            for row in range(len(columns))]


@pytest.mark.parametrize("seed", range(8))
def test_selections_and_orders_equal_sorting_one_object_per_item(seed):
    rng = random.Random(seed)
    columns = changes(rng, rng.choice([0, 1, 7, 300]))
    objects = one_by_one(columns)
    assert list(columns) == objects
    assert columns.records() == [vars(item) for item in objects]
    changed = [c for c in objects if c.classification in (IMPROVED, REGRESSED)]
    assert list(columns.of(IMPROVED, REGRESSED)) == changed
    assert list(columns.of(GT_CHANGED)) == [c for c in objects if c.classification == GT_CHANGED]
    assert list(columns.of(IMPROVED, REGRESSED).largest_first()) == sorted(changed, key=lambda c: -abs(c.delta or 0.0))
    with_delta = [c for c in objects if c.delta is not None]
    picked = columns.take(~np.isnan(columns.delta))
    for limit in (0, 1, 5, 100, 1000):
        assert list(picked.largest(limit)) == sorted(with_delta, key=lambda c: (-abs(c.delta or 0.0), c.item_id))[:limit]
    assert list(columns.take(slice(2, 5))) == objects[2:5]


def test_item_links_equal_each_items_own_link():
    ids = ["q1", "a.b", "a-", "a.", "x y", "ünï", "", "-", "a/b", "_", "9", "a" * 95, "a" * 96, "b" * 200, "q\n", "item-3"]
    assert paths.items("d@1", ids) == [f"{paths.item_page('d@1', paths.item_bucket(i))}#{paths.item_anchor(i)}" for i in ids]
    assert paths.item_buckets(ids) == list(map(paths.item_bucket, ids))
    assert paths.item_anchors(ids) == list(map(paths.item_anchor, ids))
