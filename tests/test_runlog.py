"""The run log writer: atomic header, append-only cases, torn-line repair, resume bookkeeping, lock."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from evalsite.errors import RunLogError
from evalsite.runlog import store
from evalsite.runlog.store import (
    CASES_FILE,
    END_FILE,
    RunWriter,
    read_attempts,
    read_run,
    repair_torn_tail,
    run_is_active,
)


def new_run(tmp_path, cases=2) -> RunWriter:
    writer = RunWriter.create(tmp_path / "runs", "arm", {"arm_id": "arm"})
    for n in range(cases):
        writer.append_case({"item_id": f"i{n}", "repeat": 0})
    return writer


def test_a_torn_last_line_is_ignored_by_readers_and_cut_by_repair(tmp_path):
    writer = new_run(tmp_path)
    writer.close()
    path = writer.directory / CASES_FILE
    with open(path, "a") as handle:
        handle.write('{"item_id": "i2", "rep')
    run = read_run(writer.directory)
    assert [c["item_id"] for c in run.cases] == ["i0", "i1"] and run.warnings == []
    repair_torn_tail(path)
    lines = path.read_text().split("\n")
    assert lines[2:] == [""] and [json.loads(line)["item_id"] for line in lines[:2]] == ["i0", "i1"]


def test_a_complete_line_without_its_newline_is_cut_too(tmp_path):
    # the reader would accept it, but it may be half of a longer write: resume runs that case again
    path = tmp_path / CASES_FILE
    path.write_text('{"a": 1}\n{"a": 2}')
    repair_torn_tail(path)
    assert path.read_text() == '{"a": 1}\n'


def test_the_writer_holds_a_lock_until_it_finishes(tmp_path):
    writer = new_run(tmp_path)
    assert run_is_active(writer.directory)
    with pytest.raises(RunLogError, match="being written by another evalsite process"):
        RunWriter.reopen(writer.directory, {})
    writer.finish({"status": "canceled"})
    assert not run_is_active(writer.directory)


def test_reopen_keeps_the_previous_footer_and_refuses_a_completed_run(tmp_path):
    writer = new_run(tmp_path)
    writer.finish({"status": "stopped_cost_ceiling", "totals": {"cases": 2}})
    previous = json.loads((writer.directory / END_FILE).read_text())
    assert {key: previous[key] for key in ("status", "totals")} == {"status": "stopped_cost_ceiling", "totals": {"cases": 2}}
    again = RunWriter.reopen(writer.directory, {"resumed_at": "t1"})
    assert not (writer.directory / END_FILE).exists()
    again.append_case({"item_id": "i2", "repeat": 0})
    again.finish({"status": "completed"})
    assert read_attempts(writer.directory) == [{"resumed_at": "t1", "previous": previous}]
    run = read_run(writer.directory)
    assert run.status == "completed" and len(run.cases) == 3
    with pytest.raises(RunLogError, match="is completed; there is nothing to resume"):
        RunWriter.reopen(writer.directory, {})
    assert json.loads((writer.directory / END_FILE).read_text())["status"] == "completed"
    assert not run_is_active(writer.directory)


def test_arm_at_latest_names_the_newest_run_of_that_arm_by_its_start(tmp_path):
    from evalsite.errors import RunLogError
    from evalsite.runlog.store import resolve_run

    runs = tmp_path / "runs"
    for name, arm, started in [("20260101T000000Z-a-ffff", "a", "2026-01-01T00:00:00.900Z"),
                               ("20260101T000000Z-a-0000", "a", "2026-01-01T00:00:00.100Z"),
                               ("20250101T000000Z-b-1111", "b", "2025-01-01T00:00:00.000Z")]:
        (runs / name).mkdir(parents=True)
        (runs / name / "run.json").write_text(json.dumps(
            {"format_version": 1, "run_id": name, "arm_id": arm, "started_at": started}))
    assert resolve_run(runs, "a@latest").name == "20260101T000000Z-a-ffff"  # the later start, not the id
    assert resolve_run(runs, "b@latest").name == "20250101T000000Z-b-1111"
    assert resolve_run(runs, "@latest").name == "20260101T000000Z-a-ffff"
    with pytest.raises(RunLogError, match="no run of arm 'c'"):
        resolve_run(runs, "c@latest")


def test_now_iso_is_iso_of_utc_now_from_one_clock_read(monkeypatch):
    """A case's started_at (store.now_iso) is the text iso(utc_now()) gives for the same instant:
    datetime.now keeps the clock's microseconds rounded down, so the milliseconds are the
    nanoseconds' rounded down (reference: exact datetime arithmetic on seeded random instants,
    second and millisecond edges among them); read beside utc_now, it falls between its reads."""
    rng = random.Random(5)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    instants = [rng.randrange(0, 4_102_444_800 * 10**9) for _ in range(3000)]
    instants += [s * 10**9 + edge for s in (0, 1_700_000_000, 1_799_999_999) for edge in (0, 999_999, 1_000_000, 999_999_999)]
    for ns in instants:
        monkeypatch.setattr(store.time, "time_ns", lambda ns=ns: ns)
        assert store.now_iso() == store.iso(epoch + timedelta(microseconds=ns // 1000)), ns
    monkeypatch.undo()
    for _ in range(2000):
        before, now, after = store.iso(store.utc_now()), store.now_iso(), store.iso(store.utc_now())
        assert before <= now <= after
