"""A plain JSON Lines file read by two processes (shared_reading: most runs of lines decoded and
mapped by a second one) imports as one process imports it: the same runs byte for byte, the same
warnings, or the same one-line error naming the same first culprit (its line) in file order."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from import_support import PLAIN, import_outcome, second_process_dies, two_processes

from evalsite.execute.importers import ImportOptions, jsonstream, plain, shared_reading

COPIES = 12


def _rows() -> list[dict[str, Any]]:
    """The fixture's rows ``COPIES`` times (new ids), with every field the format reads somewhere,
    and fields it ignores first appearing far into the file (in a run the second process maps)."""
    base = [json.loads(line) for line in (PLAIN / "scored.jsonl").read_text().splitlines() if line.strip()]
    rows = []
    for n in range(COPIES):
        for index, row in enumerate(base):
            row = {**row, "id": f"{row['id']}-{n}"}
            if index % 5 == 1:
                row.update(latency_ms=12, input_tokens=30, output_tokens=7, cost_usd=0.0001, finish_reason="stop",
                           started_at="2024-01-01T00:00:00Z", error=None, passed=index % 2 == 0)
            if index % 7 == 2:
                row["scores"] = {"judge": {"score": "yes", "label": "good", "detail": "d", "passed": "true"}}
            if n == COPIES - 2 and index == 3:
                row["extra_field"] = {"x": [1, 2.5]}
            rows.append(row)
    return rows


def _text(rows: list[dict[str, Any]], newline: str = "\n") -> str:
    return "".join(json.dumps(row) + newline for row in rows)


@pytest.fixture
def mapped_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Two processes for any file, runs of a few lines; the count of rows the second one mapped."""
    return two_processes(monkeypatch, 1_500)


def _both(tmp_path: Path, text: str | bytes, monkeypatch: pytest.MonkeyPatch,
          options: ImportOptions = ImportOptions(again=True)) -> tuple[object, object]:
    source = tmp_path / "scored.jsonl"
    source.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    shared = import_outcome(tmp_path / "shared", "jsonl", source, options)
    with monkeypatch.context() as patch:
        patch.setattr(shared_reading, "MIN_BYTES", 1 << 62)
        alone = import_outcome(tmp_path / "alone", "jsonl", source, options)
    return shared, alone


@pytest.mark.parametrize("layout", ["plain", "crlf", "bom", "blank lines", "lines blank only as text",
                                    "no last line break"])
def test_two_processes_import_what_one_imports(
    tmp_path: Path, mapped_rows: list[int], monkeypatch: pytest.MonkeyPatch, layout: str
):
    rows = _rows()
    text = _text(rows, "\r\n" if layout == "crlf" else "\n")
    if layout == "bom":
        text = "\ufeff" + text
    elif layout == "blank lines":
        lines = text.splitlines(keepends=True)
        text = "".join(line + ("\n  \n" if n % 9 == 4 else "") for n, line in enumerate(lines)) + "\n" * 3000
    elif layout == "lines blank only as text":  # str.strip() removes these; bytes.strip() and JSON do not
        lines = text.splitlines(keepends=True)
        text = "".join(line + (" \u00a0\x1c\n" if n % 9 == 4 else "") for n, line in enumerate(lines))
    elif layout == "no last line break":
        text = text.rstrip("\n")
    shared, alone = _both(tmp_path, text, monkeypatch)
    assert shared == alone and isinstance(shared, tuple)
    assert any("extra_field" in warning for warning in shared[1])
    if layout == "lines blank only as text":  # a run holding one is read here, line by line
        assert 0 < len(mapped_rows) < len(rows) / 2
    else:
        assert len(rows) / 2 < len(mapped_rows) < len(rows)  # most, not all, by the second process


def test_arms_from_a_field_and_a_scorer_file_too(tmp_path: Path, mapped_rows: list[int], monkeypatch: pytest.MonkeyPatch):
    rows = [{**row, "meta": {"system": row.get("arm")}} for row in _rows()]
    options = ImportOptions(again=True, arm_from="meta.system", scorer_file="score.py", scorer_sha256="ab" * 32)
    shared, alone = _both(tmp_path, _text(rows), monkeypatch, options)
    assert shared == alone and isinstance(shared, tuple) and mapped_rows


@pytest.mark.parametrize("duplicate", [False, True])
def test_explicit_repeats_through_the_second_process(
    tmp_path: Path, mapped_rows: list[int], monkeypatch: pytest.MonkeyPatch, duplicate: bool
):
    """Rows with their own repeats, mixed with rows numbered by arrival, imported by two processes
    as by one; a repeat recorded twice (in a run the second process maps: every run but the first)
    is the same error."""
    monkeypatch.setattr(plain, "MAIN_SHARE", Fraction(1, 1 << 30))
    rows = _rows()
    rows += [{**row, "repeat": 1 + n % 2} for n, row in enumerate(rows)]
    if duplicate:
        rows.insert(len(rows) - 100, {**rows[-50], "output": "again"})
    shared, alone = _both(tmp_path, _text(rows), monkeypatch)
    assert shared == alone and mapped_rows
    if duplicate:
        assert isinstance(shared, str) and f"repeat {rows[-50]['repeat']} is recorded twice" in shared
    else:
        assert isinstance(shared, tuple)
        assert {json.loads(line)["repeat"] for files in shared[0].values()
                for line in files["cases.jsonl"].splitlines()} == {0, 1, 2}


