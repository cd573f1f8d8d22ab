"""Fuzzing a run's numbers (bounded hypothesis runs, issue 32's acceptance): case lines whose cost,
latency, tokens and scores are huge, negative, non-finite or integers of thousands of digits,
summed across many cases. Whatever the lines hold, the Python reader, the columnar scan and the
DuckDB views keep the same lines, every summary is finite or unknown (never a traceback, never
Infinity), and what the writer writes from them reads back whole."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsite.analysis.case_scan import scan_cases
from evalsite.analysis.db import open_database
from evalsite.analysis.summary import summarise_run
from evalsite.runlog.records import CASE_RANGES, SCORE_RANGES
from evalsite.runlog.store import CASES_FILE, RunWriter, read_cases, read_run

#: Every example's folder, removed when the test process ends (hypothesis runs examples without pytest's tmp_path).
FOLDERS = tempfile.TemporaryDirectory(prefix="fuzz-numbers-")
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Numbers as JSON text: at and past every range's edges, non-finite, and integers too long for Python.
NUMBERS = st.sampled_from([
    "0", "1", "-1", "0.5", "12.0", "1e6", "1000000.0001", "2592000000", "2592000001", "1000000000", "1000000001",
    "1e12", "-1e12", "1.000001e12", "1e300", "-1e300", "1.7e308", "-1.7e308", "1e400", "NaN", "Infinity", "-Infinity",
    "18446744073709551615", "9" * 4300, "9" * 4301, "-" + "9" * 5000, "1." + "9" * 5000, "null", "true", '"3"',
]) | st.integers(-10**20, 10**20).map(str) | st.floats(allow_nan=False, allow_infinity=False).map(repr)
CASE_NUMBERS = st.fixed_dictionaries({}, optional={name: NUMBERS for name in CASE_RANGES})
SCORE_NUMBERS = st.fixed_dictionaries({}, optional={name: NUMBERS for name in SCORE_RANGES})
LINES = st.lists(st.tuples(CASE_NUMBERS, st.lists(SCORE_NUMBERS, max_size=2), st.sampled_from(["", "9" * 4400])),
                 min_size=1, max_size=25)


def raw_object(fields: dict[str, str], start: str) -> str:
    return "{" + ", ".join([start, *(f'"{name}": {text}' for name, text in fields.items())]) + "}"


def case_line(index: int, numbers: dict[str, str], scores: list[dict[str, str]], output: str) -> str:
    listed = ", ".join(raw_object(score, f'"evaluator": "e{n}"') for n, score in enumerate(scores))
    extra = f', "output": [{output}]' if output else ""
    return raw_object(numbers, f'"item_id": "q{index % 7}", "repeat": {index // 7}, "scores": [{listed}]{extra}')


def summary_text(cases) -> str:
    return json.dumps(summarise_run(cases).to_json(), sort_keys=True, default=str)


def finite_or_none(value) -> bool:
    return value is None or not isinstance(value, float) or math.isfinite(value)


@FUZZ
@given(lines=LINES)
def test_huge_and_many_digit_numbers_summed_across_cases_read_the_same_everywhere(lines):
    folder = Path(tempfile.mkdtemp(dir=FOLDERS.name)) / "runs" / "r"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"format_version": 1, "run_id": "r", "arm_id": "a"}))
    (folder / CASES_FILE).write_text("".join(case_line(n, *line) + "\n" for n, line in enumerate(lines)))
    warnings: list[str] = []
    python = read_cases(folder / CASES_FILE, warnings)
    assert len(python) + len(warnings) == len(lines)
    summary = summarise_run(python)
    totals = summary.to_json()
    assert all(finite_or_none(value) for value in totals.values()), totals
    assert summary_text(scan_cases(folder).columns) == summary_text(python)
    database = open_database(folder.parent)
    assert database.rows("SELECT count(*) AS n FROM cases") == [{"n": len(python)}]

    writer = RunWriter.create(folder.parent.parent / "written", "a", {"format_version": 1, "run_id": "w", "arm_id": "a"})
    for case in python:
        writer.append_case(dict(case.raw))
    writer.finish({"status": "completed"})
    text = (writer.directory / CASES_FILE).read_text()
    assert "Infinity" not in text and "NaN" not in text
    again = read_run(writer.directory)
    assert len(again.cases) == len(python) and not again.warnings
    assert summary_text(again.cases) == summary_text(scan_cases(writer.directory).columns)
