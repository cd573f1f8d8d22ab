"""The columnar item matrix equals a brute-force reading of the cases it was written from.

Random runs (items missing from some arms, unequal and gapped repeats, an item_sha changed in
one arm, cases without a score, per-turn evaluator scores, a case written twice) go through the
real run-log writer and DuckDB views; the reference below rebuilds the matrix from the written
case dicts with plain loops, following the rules stated in ``evalsite.analysis.items``.
"""

from __future__ import annotations

import random
import sys
from statistics import fmean

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsite.analysis.case_columns import _numbered_keys, case_columns, item_natural_order, natural_order
from evalsite.analysis.case_scan import dictionary_codes
from evalsite.analysis.db import open_database
from evalsite.analysis.items import _dense_rank_within, item_matrix, runs_item_matrix
from evalsite.analysis.parquet import case_files, compact_run
from evalsite.analysis.selection import runs_by_reference
from evalsite.errors import EvalsiteError
from evalsite.runlog.rows import case_order, item_order
from evalsite.runlog.store import RunWriter, read_run

FIELDS = ("score", "passed", "cost_usd", "latency_ms", "tokens")


def _score_entries(rng: random.Random, score: float | None) -> list[dict]:
    entries = [{"evaluator": "exact", "version": "1", "score": score, "passed": None if score is None else score >= 0.5}]
    for turn in range(rng.randint(1, 3)):  # a per-turn evaluator: one entry per turn
        entry = {"evaluator": "turns", "version": "1", "turn": turn, "score": rng.choice([0.0, 0.5, 1.0]),
                 "passed": rng.random() < 0.6}
        if rng.random() < 0.15:
            entry.update(score=None, passed=False, error="judge failed")
        elif rng.random() < 0.1:
            entry.update(score=None, passed=None, skipped=True)
        entries.append(entry)
    return entries


def _case(rng: random.Random, item: int, repeat: int, sha: str) -> dict:
    score = None if rng.random() < 0.15 else rng.choice([0.0, 0.25, 1.0, rng.random()])
    case = {
        "item_id": f"q{item}", "item_sha": sha, "repeat": repeat, "output": "x",
        "score": score, "passed": None if score is None else score >= 0.5,
        "latency_ms": None if rng.random() < 0.1 else rng.uniform(1, 100),
        "cost_usd": None if rng.random() < 0.2 else rng.uniform(0, 1e-3),
        "input_tokens": rng.randint(1, 9), "output_tokens": None if rng.random() < 0.1 else rng.randint(1, 9),
        "scores": _score_entries(rng, score),
    }
    if score is None and rng.random() < 0.5:
        case["error"] = "target failed"
    return case


def write_arms(root, seed: int) -> tuple[list[str], dict[str, list[dict]]]:
    rng = random.Random(seed)
    items = rng.randint(3, 25)
    written: dict[str, list[dict]] = {}
    for arm in range(rng.randint(1, 4)):
        header = {"arm_id": f"arm{arm}", "config_id": f"config{arm}", "started_at": f"2026-01-01T00:00:0{arm}.000Z",
                  "dataset": {"path": "data/d.jsonl", "dataset_id": "d@000000000000", "items": items}}
        writer = RunWriter.create(root / "runs", f"arm{arm}", header)
        repeats = rng.sample(range(5), rng.randint(1, 3))  # unequal and gapped repeat numbers
        cases = []
        for item in range(items):
            if rng.random() < 0.1:
                continue  # missing from this arm
            sha = f"changed{item}" if arm == 1 and item % 7 == 3 else (None if item % 5 == 4 else f"sha{item}")
            sha = "" if sha is None and arm == 2 else sha  # an empty item_sha is no item_sha
            for repeat in repeats:
                if rng.random() < 0.1:
                    continue
                cases.append(_case(rng, item, repeat, sha))
        if cases and rng.random() < 0.5:
            again = dict(rng.choice(cases))
            again.update(score=None, latency_ms=rng.uniform(1, 100))  # written twice: the first line wins
            cases.append(again)
        for case in cases:
            writer.append_case(case)
        writer.finish({"status": "completed"})
        written[writer.run_id] = cases
    return list(written), written


