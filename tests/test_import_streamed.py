"""An import streams its cases into the run writer: spooled with orjson, appended a batch per
``write``, summarised as they are written. Its run must be byte for byte the run of the per-case
path through the same builders: every case spooled by the standard encoder, appended one
``append_case`` at a time, the summary computed from the list of written cases afterwards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from import_support import PLAIN, run_files

from evalsite.analysis.case_columns import case_columns
from evalsite.execute.importers import ImportOptions, import_files
from evalsite.execute.importers import writer as import_writer
from evalsite.project import Project
from evalsite.runlog.store import RunWriter

# rows beyond the fixture's: free JSON with NaN, infinity and an integer past 64 bits (the spool's
# standard-encoder path), a float orjson writes otherwise (1e16), an error, text beyond ASCII,
# explicit repeats, a nested output, a verdict of the source's own
ODD_ROWS = [
    '{"arm": "model-a", "id": "odd-1", "input": "x", "output": {"v": NaN, "w": 12345678901234567890123}, "score": 0}',
    '{"arm": "model-a", "id": "odd-2", "input": "y", "expected": [1e16, 2], "output": [Infinity], "score": 0.5}',
    '{"arm": "model-b", "id": "odd-3", "input": "z", "output": "boom", "error": "timeout", "score.exact": 1}',
    '{"arm": "model-b", "id": "odd-4", "input": "\u00e9\u6f22\U0001f600", "output": {"a": [1, 2.5, null]}, "repeat": 3,'
    ' "scores": {"len": {"score": 0.2, "label": "short", "detail": "d"}}, "passed": "yes"}',
    '{"arm": "model-b", "id": "odd-4", "input": "\u00e9\u6f22\U0001f600", "output": "again", "repeat": 0, "score": 1}',
]


def _source(tmp_path: Path, copies: int) -> Path:
    """The plain fixture's rows ``copies`` times (new ids), then the odd rows."""
    rows = [json.loads(line) for line in (PLAIN / "scored.jsonl").read_text().splitlines()]
    path = tmp_path / "streamed.jsonl"
    lines = [json.dumps({**row, "id": f"{row['id']}-{n}"}) for n in range(copies) for row in rows]
    path.write_text("\n".join(lines + ODD_ROWS) + "\n", encoding="utf-8")
    return path


def _import(root: Path, source: Path) -> dict[str, dict[str, Any]]:
    (root / "data").mkdir(parents=True)
    return run_files(import_files(Project(root), "jsonl", [source], ImportOptions(again=True)), root)


def _per_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(import_writer, "_spooled_line", lambda record, fast: import_writer._STDLIB_MARK + (
        json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8"))
    monkeypatch.setattr(RunWriter, "append_cases",
                        lambda self, cases, vouched=None: ([self.append_case(case) for case in cases], False))
    monkeypatch.setattr(import_writer, "batch_columns",
                        lambda batches: case_columns([case for cases, _ in batches for case in cases]))


def test_a_streamed_import_writes_the_run_the_per_case_path_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    source = _source(tmp_path, copies=60)  # 2,880 fixture rows: several batches of WRITE_BATCH per run
    streamed = _import(tmp_path / "streamed", source)
    with monkeypatch.context() as patch:
        _per_case(patch)
        reference = _import(tmp_path / "reference", source)
    assert streamed.keys() == reference.keys() == {"model-a", "model-b"}
    for arm, run in streamed.items():
        assert run["cases.jsonl"] == reference[arm]["cases.jsonl"], arm
        assert run["run.json"] == reference[arm]["run.json"], arm
        assert run["end.json"] == reference[arm]["end.json"], arm
        assert run["end.json"]["cases_sha256"]  # every line well typed, hashed as written
    lines = streamed["model-a"]["cases.jsonl"].splitlines()
    assert len(lines) == 60 * 24 + 2 > import_writer.WRITE_BATCH
    odd = json.loads(lines[-2])
    assert odd["item_id"] == "odd-1" and odd["output"]["w"] == 12345678901234567890123  # not read back as a float


def test_spooled_lines_read_back_a_batch_at_a_time_are_each_line_read_by_its_decoder():
    """A batch of spooled lines is one orjson decoding when orjson wrote each; with a line the
    standard encoder wrote (marked) anywhere in it, each line goes to its own decoder."""
    fast = [import_writer._spooled_line([n, f"q{n}", "line\nbreak ,J", [["e", 0.5, None]]], True) for n in range(3)]
    marked = import_writer._spooled_line([9, "q9", float("nan"), 12345678901234567890123], False)
    assert marked.startswith(import_writer._STDLIB_MARK)
    for lines in (fast, [marked, *fast], [*fast[:1], marked, *fast[1:]], [*fast, marked]):
        found = import_writer._spooled_batch(lines)
        assert json.dumps(found) == json.dumps([import_writer._spooled(line) for line in lines])
