"""promptfoo results decoded into only the fields the reader uses (promptfoo_fields) import as whole
results do: the same runs byte for byte, or the same error. Each hostile result below is one that
decoder must leave to orjson and ``json`` (or read the way they do); every test compares the
import with one whose results are decoded whole, by one process and by two."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from import_support import PROMPTFOO, import_outcome, two_processes

from evalsite.execute.importers import promptfoo
from evalsite.execute.importers.promptfoo_fields import _may_hold_too_long_integer
from evalsite.execute.importers.source_records import ImportOptions
from evalsite.runlog.jsonread import orjson_value


@pytest.fixture(params=["one process", "two processes"])
def processes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "two processes":
        two_processes(monkeypatch, 12_000)  # runs of ~3 results
    return str(request.param)


def _document() -> dict[str, Any]:
    return json.loads((PROMPTFOO / "results.json").read_text())


def _write(tmp_path: Path, document: dict[str, Any] | str) -> Path:
    path = tmp_path / "results.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document, indent=2), encoding="utf-8")
    return path


def _imports(tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch,
             options: ImportOptions | None = None) -> tuple[Any, Any]:
    """The import of ``source`` as it is, and with its results decoded whole."""
    fields = import_outcome(tmp_path / "fields", "promptfoo", source, options)
    with monkeypatch.context() as patch:
        patch.setattr(promptfoo, "used_fields", orjson_value)
        whole = import_outcome(tmp_path / "whole", "promptfoo", source, options)
    return fields, whole


def _case_of(outcome: Any, result: dict[str, Any]) -> dict[str, Any]:
    """The case imported from ``result``."""
    runs, _ = outcome
    cases = map(json.loads, runs[result["provider"]["label"]]["cases.jsonl"].splitlines())
    return next(case for case in cases if case["item_id"] == result["vars"]["id"])


def test_a_grading_result_holding_no_kept_key_still_hides_the_results_error(tmp_path, monkeypatch, processes):
    document = _document()
    result = document["results"]["results"][0]
    result["gradingResult"] = {"namedScores": {"exact": 1}}  # not empty, though no key the reader uses
    result.pop("failureReason")
    fields, whole = _imports(tmp_path, _write(tmp_path, document), monkeypatch)
    assert fields == whole
    assert _case_of(fields, result)["error"] is None  # an assertion's failure, not the case's error


def test_a_response_token_usage_holding_no_kept_key_is_still_the_one_read(tmp_path, monkeypatch, processes):
    document = _document()
    result = document["results"]["results"][0]
    result["response"]["tokenUsage"] = {"numRequests": 1}  # not empty: the result's own usage is not read
    fields, whole = _imports(tmp_path, _write(tmp_path, document), monkeypatch)
    assert fields == whole
    assert _case_of(fields, result)["input_tokens"] is None


def _unread_field_holding(tmp_path: Path, value: str) -> Path:
    """The fixture with ``value`` (JSON text) in its first result's metadata, a field no reader uses."""
    text = _write(tmp_path, _document()).read_text()
    return _write(tmp_path, text.replace('"_promptfooFileMetadata": {}', f'"_promptfooFileMetadata": {value}', 1))


def test_an_integer_past_4300_digits_in_an_unread_field_is_refused_as_before(tmp_path, monkeypatch, processes):
    fields, whole = _imports(tmp_path, _unread_field_holding(tmp_path, "9" * 4400), monkeypatch)
    assert fields == whole
    assert isinstance(fields, str) and "results.results" not in fields
    assert fields.endswith("invalid JSON: an integer of more than 4300 digits")


def test_nesting_past_python_s_limit_in_an_unread_field_is_read_as_before(tmp_path, monkeypatch, processes):
    deep = "[" * 1010 + "]" * 1010  # refused by msgspec (Python's limit), read by orjson (1,024)
    fields, whole = _imports(tmp_path, _unread_field_holding(tmp_path, deep), monkeypatch)
    assert fields == whole
    assert not isinstance(fields, str)


HOSTILE_RESULTS = {
    "a NaN score": lambda text: text.replace('"score": 0.25', '"score": NaN', 1),
    "a lone surrogate in the output": lambda text: text.replace('"output": "ANSWER', '"output": "\\ud800ANSWER', 1),
    "a 25-digit integer in the tokens": lambda text: text.replace('"prompt": 7,', '"prompt": 1234567890123456789012345,', 1),
    "1e400 in a kept field": lambda text: text.replace('"latencyMs": 33', '"latencyMs": 1e400', 1),
    "a response that is not an object": lambda text: text.replace('"response": {', '"response": "x", "unread": {', 1),
    "a result that is not an object": lambda text: text.replace('"results": [\n      {', '"results": [\n      7,\n      {', 1),
    "a result without its provider": lambda text: text.replace('"provider": {', '"unread": {', 1),
    "duplicate keys": lambda text: text.replace('"output": "ANSWER', '"output": "first",\n          "output": "ANSWER', 1),
    "the file cut inside a result": lambda text: text[: text.index('"testIdx": 12')],
    "a byte order mark first": lambda text: "\ufeff" + text,
}


@pytest.mark.parametrize("edit", HOSTILE_RESULTS.values(), ids=HOSTILE_RESULTS.keys())
def test_a_hostile_result_imports_as_whole_results_do(tmp_path, monkeypatch, processes, edit):
    text = _write(tmp_path, _document()).read_text()
    edited = edit(text)
    assert edited != text
    fields, whole = _imports(tmp_path, _write(tmp_path, edited), monkeypatch)
    assert fields == whole


def test_arm_from_may_name_a_field_the_reader_does_not_keep(tmp_path, monkeypatch, processes):
    document = _document()
    for number, result in enumerate(document["results"]["results"]):
        result["metadata"]["team"] = f"team-{number % 2}"
    source = _write(tmp_path, document)
    fields, whole = _imports(tmp_path, source, monkeypatch, ImportOptions(arm_from="metadata.team", again=True))
    assert fields == whole
    assert sorted(fields[0]) == ["team-0", "team-1"]


@pytest.mark.parametrize("limit", [640, 4300])
def test_every_run_of_more_digits_than_python_reads_is_found_wherever_it_starts(monkeypatch, limit):
    monkeypatch.setattr(sys, "get_int_max_str_digits", lambda: limit)
    for start in range(0, limit + 3):
        text = b"x" * start + b"7" * (limit + 1) + b"x" * 50
        assert _may_hold_too_long_integer(text), start
        assert not _may_hold_too_long_integer(text.replace(b"7" * (limit + 1), b"7" * limit + b"x")), start