def _evaluator_view(case: dict, evaluator: str | None) -> dict:
    view = dict(case)
    view["tokens"] = (None if case["input_tokens"] is None or case["output_tokens"] is None
                      else float(case["input_tokens"] + case["output_tokens"]))
    if evaluator is not None:
        entries = [e for e in case["scores"] if e["evaluator"] == evaluator]
        counted = [e["score"] for e in entries if e.get("error") is None and not e.get("skipped") and e["score"] is not None]
        verdicts = [e["passed"] for e in entries if e["passed"] is not None]
        view["score"] = fmean(counted) if counted else None
        view["passed"] = all(verdicts) if verdicts else None
    view["passed"] = None if view["passed"] is None else float(view["passed"])
    return view


def reference(run_ids: list[str], labels: list[str], written: dict[str, list[dict]], evaluator: str | None):
    per_arm = [[_evaluator_view(c, evaluator) for c in written[run_id]] for run_id in run_ids]
    everything = sorted({c["item_id"] for cases in per_arm for c in cases}, key=item_order)
    kept, dropped = [], []
    for item_id in everything:
        mine = [[c for c in cases if c["item_id"] == item_id] for cases in per_arm]
        missing = [label for label, cases in zip(labels, mine) if not cases]
        unscored = [label for label, cases in zip(labels, mine) if all(c["score"] is None for c in cases)]
        shas = {c["item_sha"] for cases in mine for c in cases if c["item_sha"]}
        if missing:
            dropped.append((item_id, f"no case in {', '.join(missing)}"))
        elif unscored:
            dropped.append((item_id, f"no score in {', '.join(unscored)}"))
        elif len(shas) > 1:
            dropped.append((item_id, "the row differs between runs (its item_sha changed)"))
        else:
            kept.append((item_id, next(iter(shas), None)))
    columns = [{r: i for i, r in enumerate(sorted({c["repeat"] for c in cases}))} for cases in per_arm]
    width = max(len(c) for c in columns)
    cells = {name: np.full((len(kept), len(run_ids), width), np.nan) for name in FIELDS}
    recorded = np.zeros((len(kept), len(run_ids), width), dtype=bool)
    row_of = {item_id: row for row, (item_id, _) in enumerate(kept)}
    for arm, cases in enumerate(per_arm):
        for case in cases:  # in the order written: a repeated (item, repeat) is its first line
            if case["item_id"] not in row_of:
                continue
            cell = (row_of[case["item_id"]], arm, columns[arm][case["repeat"]])
            if recorded[cell]:
                continue
            recorded[cell] = True
            for name in FIELDS:
                if case[name] is not None:
                    cells[name][cell] = case[name]
    return kept, dropped, cells, recorded


@pytest.mark.parametrize("evaluator", [None, "exact", "turns"])
@pytest.mark.parametrize("seed", range(8))
def test_the_matrix_equals_a_brute_force_reading_of_the_cases(tmp_path, seed, evaluator):
    run_ids, written = write_arms(tmp_path, seed)
    assert_brute_force_matrix(tmp_path, run_ids, written, evaluator)


@pytest.mark.parametrize("seed", [0, 3, 5])
def test_runs_read_from_vouched_checked_and_compacted_files_together_give_the_brute_force_matrix(tmp_path, seed):
    """The score matrix reads only its columns: from a vouched file's typed columns, a checked file's
    and a Parquet file's alike, in one union."""
    run_ids, written = write_arms(tmp_path, seed)
    compact_run(tmp_path / "runs" / run_ids[-1])
    directories = [tmp_path / "runs" / run_id for run_id in run_ids]
    files = case_files(directories)
    assert files.parquet and (files.written or files.checked)
    assert_brute_force_matrix(tmp_path, run_ids, written, None)