@pytest.mark.parametrize("sent", [0, 3])
def test_a_second_process_killed_midway_leaves_the_rest_to_this_one(
    tmp_path: Path, mapped_rows: list[int], monkeypatch: pytest.MonkeyPatch, sent: int
):
    second_process_dies(monkeypatch, sent)
    shared, alone = _both(tmp_path, _text(_rows()), monkeypatch)
    assert shared == alone and isinstance(shared, tuple)


def _edited(line: str, edit: str) -> str:
    row = json.loads(line)
    if edit == "bad json":
        return line[:-3] + "\n"
    if edit == "not an object":
        return "[1, 2]\n"
    if edit == "no item":
        return json.dumps({"output": "x"}) + "\n"
    if edit == "bad latency":
        return json.dumps({**row, "latency_ms": "slow"}) + "\n"
    if edit == "huge cost":
        return json.dumps({**row, "cost_usd": 1e300}) + "\n"
    if edit == "two inputs":
        return json.dumps({**row, "id": "item-00-0", "input": "another"}) + "\n"
    raise AssertionError(edit)


@pytest.mark.parametrize(
    "edits",
    [
        [(40, "bad json")],
        [(41, "bad latency"), (90, "not an object")],
        [(2, "huge cost"), (70, "bad json")],
        [(95, "no item"), (30, "bad latency")],
        [(200, "two inputs")],
        [(0, "not an object")],
        [(len(_rows()) - 1, "bad json")],
    ],
)
def test_the_first_bad_row_in_file_order_is_the_error(
    tmp_path: Path, mapped_rows: list[int], monkeypatch: pytest.MonkeyPatch, edits: list[tuple[int, str]]
):
    lines = _text(_rows()).splitlines(keepends=True)
    for index, edit in edits:
        lines[index] = _edited(lines[index], edit)
    shared, alone = _both(tmp_path, "".join(lines), monkeypatch)
    assert isinstance(shared, str) and shared == alone
    if edits[0][1] != "two inputs":
        assert f"line {min(index for index, _ in edits) + 1}:" in shared


@pytest.mark.parametrize("edit", ["nan", "long integer", "surrogate", "torn last line", "1e400", "duplicate key"])
def test_lines_the_runs_cannot_take_read_as_one_process_reads_them(
    tmp_path: Path, mapped_rows: list[int], monkeypatch: pytest.MonkeyPatch, edit: str
):
    lines = _text(_rows()).splitlines(keepends=True)
    middle = len(lines) // 2
    if edit == "nan":
        lines[middle] = lines[middle].replace('"output": ', '"output": NaN, "o": ', 1)
    elif edit == "long integer":
        lines[middle] = lines[middle].replace('"output": ', '"output": 123456789012345678901234567890, "o": ', 1)
    elif edit == "1e400":
        lines[middle] = lines[middle].replace('"output": ', '"output": [1e400], "o": ', 1)
    elif edit == "surrogate":
        lines[middle] = lines[middle].replace('"output": ', '"output": "\\ud800", "o": ', 1)
    elif edit == "duplicate key":
        lines[middle] = lines[middle].replace('"output": ', '"output": "first", "output": ', 1)
    elif edit == "torn last line":
        lines[-1] = lines[-1][:25]
    shared, alone = _both(tmp_path, "".join(lines), monkeypatch)
    assert shared == alone
    if edit == "torn last line":
        assert isinstance(shared, tuple) and any("cut short" in warning for warning in shared[1])


@pytest.mark.parametrize("where", ["alone", "after a bad row", "a cut character at the end"])
def test_a_file_not_utf8_fails_as_one_process_fails(
    tmp_path: Path, mapped_rows: list[int], monkeypatch: pytest.MonkeyPatch, where: str
):
    """Read in runs, a bad byte would fail before the rows of its run ahead of it; the file is read
    line by line instead, so a bad row some way before it (in an earlier chunk of the file, the
    same run) is still the error, as always."""
    monkeypatch.setattr(jsonstream, "RUN_CHARS", 1 << 16)
    lines = _text(_rows()).encode("utf-8").splitlines(keepends=True)
    middle = len(lines) // 2
    if where == "a cut character at the end":
        data = b"".join(lines) + "\u00e9".encode("utf-8")[:1]
    else:
        lines[middle] = lines[middle].replace(b'"output": "', b'"output": "\xff', 1)
        if where == "after a bad row":
            lines[middle - 60] = _edited(lines[middle - 60].decode("utf-8"), "bad latency").encode("utf-8")
        data = b"".join(lines)
    shared, alone = _both(tmp_path, data, monkeypatch)
    assert isinstance(shared, str) and shared == alone
    assert ("line" in shared) == (where == "after a bad row")


@pytest.mark.parametrize("share", [Fraction(1, 3), Fraction(2, 5), Fraction(3, 8), Fraction(1, 1)])
def test_the_main_process_takes_its_share_of_the_runs_spread_out(share: Fraction):
    """numerator runs in each denominator, and never two in a row unless the share is above one half."""
    taken = [shared_reading.main_takes(number, share) for number in range(share.denominator * 7)]
    assert sum(taken) == share.numerator * 7 and taken[0]
    for start in range(0, len(taken), share.denominator):
        assert sum(taken[start:start + share.denominator]) == share.numerator
    if share <= Fraction(1, 2):
        assert not any(first and second for first, second in zip(taken, taken[1:]))
