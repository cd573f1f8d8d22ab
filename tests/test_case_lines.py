"""The writer's case lines (orjson, compact) read back as the records they were, and the lines of
files the stdlib encoder wrote (spaced separators) are read and trusted exactly as before."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from evalsite.analysis.parquet import case_files
from evalsite.analysis.summary import summarise_run
from evalsite.runlog.store import CASES_FILE, END_FILE, RunWriter, case_line, read_cases

HEADER = {"arm_id": "a", "config_id": "c", "experiment": "e", "dataset": {"path": "d.jsonl", "dataset_id": "d@1", "items": 3}}


def _case(item: str, **fields) -> dict:
    record = {"item_id": item, "item_sha": "s", "repeat": 0, "input": "q", "expected": "x", "output": "x",
              "error": None, "latency_ms": 1.5, "input_tokens": 3, "output_tokens": 4, "cost_usd": 1e-6,
              "finish_reason": "stop", "score": 1.0, "passed": True, "started_at": "2026-01-01T00:00:00.000Z",
              "critical": False,
              "scores": [{"evaluator": "exact", "version": "v", "score": 1.0, "passed": True, "label": None,
                          "detail": None, "error": None, "skipped": False}]}
    return {**record, **fields}


AWKWARD = [
    _case("q1", output="naïve — 日本語 🙂 \u2028 \"quoted\" \\ back\nslash", input=[{"role": "user", "content": "é"}]),
    _case("q2", latency_ms=0.1 + 0.2, cost_usd=5e-324, output={"nested": [1, 2.5, -0.0, 1e300, True, None]}),
    _case("q3", output=2**70, expected=[1, "two", {"3": 3.0}]),  # past 64 bits: the stdlib encoder writes it
]


def test_a_line_reads_back_as_the_record_it_was():
    for record in AWKWARD:
        written, line = case_line(record)
        assert written is record and line.endswith(b"\n") and line.count(b"\n") == 1
        back = json.loads(line)
        assert back == json.loads(json.dumps(record))
        assert repr(back["latency_ms"]) == repr(record["latency_ms"])  # floats round-trip to the bit


def test_values_orjson_would_write_differently_go_through_the_stdlib_encoder():
    class Text(str):
        pass

    for output in (Text("t"), {1: "int key"}, 2**70):
        _, line = case_line(_case("q", output=output))
        assert line == (json.dumps(_case("q", output=output), ensure_ascii=False, default=str) + "\n").encode()


def test_compact_and_spaced_files_read_and_hash_alike(tmp_path: Path):
    """A run written now (compact lines) and the same run as the old encoder wrote it (spaced):
    the reader gives the same cases, each footer's hash is trusted, and the summaries agree."""
    new = RunWriter.create(tmp_path / "runs", "a", HEADER)
    for record in AWKWARD:
        new.append_case(record)
    new.finish({"status": "completed"})
    old = tmp_path / "runs" / "old-run"  # the same run as the stdlib encoder wrote it, hashed as written
    shutil.copytree(new.directory, old)
    spaced = "".join(json.dumps(record, ensure_ascii=False, default=str) + "\n" for record in AWKWARD).encode()
    (old / CASES_FILE).write_bytes(spaced)
    (old / END_FILE).write_text(json.dumps({"status": "completed", "cases_sha256": hashlib.sha256(spaced).hexdigest()}))
    assert b", " in (old / CASES_FILE).read_bytes() and b'","' in (new.directory / CASES_FILE).read_bytes()
    new_cases, old_cases = read_cases(new.directory / CASES_FILE), read_cases(old / CASES_FILE)
    assert [c.raw for c in new_cases] == [c.raw for c in old_cases]
    files = case_files([new.directory, old])
    assert len(files.written) == 2, files  # both footers' cases_sha256 hold
    assert summarise_run(new_cases).to_json() == summarise_run(old_cases).to_json()
    assert json.loads((new.directory / END_FILE).read_text())["cases_sha256"] != json.loads(
        (old / END_FILE).read_text())["cases_sha256"]