def assert_brute_force_matrix(tmp_path, run_ids: list[str], written: dict[str, list[dict]], evaluator: str | None) -> None:
    arms = runs_by_reference(tmp_path / "runs", run_ids)
    labels = [arm.label for arm in arms]
    kept, dropped, cells, recorded = reference(run_ids, labels, written, evaluator)
    database = open_database(tmp_path / "runs")
    if not kept:
        with pytest.raises(EvalsiteError, match="no item is scored in every run"):
            item_matrix(database, arms, evaluator)
        return
    matrix = item_matrix(database, arms, evaluator)
    assert list(zip(matrix.item_ids, matrix.item_shas)) == kept
    assert [(d.item_id, d.reason) for d in matrix.dropped] == dropped
    np.testing.assert_array_equal(matrix.recorded, recorded)
    for name in FIELDS:
        np.testing.assert_allclose(getattr(matrix, name), cells[name], rtol=1e-12, equal_nan=True, err_msg=name)


def test_the_first_dropped_items_are_named_when_nothing_is_shared(tmp_path):
    ids = []
    for arm, items in (("a", ["q1", "q2"]), ("b", ["q3"])):
        header = {"arm_id": arm, "dataset": {"path": "d.jsonl", "dataset_id": "d@0"}}
        writer = RunWriter.create(tmp_path / "runs", arm, header)
        for item_id in items:
            writer.append_case({"item_id": item_id, "repeat": 0, "score": 1.0, "passed": True})
        writer.finish({"status": "completed"})
        ids.append(writer.run_id)
    arms = runs_by_reference(tmp_path / "runs", ids)
    with pytest.raises(EvalsiteError, match=r"q1: no case in b; q2: no case in b; q3: no case in a"):
        item_matrix(open_database(tmp_path / "runs"), arms)


def test_a_seed_with_every_kind_of_gap_is_in_the_random_sample(tmp_path):
    """The random projects above do exercise what they claim (else they prove little)."""
    kinds = set()
    for seed in range(8):
        _, written = write_arms(tmp_path / str(seed), seed)
        cases = [c for cs in written.values() for c in cs]
        kinds |= {"unscored"} if any(c["score"] is None for c in cases) else set()
        kinds |= {"sha"} if any(str(c["item_sha"]).startswith("changed") for c in cases) else set()
        kinds |= {"arms"} if len(written) > 1 else set()
        kinds |= {"repeats"} if len({len({c["repeat"] for c in cs}) for cs in written.values()}) > 1 else set()
        twice = any(len({(c["item_id"], c["repeat"]) for c in cs}) < len(cs) for cs in written.values())
        kinds |= {"twice"} if twice else set()
    assert kinds == {"unscored", "sha", "arms", "repeats", "twice"}


def test_a_dataset_file_that_never_mentions_metadata_has_no_clusters_and_is_not_parsed(tmp_path, monkeypatch):
    from evalsite.analysis import metadata
    from evalsite.analysis.items import cluster_labels
    from evalsite.project import Project

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "d.jsonl").write_text('{"id": "q1", "input": "a", "expected": "b"}\n')
    header = {"arm_id": "a", "dataset": {"path": "data/d.jsonl", "dataset_id": "d@0"}}
    writer = RunWriter.create(tmp_path / "runs", "a", header)
    writer.append_case({"item_id": "q1", "repeat": 0, "score": 1.0, "passed": True})
    writer.finish({"status": "completed"})
    matrix = item_matrix(open_database(tmp_path / "runs"), runs_by_reference(tmp_path / "runs", [writer.run_id]))

    def parsed(*args, **kwargs):
        raise AssertionError("the dataset file was parsed")

    monkeypatch.setattr(metadata, "load_dataset", parsed)
    assert cluster_labels(Project(tmp_path), matrix) == (None, None)
    (tmp_path / "data" / "d.jsonl").write_text('{"id": "q1", "input": "a", "expected": "b", "metadata": {"group": "g"}}\n')
    with pytest.raises(AssertionError, match="parsed"):
        cluster_labels(Project(tmp_path), matrix)


