"""The DuckDB reading of a run's cases (analysis.case_scan) equals the one Python reader: the same
run summary and the same case records, for lines evalsite writes and for hand-edited ones (wrong
types, lines that are not cases, blank and torn lines), which fall back to the Python reader."""

from __future__ import annotations

import hashlib
import json
import math
import random
from pathlib import Path

import pytest
from case_lines_support import good_case, summary_text, write_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsite.analysis.case_columns import case_columns, joined
from evalsite.analysis.case_scan import scan_cases
from evalsite.analysis.summary import summarise_run
from evalsite.runlog.store import CASES_FILE, CASES_SHA256, END_FILE, read_cases


def assert_same_reading(folder: Path) -> None:
    scanned = scan_cases(folder)
    python = read_cases(folder / CASES_FILE)
    assert summary_text(scanned.columns) == summary_text(python)
    items = {str(case["item_id"]) for case in python}
    records = scanned.records_of(items)
    by_item: dict[str, list] = {}
    for case in python:
        by_item.setdefault(case.item_id, []).append(case.raw)
    assert json.dumps(records, sort_keys=True) == json.dumps(by_item, sort_keys=True)


@pytest.mark.parametrize("seed", range(8))
def test_lines_evalsite_writes_read_the_same_through_duckdb(tmp_path, seed):
    rng = random.Random(seed)
    drawn = [good_case(rng, rng.randint(0, 30)) for _ in range(rng.randint(1, 80))]
    cases = list({(case["item_id"], case["repeat"]): case for case in drawn}.values())  # evalsite writes a key once
    folder = write_lines(tmp_path / "run", [json.dumps(case) for case in cases])
    scanned = scan_cases(folder)
    assert scanned._cases is None  # the DuckDB path, not the fallback
    assert_same_reading(folder)



def vouched(folder: Path) -> Path:
    """A footer recording the cases file's sha256, as the writer records it."""
    digest = hashlib.sha256((folder / CASES_FILE).read_bytes()).hexdigest()
    (folder / END_FILE).write_text(json.dumps({"status": "completed", CASES_SHA256: digest}))
    return folder


@pytest.mark.parametrize("seed", range(4))
def test_a_file_its_footer_vouches_for_is_read_as_typed_fields_and_its_lines_only_when_asked(tmp_path, seed):
    rng = random.Random(seed)
    drawn = [good_case(rng, rng.randint(0, 30)) for _ in range(rng.randint(1, 80))]
    cases = list({(case["item_id"], case["repeat"]): case for case in drawn}.values())
    folder = vouched(write_lines(tmp_path / "run", [json.dumps(case) for case in cases]))
    scanned = scan_cases(folder)
    assert scanned._cases is None and scanned._lines == [] and scanned._lines_of == folder / CASES_FILE
    assert_same_reading(folder)
    assert scanned.records_of({cases[0]["item_id"]}) and len(scanned._lines) == len(cases)


def test_a_vouched_file_duckdb_reads_otherwise_than_line_by_line_falls_back_to_the_python_reader(tmp_path):
    rng = random.Random(3)
    lines = [json.dumps(good_case(rng, item)) for item in range(6)]
    folder = vouched(write_lines(tmp_path / "run", [*lines[:3], "", *lines[3:]]))  # a blank line: not a case
    assert scan_cases(folder)._cases is not None
    assert_same_reading(folder)

def assert_in_file_order(folder: Path) -> None:
    scanned = scan_cases(folder, texts=True)
    python = read_cases(folder / CASES_FILE)
    assert scanned._cases is None  # read by DuckDB
    columns = scanned.columns
    assert [columns.item_ids[code] for code in columns.item] == [case.item_id for case in python]
    assert scanned.texts is not None and scanned.texts.output == [case.get("output") for case in python]
    assert_same_reading(folder)


@pytest.mark.parametrize("footer", [False, True])
def test_a_file_of_several_duckdb_blocks_reads_in_the_order_of_its_lines(tmp_path, footer):
    # ~44 MB: DuckDB parses its 32 MiB blocks on several threads
    rng = random.Random(5)
    cases = [{**good_case(rng, item), "repeat": 0, "output": f"{item}:" + "x" * rng.randint(10_000, 25_000)}
             for item in range(2500)]
    folder = write_lines(tmp_path / "run", [json.dumps(case) for case in cases])
    assert (folder / CASES_FILE).stat().st_size > 34_000_000
    assert_in_file_order(vouched(folder) if footer else folder)


