"""The typed run records and the tolerant reader: every field checked, one-line errors naming the
file and the field, bad case lines skipped with a warning, crash leftovers ignored or removed."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsite.errors import RunLogError
from evalsite.runlog.decisions import Decision, read_decisions
from evalsite.runlog.records import Case, DatasetRef, Footer, RunHeader, RunStatus
from evalsite.runlog.store import RunWriter, read_header, read_run, run_directories, scan_runs
from evalsite.runlog.totals import RunTotals

HEADER = {
    "format_version": 1, "run_id": "20260101T000000Z-a-0000", "batch_id": "b", "experiment": "e", "arm_id": "a",
    "config": {"params": {"t": 0.2}}, "config_id": "c1", "dataset": {"path": "data/d.jsonl", "dataset_id": "d@1", "items": 3},
    "evaluators": {"exact": {"type": "exact", "version": "v1"}},
    "fingerprint": {"dataset": {"inputs_id": "d@q"}, "evaluators": {"exact": {"type": "exact", "version": "v1", "threshold": None}}},
    "fingerprint_hash": "f", "started_at": "2026-01-01T00:00:00.000Z", "plan": {"items": 3}, "schedule": {"concurrency": 2},
}
CASE = {
    "item_id": "q1", "repeat": 0, "output": "4", "error": None, "latency_ms": 12, "input_tokens": 3, "cost_usd": None,
    "scores": [{"evaluator": "exact", "version": "v1", "score": 1.0, "passed": True, "skipped": False}],
    "score": 1.0, "passed": True, "attempts": 2,
}


def test_a_header_exposes_typed_fields_and_keeps_the_rest_raw():
    header = RunHeader.from_json(HEADER, "r/run.json")
    assert (header.run_id, header.arm_id, header.config_id) == ("20260101T000000Z-a-0000", "a", "c1")
    assert header.dataset == DatasetRef("data/d.jsonl", "d@1", 3, "d@q")
    assert header.evaluator_versions == {"exact": "v1"}
    assert "threshold" in header.evaluator_specs["exact"]  # the fingerprint's identity decides comparability
    assert header.raw["schedule"] == {"concurrency": 2}


@pytest.mark.parametrize(("change", "message"), [
    ({"run_id": 5}, "r/run.json: run_id must be a string, not a number 5"),
    ({"run_id": "../x"}, "r/run.json: run_id must be a run id (a folder name), not a string '../x'"),
    ({"dataset": "x"}, "r/run.json: dataset must be an object, not a string 'x'"),
    ({"dataset": {"items": -1}}, "r/run.json: dataset.items must be an integer >= 0, not a number -1"),
    ({"evaluators": {"exact": 5}}, "r/run.json: evaluators.exact must be an object, not a number 5"),
    ({"evaluators": {"a\nb": None}}, "r/run.json: evaluators['a\\nb'] must be an object, not null None"),
    ({"fingerprint": {"dataset": {"inputs_id": 3}}}, "r/run.json: fingerprint.dataset.inputs_id must be a string, not a number 3"),
    ({"config": {"params": []}}, "r/run.json: config.params must be an object, not a list []"),
    ({"format_version": True}, "r/run.json: format_version must be an integer >= 1, not a boolean True"),
    ({"format_version": 2}, "r/run.json: run format_version 2 is newer than this evalsite reads (1); upgrade evalsite"),
])
def test_a_bad_header_field_is_one_line_naming_the_file_and_the_field(change, message):
    with pytest.raises(RunLogError) as caught:
        RunHeader.from_json({**HEADER, **change}, "r/run.json")
    assert caught.value.message == message


def test_a_header_needs_a_run_id_and_a_format_version():
    with pytest.raises(RunLogError, match=r"^r/run.json: run_id is missing$"):
        RunHeader.from_json({"format_version": 1}, "r/run.json")
    with pytest.raises(RunLogError, match=r"^r/run.json: run.json must be a JSON object, not a list$"):
        RunHeader.from_json([1], "r/run.json")


def test_a_case_is_typed_and_still_reads_as_its_line():
    case = Case.from_json(CASE, "r/cases.jsonl: line 1")
    assert case.key == ("q1", 0) and case.latency_ms == 12.0 and case.input_tokens == 3
    assert case.scores[0].evaluator == "exact" and case.scores[0].passed is True
    assert case["attempts"] == 2 and case.get("missing") is None and dict(case) == CASE


def test_a_case_error_may_be_a_string_or_a_type_and_message():
    old = Case.from_json({**CASE, "error": "HTTP 500"}, "w")
    new = Case.from_json({**CASE, "error": {"type": "HTTPStatusError", "message": "HTTP 500"}}, "w")
    assert (old.error, old.error_type) == ("HTTP 500", None)
    assert (new.error, new.error_type) == ("HTTP 500", "HTTPStatusError")
    with pytest.raises(RunLogError, match=r"^w: error\.message is missing$"):
        Case.from_json({**CASE, "error": {"type": "X"}}, "w")


@pytest.mark.parametrize(("change", "message"), [
    ({"item_id": 7}, "item_id must be a string, not a number 7"),
    ({"repeat": "0"}, "repeat must be an integer from 0 to 9223372036854775807, not a string '0'"),
    ({"passed": "yes"}, "passed must be true, false or null, not a string 'yes'"),
    ({"scores": "x"}, "scores must be a list, not a string 'x'"),
    ({"scores": [5]}, "scores[0] must be a JSON object, not a number"),
    ({"scores": [{"evaluator": "e", "score": "high"}]}, "scores[0].score must be a number, not a string 'high'"),
    ({"input_tokens": 1.5}, "input_tokens must be an integer from 0 to 1000000000, not a number 1.5"),
])
def test_a_bad_case_field_names_the_line_and_the_field(change, message):
    with pytest.raises(RunLogError) as caught:
        Case.from_json({**CASE, **change}, "r/cases.jsonl: line 4")
    assert caught.value.message == f"r/cases.jsonl: line 4: {message}"


def test_a_footer_has_one_of_the_known_statuses():
    footer = Footer.from_json({"status": "stopped_cost_ceiling", "totals": {"cases": 2}, "cost_ceiling": {"spent_usd": 1}}, "e")
    assert footer.status is RunStatus.STOPPED_COST_CEILING and footer.totals == RunTotals(cases=2)
    assert footer.totals.recorded == {"cases"}
    with pytest.raises(RunLogError, match=r"^r/end.json: unknown status 'done'$"):
        Footer.from_json({"status": "done"}, "r/end.json")
    with pytest.raises(RunLogError, match=r"^r/end.json: end.json must be a JSON object, not a string$"):
        Footer.from_json("completed", "r/end.json")


def test_the_same_questions_rule():
    assert DatasetRef(dataset_id="d@1", inputs_id="q").same_questions(DatasetRef(dataset_id="d@2", inputs_id="q"))
    assert not DatasetRef(dataset_id="d@1", inputs_id="q").same_questions(DatasetRef(dataset_id="d@1", inputs_id="p"))
    assert DatasetRef(dataset_id="d@1").same_questions(DatasetRef(dataset_id="d@1", inputs_id="q"))
    assert not DatasetRef().same_questions(DatasetRef())


def write_run(runs: Path, lines: list[str], header: dict | None = None) -> Path:
    folder = runs / HEADER["run_id"]
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(header or HEADER))
    (folder / "cases.jsonl").write_text("".join(line + "\n" for line in lines))
    return folder


def test_bad_case_lines_are_warnings_and_a_torn_last_line_is_silent(tmp_path):
    good = json.dumps(CASE)
    folder = write_run(tmp_path, [good, "[1, 2]", json.dumps({**CASE, "repeat": -1}), "{oops",
                                  json.dumps({**CASE, "repeat": 1})])
    with open(folder / "cases.jsonl", "a") as handle:
        handle.write('{"item_id": "q9", "rep')  # torn by a crash
    run = read_run(folder)
    assert len(run.cases) == 2 and run.status is RunStatus.INTERRUPTED and run.footer is None
    name = f"{folder.name}/cases.jsonl"
    assert run.warnings == [
        f"{name}: line 2: a case must be a JSON object, not a list; skipped",
        f"{name}: line 3: repeat must be an integer from 0 to 9223372036854775807, not a number -1; skipped",
        f"{name}: line 4 is not valid JSON; skipped",
    ]


def test_unreadable_files_are_one_line_errors_naming_the_run(tmp_path):
    folder = write_run(tmp_path, [])
    (folder / "end.json").mkdir()
    with pytest.raises(RunLogError, match=rf"^{folder.name}/end.json: is a directory, not a file$"):
        read_run(folder)
    (folder / "end.json").rmdir()
    (folder / "end.json").write_bytes(b"\xff\xfe")
    with pytest.raises(RunLogError, match=rf"^{folder.name}/end.json: not valid JSON \('utf-8' codec"):
        read_run(folder)
    (folder / "run.json").write_text("[" * 100_000)
    with pytest.raises(RunLogError, match=rf"^{folder.name}/run.json: not valid JSON"):
        read_header(folder)


def test_scan_lists_bad_runs_by_id_and_ignores_folders_without_a_header(tmp_path):
    write_run(tmp_path, [json.dumps(CASE)])
    (tmp_path / "20260101T000001Z-killed-0000").mkdir()  # killed before its header: a leftover, not a run
    (tmp_path / "20260101T000001Z-killed-0000" / ".lock").write_text("")
    moved = tmp_path / "20260101T000002Z-moved-0000"
    moved.mkdir()
    (moved / "run.json").write_text(json.dumps(HEADER))
    runs, problems = scan_runs(tmp_path)
    assert [run.run_id for run in runs] == [HEADER["run_id"]]
    assert problems == [f"{moved.name}/run.json: names run_id {HEADER['run_id']!r}, not its folder's name"]
    assert [d.name for d in run_directories(tmp_path)] == [HEADER["run_id"], moved.name]


def test_finish_and_resume_remove_temp_files_a_killed_write_left(tmp_path):
    writer = RunWriter.create(tmp_path, "arm", {"arm_id": "arm"})
    leftover = writer.directory / ".end.json.4242.tmp"
    leftover.write_text("{")
    writer.finish({"status": "canceled"})
    assert not leftover.exists()
    leftover.write_text("{")
    again = RunWriter.reopen(writer.directory, {})
    assert not leftover.exists()
    again.finish({"status": "completed"})
    assert sorted(p.name for p in writer.directory.iterdir()) == ["attempts.jsonl", "cases.jsonl", "end.json", "run.json"]


def test_decision_lines_are_checked_like_run_files(tmp_path):
    path = tmp_path / "decisions.jsonl"
    good = {"run_id": "r", "fingerprint_hash": "f", "reason": "why", "at": "2026-01-01", "by": None, "dataset_id": "d@1",
            "inputs_id": None, "arm_id": "a"}
    path.write_text("\n".join([json.dumps(good), "[1]", json.dumps({**good, "at": 5}), json.dumps({**good, "format_version": 3})]) + "\n")
    decisions, problems = read_decisions(path, "runs/decisions.jsonl")
    assert [entry.decision for entry in decisions] == [Decision(**good)]
    assert problems == [
        "runs/decisions.jsonl: line 2: a decision must be a JSON object, not a list",
        "runs/decisions.jsonl: line 3: at must be a string, not a number 5",
        "runs/decisions.jsonl: line 4: decision format_version 3 is newer than this evalsite reads; upgrade evalsite",
    ]


SCALARS = st.none() | st.booleans() | st.integers(-2, 2) | st.floats(allow_nan=False) | st.text(max_size=3)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(case=st.fixed_dictionaries(
    {"item_id": st.text(max_size=3), "repeat": st.integers(0, 3)},
    optional={key: SCALARS for key in ("item_sha", "error", "latency_ms", "input_tokens", "cost_usd", "score",
                                          "passed", "critical", "finish_reason")}
    | {"scores": st.lists(st.fixed_dictionaries({"evaluator": st.text(max_size=2)},
                                                optional={k: SCALARS for k in ("score", "passed", "label", "skipped", "turn")}),
                          max_size=2)},
))
def test_the_fast_path_reads_a_line_exactly_as_the_checked_path(case):
    """Lines evalsite wrote skip the per-field checks; both paths must agree on every line."""
    try:
        checked = Case._checked(case, "w")
    except RunLogError as exc:
        with pytest.raises(RunLogError) as caught:
            Case.from_json(case, "w")
        assert caught.value.message == exc.message
        return
    fast = Case.from_json(case, "w")
    assert [getattr(fast, f.name) for f in fields(Case)] == [getattr(checked, f.name) for f in fields(Case)]