@pytest.mark.parametrize("seed", range(6))
def test_the_matrix_of_runs_in_memory_is_the_matrix_duckdb_reads(tmp_path, seed):
    run_ids, written = write_arms(tmp_path, seed)
    arms = runs_by_reference(tmp_path / "runs", run_ids)
    runs = [read_run(tmp_path / "runs" / run_id) for run_id in run_ids]
    try:
        from_views = item_matrix(open_database(tmp_path / "runs"), arms)
    except EvalsiteError:
        from_views = None
    if from_views is not None:
        in_memory = runs_item_matrix(runs)
        assert (in_memory.item_ids, in_memory.item_shas, in_memory.dropped) == (
            from_views.item_ids, from_views.item_shas, from_views.dropped)
        assert in_memory.repeat_ids == from_views.repeat_ids
        for name in (*FIELDS, "recorded"):
            np.testing.assert_array_equal(getattr(in_memory, name), getattr(from_views, name), err_msg=name)
    every = runs_item_matrix(runs, shared=False)
    assert every.dropped == ()
    assert list(every.item_ids) == sorted({c["item_id"] for cs in written.values() for c in cs}, key=item_order)
    for arm, run_id in enumerate(run_ids):
        assert every.repeat_ids[arm] == tuple(sorted({c["repeat"] for c in written[run_id]}))
        mine = {c["item_id"] for c in written[run_id]}
        assert [item_id in mine for item_id in every.item_ids] == every.recorded[:, arm, :].any(axis=1).tolist()