@pytest.mark.parametrize("footer", [False, True])
def test_a_line_too_long_for_duckdbs_own_bound_is_read_under_the_larger_one(tmp_path, footer):
    rng = random.Random(6)
    cases = [{**good_case(rng, item), "repeat": 0, "output": f"answer {item}"} for item in range(5)]
    cases[2]["output"] = "y" * 40_000_000  # past DuckDB's 16 MiB bound (and its 32 MiB block)
    folder = write_lines(tmp_path / "run", [json.dumps(case) for case in cases])
    assert_in_file_order(vouched(folder) if footer else folder)


#: Values no well-formed case holds in these fields, each a line Case.from_json checks or refuses.
ODD_VALUES = st.sampled_from([
    ("score", True), ("score", "high"), ("passed", 1), ("passed", "yes"), ("repeat", -1), ("repeat", 1.5),
    ("repeat", True), ("item_id", 7), ("latency_ms", False), ("input_tokens", 3.7), ("critical", "yes"),
    ("scores", "none"), ("scores", [1, 2]), ("scores", [{"score": 1.0}]), ("scores", [{"evaluator": "e", "turn": "t"}]),
    ("error", {"type": "TimeoutError", "message": "timed out"}), ("served_model", 5), ("repeat", 2**70),
])
ODD_LINES = st.sampled_from(["[1, 2]", "7", "not json", '{"item_id": "a", "repeat": 0}{"item_id": "b", "repeat": 0}',
                             "   ", '{"item_id": "torn", "rep'])


def hand_edited_run(folder: Path, seed: int, odd_values: list, odd_lines: list) -> Path:
    """Twelve well-formed cases, some fields set to odd values, odd lines put in between."""
    rng = random.Random(seed)
    cases = [good_case(rng, item) for item in range(12)]
    for key, value in odd_values:
        cases[rng.randrange(len(cases))][key] = value
    lines = [json.dumps(case) for case in cases]
    for line in odd_lines:
        lines.insert(rng.randrange(len(lines) + 1), line)
    return write_lines(folder, lines)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.lists(ODD_VALUES, max_size=3), st.lists(ODD_LINES, max_size=2))
def test_hand_edited_lines_read_as_the_python_reader_reads_them(tmp_path_factory, seed, odd_values, odd_lines):
    assert_same_reading(hand_edited_run(tmp_path_factory.mktemp("run"), seed, odd_values, odd_lines))


def test_a_run_without_cases_reads_as_empty(tmp_path):
    (tmp_path / "run").mkdir()
    assert scan_cases(tmp_path / "run").columns.size == 0
    assert summary_text(scan_cases(tmp_path / "run").columns) == summary_text([])


def test_joined_columns_summarise_as_the_cases_of_both(tmp_path):
    rng = random.Random(3)
    first = [good_case(rng, item) for item in range(20)]
    second = [good_case(rng, item) for item in range(15, 30)]
    both = summarise_run(joined(case_columns(first), case_columns(second)))
    assert json.dumps(both.to_json(), sort_keys=True) == summary_text(first + second)
    assert math.isclose(both.cases, 35)


def view_rows(folder: Path) -> list[tuple]:
    import duckdb

    from evalsite.analysis.parquet import json_source

    query = f"SELECT item_id, repeat, score, passed, error, len(coalesce(scores, [])), critical FROM ({json_source([str(folder / CASES_FILE)])})"
    return duckdb.connect().sql(query).fetchall()


def reader_rows(folder: Path) -> list[tuple]:
    return [(c.item_id, c.repeat, c.score, c.passed, c.error, len(c.scores), c.critical) for c in read_cases(folder / CASES_FILE)]


def same_rows(a: list[tuple], b: list[tuple]) -> bool:
    """Equal row by row, NaN equal to NaN."""
    def key(row: tuple) -> str:
        return json.dumps(row, default=str)
    return [key(r) for r in a] == [key(r) for r in b]


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.lists(ODD_VALUES, max_size=3), st.lists(ODD_LINES, max_size=2))
def test_the_duckdb_views_hold_exactly_the_cases_the_python_reader_reads(tmp_path_factory, seed, odd_values, odd_lines):
    """`leaderboard` and `query` read the views, `show` the Python reader: a hand-edited line is a
    case for both or for neither, with the same values (a bool is never a number there either)."""
    folder = hand_edited_run(tmp_path_factory.mktemp("run"), seed, odd_values, odd_lines)
    assert same_rows(view_rows(folder), reader_rows(folder))
