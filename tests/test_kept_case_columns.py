"""What the site keeps of a run it has read stands in for reading the run again: its case columns
come back from plain arrays as they were, and an item matrix given some runs' kept cells equals the
one DuckDB reads from every run's file (random runs, written by the runner's writer — their lines
read as written — or by hand, with unequal repeats, missing values, one-sided items and an
edited row)."""

from __future__ import annotations

import random
from dataclasses import fields

import numpy as np
import pytest

from evalsite.analysis.case_columns import ScoreColumns, case_columns, columns_arrays, columns_of_arrays
from evalsite.analysis.case_scan import ScannedCases, cases_in_hand
from evalsite.analysis.db import open_database
from evalsite.analysis.items import case_cells, item_matrix
from evalsite.analysis.selection import runs_by_reference
from evalsite.runlog.records import Case
from evalsite.runlog.store import CASES_FILE, RunWriter, read_cases


def random_case(rng: random.Random, item: int, repeat: int) -> dict:
    score = rng.choice([0.0, 0.5, 1.0, None, 3])
    case = {
        "item_id": f"q{item}", "item_sha": rng.choice([f"s{item}", f"s{item}", ""]),
        "repeat": repeat, "input": "in", "expected": rng.choice([str(item), {"b": [1], "a": "é"}, None]),
        "output": "x", "error": rng.choice([None, None, "HTTP 500"]), "latency_ms": rng.choice([12.5, 3, None]),
        "input_tokens": rng.choice([10, None]), "output_tokens": rng.choice([5, None]), "cost_usd": rng.choice([0.001, 0, None]),
        "score": score, "passed": None if score is None else rng.choice([True, False, None]),
        "critical": rng.choice([True, False]), "served_model": rng.choice(["m", None]),
        "scores": [] if score is None else [{"evaluator": "exact", "version": "1", "score": score, "passed": score >= 0.5,
                                             "label": rng.choice([None, "good"]), "turn": rng.choice([None, 1]), "skipped": False}],
    }
    if rng.random() < 0.2:
        del case["expected"]
    return case


def write_runs(root, seed: int) -> list[str]:
    rng = random.Random(seed)
    header = {"experiment": "e", "dataset": {"path": "d.jsonl", "dataset_id": "d@0"}, "fingerprint_hash": "fp",
              "fingerprint": {"dataset": {"dataset_id": "d@0"}}}
    run_ids = []
    for arm in ("a", "b", "c"):
        writer = RunWriter.create(root / "runs", arm, dict(header, arm_id=arm, config_id=f"cfg-{arm}",
                                                             config={"arm_id": arm}))
        repeats = rng.randint(1, 3)
        for item in range(12):
            if rng.random() < 0.15 and item != 7:
                continue  # this arm lacks the item
            for repeat in range(repeats):
                case = random_case(rng, item, repeat)
                if item == 7:  # a row edited between the runs of arm a and the others
                    case.update(item_sha=f"s7-{arm == 'a'}", score=1.0, passed=True)
                writer.append_case(case)
        writer.finish({"status": "completed"})
        run_ids.append(writer.run_id)
    if seed % 2:  # a hand edit: the file no longer has the hash its footer records, so DuckDB checks every line
        path = root / "runs" / run_ids[0] / CASES_FILE
        path.write_text(path.read_text() + "\n")
    return run_ids


def assert_same_columns(first, second) -> None:
    for item in fields(first):
        a, b = getattr(first, item.name), getattr(second, item.name)
        if isinstance(a, ScoreColumns):
            assert_same_columns(a, b)
        elif isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape, item.name
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), item.name
        else:
            assert a == b, item.name


@pytest.mark.parametrize("seed", range(6))
def test_case_columns_come_back_from_their_arrays(tmp_path, seed):
    for run_id in write_runs(tmp_path, seed):
        cases = read_cases(tmp_path / "runs" / run_id / CASES_FILE)
        for columns in (case_columns(cases), cases_in_hand(cases).columns):  # with and without expected values
            arrays = columns_arrays(columns)
            assert all(array.dtype != object for array in arrays.values())  # nothing a cache would pickle
            assert_same_columns(columns_of_arrays(arrays), columns)


def test_no_cases_come_back_as_no_cases():
    columns = cases_in_hand([]).columns
    assert_same_columns(columns_of_arrays(columns_arrays(columns)), columns)


@pytest.mark.parametrize("seed", range(8))
def test_an_item_matrix_of_kept_cells_equals_the_one_read_from_the_files(tmp_path, seed):
    run_ids = write_runs(tmp_path, seed)
    arms = runs_by_reference(tmp_path / "runs", run_ids)
    read = item_matrix(open_database(tmp_path / "runs"), arms)
    cells = {run_id: case_cells(run_id, case_columns(read_cases(tmp_path / "runs" / run_id / CASES_FILE)))
             for run_id in run_ids}
    for kept in ({run_ids[0]: cells[run_ids[0]]}, {run_ids[1]: cells[run_ids[1]], run_ids[2]: cells[run_ids[2]]}, cells):
        matrix = item_matrix(open_database(tmp_path / "runs", case_views=False), arms, kept=kept)
        assert (matrix.item_ids, matrix.item_shas, matrix.dropped, matrix.repeat_ids) == \
            (read.item_ids, read.item_shas, read.dropped, read.repeat_ids)
        for name in ("score", "passed", "cost_usd", "latency_ms", "tokens", "recorded"):
            assert np.array_equal(getattr(matrix, name), getattr(read, name), equal_nan=name != "recorded"), name
    assert any(d.reason.startswith("the row differs") for d in read.dropped)  # the edited row is dropped either way


def test_case_records_are_read_again_only_when_asked_for(tmp_path):
    (run_id, *_) = write_runs(tmp_path, 0)
    path = tmp_path / "runs" / run_id / CASES_FILE
    cases = read_cases(path)
    kept = ScannedCases.kept(columns_of_arrays(columns_arrays(cases_in_hand(cases).columns)), path)
    assert kept.records_of(set()) == {}
    assert kept.records_of({"q1"}) == {"q1": [case.raw for case in cases if case.item_id == "q1"]}
    assert isinstance(cases[0], Case)