@pytest.mark.parametrize("seed", [1, 4])
def test_runs_holding_plain_case_lines_give_the_same_matrix_as_typed_cases(tmp_path, seed):
    from dataclasses import replace as replaced

    run_ids, _ = write_arms(tmp_path, seed)
    typed = [read_run(tmp_path / "runs" / run_id) for run_id in run_ids]
    plain = [replaced(run, cases=[dict(case.raw) for case in run.cases]) for run in typed]
    a, b = runs_item_matrix(typed, shared=False), runs_item_matrix(plain, shared=False)
    assert (a.item_ids, a.item_shas, a.repeat_ids) == (b.item_ids, b.item_shas, b.repeat_ids)
    for name in (*FIELDS, "recorded"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize(("ids", "numbered"), [
    ([f"i{i:07d}" for i in random.Random(0).sample(range(10**6), 2_000)], True),  # one text, numbers of one width
    ([f"{i:04d}" for i in random.Random(1).sample(range(10**4), 300)], True),
    ([f"q{i}" for i in random.Random(2).sample(range(1_000), 500)], True),  # numbers of several widths
    (["q1", "q10", "q2"], True), (["q01", "q1", "q001"], True), (["q10", "q09", "q9"], True),
    (["a1b01", "a1b02", "a1b00"], False), (["q٣", "q1"], False), (["q01", "r02"], False), (["q01", "q0a"], False),
    (["q1", "q"], False), (["q1", "q²"], False), (["x"], False), ([], False),
    (["q2", "q" + "1" * 64], True), (["q2", "q" + "1" * 65], False),  # no key wider than PADDED_DIGITS
])
def test_natural_order_of_numbered_ids_is_the_item_order(ids, numbered):
    """Ids of one text and a number each are sorted by their numbers; the order is item_order's."""
    expected = sorted(range(len(ids)), key=lambda code: item_order(ids[code]))
    assert item_natural_order(ids).tolist() == expected
    keys = _numbered_keys(tuple(ids))
    assert (keys is not None) == numbered
    assert keys is None or sorted(range(len(ids)), key=keys.__getitem__) == expected


_ID_TEXTS = st.sampled_from(["q", "item-", "", "q1x", "٣", "x²", "Q"])
_ID_NUMBERS = st.one_of(st.integers(0, 10**20).map(str),
                        st.tuples(st.sampled_from(["", "0", "00"]), st.integers(0, 999).map(str)).map("".join))


@settings(max_examples=100)
@given(st.lists(st.tuples(_ID_TEXTS, st.one_of(_ID_NUMBERS, st.sampled_from(["", "٣", "1a", "²"]))).map("".join),
                max_size=30),
       st.lists(_ID_NUMBERS.map("q".__add__), max_size=30))
def test_natural_order_is_the_item_order_of_any_ids(mixed, numbered):
    """Over generated ids, of the one-text-and-a-number shape or not: item_order's stable order."""
    for ids in (mixed, numbered):
        assert item_natural_order(ids).tolist() == sorted(range(len(ids)), key=lambda code: item_order(ids[code]))


_LONG_RUNS = st.tuples(st.sampled_from(["", "0", "000"]), st.integers(4290, 4310), st.sampled_from("123456789"),
                      st.sampled_from(["", "5", "٣"])).map(lambda t: t[0] + t[2] * t[1] + t[3])


@settings(max_examples=60)
@given(st.lists(st.one_of(_LONG_RUNS, st.integers(0, 10**6).map(str), st.just("0" * 4400 + "7")), min_size=1, max_size=8))
def test_digit_runs_longer_than_int_reads_order_as_numbers(numbers):
    """A digit run of more than int()'s 4,300 digits (leading zeros, another script's digits) is
    still a number in the natural order: ids sort as their numbers do, read with no limit."""
    ids = [f"q{number}x" for number in numbers]
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        values = [int(number) for number in numbers]
    finally:
        sys.set_int_max_str_digits(limit)
    assert item_natural_order(ids).tolist() == sorted(range(len(ids)), key=values.__getitem__)
    for n in range(len(ids) - 1):  # equal keys exactly where the numbers are equal
        assert (item_order(ids[n]) == item_order(ids[n + 1])) == (values[n] == values[n + 1])


@settings(max_examples=100)
@given(st.lists(st.tuples(st.one_of(_ID_NUMBERS.map("q".__add__), st.sampled_from(["q01", "q1", "q001", "x", "q1x"])),
                          st.integers(0, 3)), max_size=40))
def test_cases_in_natural_order_are_sorted_by_case_order(cases):
    """Cases of ids with equal keys ("q01", "q1") interleave by repeat, then in the order read, as
    ``sorted(records, key=case_order)`` puts them: ids of one key share a rank."""
    records = [{"item_id": item_id, "repeat": repeat, "n": n} for n, (item_id, repeat) in enumerate(cases)]
    columns = case_columns(records)
    assert [records[row]["n"] for row in natural_order(columns).tolist()] == \
        [record["n"] for record in sorted(records, key=case_order)]


@pytest.mark.parametrize("chunks", ["equal", "one differs", "one shorter", "one"])
def test_codes_of_repeated_chunks_are_the_codes_of_the_whole_column(chunks):
    """The item ids of several runs' kept cells come as equal chunks, encoded once: the codes and
    values (order of first appearance, nulls kept) are those of encoding every value."""
    rng = random.Random(4)
    first = [None if rng.random() < 0.1 else f"q{rng.randrange(50)}" for _ in range(200)]
    other = {"equal": first, "one differs": [*first[:-1], "new"], "one shorter": first[:-1], "one": None}[chunks]
    column = pa.chunked_array([first] if other is None else [first, first, other, first], pa.string())
    assert dictionary_codes(column).equals(pc.dictionary_encode(column).combine_chunks())


@pytest.mark.parametrize("values", [[0] * 7, [3] * 7, [0, 1, 0, 2, 2, 1, 0], [5, 0, 5, 1, 1, 0, 0]])
def test_the_rank_within_a_group_is_the_rank_among_its_distinct_values(values):
    groups = [0, 0, 1, 1, 1, 2, 2]
    expected = [sorted({v for v, g in zip(values, groups) if g == group}).index(value) for value, group in zip(values, groups)]
    assert _dense_rank_within(np.array(groups), np.array(values)).tolist() == expected
