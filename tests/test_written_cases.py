"""end.json's cases_sha256: the writer records it when every line it wrote is a well-typed case, and
the views read such a file as typed columns only while it is still that file — a hand edit after
the run finished sends it back through the checked reading, so the views and `show` still agree."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path

import duckdb

from evalsite.analysis.db import case_source
from evalsite.analysis.parquet import case_files
from evalsite.runlog.records import (
    CASE_TYPES,
    MAX_REPEAT_INDEX,
    SCORE_TYPES,
    bounded_case,
    checked_fields,
    well_typed_case,
)
from evalsite.runlog.store import CASES_FILE, CASES_SHA256, CHECK_BATCH, END_FILE, RunWriter, read_cases

HEADER = {"arm_id": "a", "dataset": {"path": "d.jsonl", "dataset_id": "d@0"}}


def case(item: str, score: float | bool = 1.0) -> dict:
    return {"item_id": item, "repeat": 0, "score": score, "passed": True, "error": None,
            "scores": [{"evaluator": "exact", "version": "v", "score": 1.0, "passed": True}]}


def write_run(runs: Path, cases: list[dict]) -> Path:
    writer = RunWriter.create(runs, "a", HEADER)
    for record in cases:
        writer.append_case(record)
    writer.finish({"status": "completed"})
    return writer.directory


def footer(folder: Path) -> dict:
    return json.loads((folder / END_FILE).read_text())


def view_cases(folder: Path) -> list[tuple]:
    return duckdb.connect().sql(f"SELECT item_id, score FROM ({case_source([folder])}) ORDER BY item_id").fetchall()


def test_a_run_of_well_typed_cases_records_its_file_hash_and_is_read_as_written(tmp_path):
    folder = write_run(tmp_path / "runs", [case("q1"), case("q2", 0.0)])
    assert footer(folder)[CASES_SHA256] == hashlib.sha256((folder / CASES_FILE).read_bytes()).hexdigest()
    files = case_files([folder])
    assert files.written == [str(folder / CASES_FILE)] and files.checked == []
    assert view_cases(folder) == [("q1", 1.0), ("q2", 0.0)]


def test_a_hand_edit_after_the_run_finished_is_read_through_the_checks(tmp_path):
    folder = write_run(tmp_path / "runs", [case("q1"), case("q2", 0.0)])
    path = folder / CASES_FILE
    path.write_text(path.read_text().replace('"score":0.0', '"score":true', 1))
    files = case_files([folder])
    assert files.written == [] and files.checked == [str(path)]
    assert view_cases(folder) == [("q1", 1.0)]  # the typed reading would have made `true` a score of 1.0
    assert [c.item_id for c in read_cases(path)] == ["q1"]


def test_several_runs_hashed_side_by_side_are_each_read_as_their_own_footer_says(tmp_path):
    folders = [write_run(tmp_path / "runs", [case(f"q{i}"), case("q9", 0.0)]) for i in range(5)]
    edited = folders[2] / CASES_FILE
    edited.write_text(edited.read_text().replace('"score":0.0', '"score":0.5', 1))
    files = case_files(folders)
    assert files.written == [str(folder / CASES_FILE) for folder in folders if folder != folders[2]]
    assert files.checked == [str(edited)]


def test_a_writer_handed_a_case_of_the_wrong_type_records_no_hash(tmp_path):
    folder = write_run(tmp_path / "runs", [case("q1"), case("q2", True)])
    assert CASES_SHA256 not in footer(folder)
    assert case_files([folder]).checked == [str(folder / CASES_FILE)]
    assert view_cases(folder) == [("q1", 1.0)]


def test_cases_appended_one_at_a_time_are_checked_in_batches_as_each_would_be_alone(tmp_path):
    """append_case checks the records it wrote CHECK_BATCH at a time (and whatever is left when
    well_typed is asked or the run finishes): the footer keeps its hash exactly when every record as
    written is a well-typed case with a key of its own, wherever a bad record or a repeated key
    falls (either side of a batch's boundary, in the last part batch), and well_typed says so mid-run."""
    size = CHECK_BATCH + 7
    changes = {"type": {"finish_reason": 3}, "key": {"item_id": "q5"}, "nan": {"cost_usd": float("nan")}}
    runs = [(None, "none")] + [(at, name) for at in (3, CHECK_BATCH - 1, CHECK_BATCH, size - 1) for name in changes]
    for position, name in runs:
        records = [{**case(f"q{index}"), "finish_reason": "stop"} for index in range(size)]
        if position is not None:
            records[position] = {**records[position], **changes[name]}
        writer = RunWriter.create(tmp_path / f"{name}-{position}", "a", HEADER)
        written = [writer.append_case(record) for record in records]
        alone = all(map(well_typed_case, written)) and len({(r["item_id"], r["repeat"]) for r in written}) == size
        assert alone == (name in ("none", "nan")), (name, position)  # a NaN is written as null, named in the error
        assert writer.well_typed == alone
        writer.append_case(case("last"))  # checked when the run finishes
        writer.finish({"status": "completed"})
        assert (CASES_SHA256 in footer(writer.directory)) == alone, (name, position)


def test_a_short_write_is_continued_to_the_end_of_the_line(tmp_path, monkeypatch):
    """A write that takes part of a line (a full disk, a signal) is continued: the same file and hash."""
    records = [case("q1"), {**case("q2"), "output": "é" * 100}]
    whole = write_run(tmp_path / "whole", records)
    write = os.write
    monkeypatch.setattr(os, "write", lambda descriptor, data: write(descriptor, bytes(data[:7])))
    parts = write_run(tmp_path / "parts", records)
    monkeypatch.undo()
    assert (parts / CASES_FILE).read_bytes() == (whole / CASES_FILE).read_bytes()
    assert footer(parts)[CASES_SHA256] == footer(whole)[CASES_SHA256]


def test_a_resumed_run_hashes_the_cases_it_found_and_the_ones_it_added(tmp_path):
    folder = write_run(tmp_path / "runs", [case("q1")])
    (folder / END_FILE).write_text(json.dumps({"status": "canceled"}))
    writer = RunWriter.reopen(folder, {"attempt": 2})
    writer.append_case(case("q2"))
    writer.finish({"status": "completed"})
    assert footer(folder)[CASES_SHA256] == hashlib.sha256((folder / CASES_FILE).read_bytes()).hexdigest()


def test_a_resumed_run_whose_earlier_lines_were_edited_records_no_hash(tmp_path):
    folder = write_run(tmp_path / "runs", [case("q1")])
    (folder / END_FILE).write_text(json.dumps({"status": "canceled"}))
    path = folder / CASES_FILE
    path.write_text(path.read_text().replace('"score":1.0', '"score":"high"', 1))
    writer = RunWriter.reopen(folder, {"attempt": 2})
    writer.append_case(case("q2"))
    writer.finish({"status": "completed"})
    assert CASES_SHA256 not in footer(folder)


def test_a_vouched_files_lines_are_counted_with_or_without_a_last_newline_and_a_changed_file_has_none(tmp_path):
    from evalsite.analysis.parquet import _sha256_and_lines, written_lines

    folder = write_run(tmp_path, [case("a"), case("b"), case("c")])
    cases = folder / CASES_FILE
    assert written_lines(folder, cases) == 3 == _sha256_and_lines(cases)[1]
    cut = cases.read_bytes().rstrip(b"\n")  # the footer vouching for the file without its last newline
    cases.write_bytes(cut)
    (folder / END_FILE).write_text(json.dumps({**footer(folder), CASES_SHA256: hashlib.sha256(cut).hexdigest()}))
    assert written_lines(folder, cases) == 3 == _sha256_and_lines(cases)[1]
    cases.write_bytes(cut + b"\n" + cut.splitlines(keepends=True)[0])
    assert written_lines(folder, cases) is None


VALUES = [None, "", "x", 0, 1, -1, 2, 10**7, 10**20, 0.5, -0.5, 1e13, float("nan"), float("inf"), True, False, [], {}]


def random_records(seed: int) -> Iterator[dict]:
    """Seeded random case records, many of them well typed, the rest with wrong types, NaN or
    numbers out of range somewhere (scores included)."""
    rng = random.Random(seed)
    case_keys, score_keys = [*CASE_TYPES, "input", "output"], list(SCORE_TYPES)

    def record(keys: list[str], plausible: bool) -> dict:
        """Random values; ``plausible``: most fields null, so that many records are well typed."""
        return {key: None if plausible and rng.random() < 0.85 else rng.choice(VALUES) for key in keys
                if rng.random() < 0.9}

    while True:
        plausible = rng.random() < 0.7
        data = record(case_keys, plausible)
        if plausible:
            data.update(item_id="q", repeat=rng.choice([0, 1, 3, -1, MAX_REPEAT_INDEX + 1, True, 0.0]))
        if rng.random() < 0.7:
            data["scores"] = [{**record(score_keys, plausible), "evaluator": "e"} if rng.random() < 0.95
                              else rng.choice(VALUES) for _ in range(rng.randrange(3))]
        yield data


def test_the_batch_check_holds_exactly_when_every_record_is_written_as_it_is_and_well_typed():
    """checked_fields (the writer's check of a batch, a field at a time) is True exactly when
    bounded_case returns each record itself and each is a well-typed case
    (seeded random batches: up to three records that hold, and a random one or none)."""
    rng, records = random.Random(31), random_records(31)
    good = [data for data in itertools.islice(random_records(32), 20_000)
            if bounded_case(data) is data and well_typed_case(data)]
    said = {True: 0, False: 0}
    for _ in range(20_000):
        batch = rng.sample(good, rng.randint(0, 3)) + list(itertools.islice(records, rng.randint(0, 1)))
        expected = all(bounded_case(data) is data and well_typed_case(data) for data in batch)
        assert (checked_fields(batch) is not None) == expected, batch
        said[expected] += 1
    assert min(said.values()) > 1000, said
    assert checked_fields([]) is not None and checked_fields([case("q1"), case("q2", 0.0)]) is not None


def test_cases_appended_in_batches_are_the_lines_and_hash_of_cases_appended_one_at_a_time(tmp_path):
    """append_cases (batches checked at once when every record holds) writes the bytes, returns the
    records and records the footer hash that append_case writes one record at a time; random
    records, so batches with and without a bad record, and repeated keys (which leave out the hash)."""
    for seed in range(40):
        records = list(itertools.islice(random_records(seed), 200))
        if seed % 2:  # plausible, well-typed records with keys of their own, so the footer has its hash
            records = [{**case(f"q{index}"), "latency_ms": 2.5 * index} for index in range(200)]
            records[seed] = {**records[seed], "cost_usd": float("nan") if seed % 4 == 1 else 3.0}
        one = RunWriter.create(tmp_path / f"one-{seed}", "a", HEADER)
        one_written = [one.append_case(record) for record in records]
        one.finish({"status": "completed"})
        batched = RunWriter.create(tmp_path / f"batched-{seed}", "a", HEADER)
        batched_written = [written for start in range(0, 200, 64)
                           for written in batched.append_cases(records[start:start + 64])[0]]
        batched.finish({"status": "completed"})
        assert batched_written == one_written or json.dumps(batched_written) == json.dumps(one_written)
        assert (batched.directory / CASES_FILE).read_bytes() == (one.directory / CASES_FILE).read_bytes()
        assert footer(batched.directory).get(CASES_SHA256) == footer(one.directory).get(CASES_SHA256)
        assert seed % 4 != 3 or CASES_SHA256 in footer(one.directory)


def test_columns_of_checked_batches_are_the_columns_of_their_records_one_at_a_time():
    """batch_columns reads a batch that checked_fields holds for a field at a time, any
    other batch record by record; either way the columns equal case_columns of the same records
    (seeded random records: kept ones in checked batches, the rest in unchecked ones; with
    served models, labels, turns, item shas and critical flags)."""
    from evalsite.analysis.case_columns import batch_columns, case_columns, columns_arrays

    rng = random.Random(33)
    kept = [data for data in itertools.islice(random_records(34), 6000)
            if bounded_case(data) is data and well_typed_case(data)]
    for index, data in enumerate(kept):  # ids, shas, labels, turns and models that repeat
        data.update(item_id=f"q{index % 50}", item_sha=rng.choice([None, "", "s1", "s2"]),
                    served_model=rng.choice([None, "", "m1", "m2", 3]))
        for score in data.get("scores") or ():
            score.update(evaluator=rng.choice("ab"), label=rng.choice([None, "x", "y"]), turn=rng.choice([None, 1, 2]))
    others = [bounded_case(data) for data in itertools.islice(random_records(35), 1000)  # as the writer records them
              if isinstance(data.get("scores"), (list, type(None)))
              and not (isinstance(data.get("repeat"), int) and data["repeat"] > MAX_REPEAT_INDEX)]
    batches, records = [], []
    while kept or others:
        size = rng.randint(1, 40)
        if rng.random() < 0.8 and kept:
            batch, kept = kept[:size], kept[size:]
        else:
            batch, others = others[:size], others[size:]
        batches.append((batch, checked_fields(batch) or False))
        records += batch
    assert {bool(checked) for _, checked in batches} == {True, False}
    expected, found = columns_arrays(case_columns(records)), columns_arrays(batch_columns(batches))
    assert expected.keys() == found.keys()
    for key, array in expected.items():
        assert array.dtype == found[key].dtype and array.tobytes() == found[key].tobytes(), key


def test_a_checked_batch_with_a_key_seen_before_leaves_out_the_hash_as_one_at_a_time_does(tmp_path):
    """append_cases checks a well-typed batch's (item_id, repeat) keys a batch at a time: a key
    repeated inside the batch, or one an earlier batch wrote, leaves out the footer's hash exactly as
    append_case does; keys of their own keep it."""
    batches = {"own": [[case("q1"), case("q2")], [case("q3")]], "inside": [[case("q1"), case("q1")], [case("q3")]],
               "earlier": [[case("q1"), case("q2")], [case("q2")]]}
    for name, parts in batches.items():
        batched = RunWriter.create(tmp_path / f"batched-{name}", "a", HEADER)
        assert all(batched.append_cases(part)[1] for part in parts)  # each batch well typed and written as it is
        batched.finish({"status": "completed"})
        one = write_run(tmp_path / f"one-{name}", [record for part in parts for record in part])
        assert (CASES_SHA256 in footer(batched.directory)) == (name == "own")
        assert footer(batched.directory).get(CASES_SHA256) == footer(one).get(CASES_SHA256)
