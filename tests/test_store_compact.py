"""`evalsite compact`: finished runs as zstd Parquet, read through the same DuckDB views."""

from __future__ import annotations

import hashlib
import json
import random
import shutil

import duckdb
import pyarrow.parquet as pq
import pytest
from sitekit import write_run

from evalsite.analysis.db import open_database
from evalsite.analysis.parquet import compact_run
from evalsite.analysis.summary import summarise_run
from evalsite.runlog.store import CASES_FILE, CASES_SHA256, END_FILE, read_cases

QUERY = "SELECT run_id, item_id, repeat, score, passed, output, scores FROM cases ORDER BY ALL"


def view_rows(runs_dir) -> list:
    return open_database(runs_dir).connection.execute(QUERY).fetchall()


def test_compacted_runs_read_the_same_and_are_zstd_parquet(cli, example_with_runs):
    before = view_rows(example_with_runs / "runs")
    board_before = cli.json("leaderboard")
    done = cli.json("compact")
    assert len(done) == 3 and all(row["cases"] == 180 for row in done)
    for row in done:
        parquet = pq.ParquetFile(row["parquet"])
        assert parquet.metadata.row_group(0).column(0).compression == "ZSTD"
        assert parquet.metadata.num_rows == 180
        assert row["parquet_bytes"] < row["jsonl_bytes"]
    assert view_rows(example_with_runs / "runs") == before
    board_after = cli.json("leaderboard")
    assert board_after["arms"] == board_before["arms"] and board_after["verdict"] == board_before["verdict"]
    # the views really read Parquet now: hide the JSONL and the same rows come back
    for folder in (example_with_runs / "runs").iterdir():
        (folder / "cases.jsonl").rename(folder / "cases.jsonl.hidden")
    assert view_rows(example_with_runs / "runs") == before
    assert cli.json("compact") == []  # nothing left to do


def test_a_resumed_run_is_read_from_jsonl_until_recompacted_and_validate_names_it(cli, example_with_runs):
    cli.json("compact")
    folder = sorted((example_with_runs / "runs").iterdir())[0]
    with open(folder / "cases.jsonl") as handle:
        first = json.loads(handle.readline())
    with open(folder / "cases.jsonl", "a") as handle:
        handle.write(json.dumps({**first, "repeat": 99}) + "\n")
    footer = json.loads((folder / "end.json").read_text())  # as a resume would: totals over every case
    footer["totals"].update(summarise_run(read_cases(folder / "cases.jsonl")).to_json())
    (folder / "end.json").write_text(json.dumps(footer))
    rows = open_database(example_with_runs / "runs").connection.execute(
        "SELECT count(*) FROM cases WHERE run_id = ? AND repeat = 99", [folder.name]).fetchone()
    assert rows == (1,)
    result = cli("validate")
    assert result.exit_code == 1
    assert f"evalsite compact {folder.name}" in result.output and "sha256" in result.output
    cli.json("compact", folder.name)
    assert cli("validate").exit_code == 0



def test_compaction_records_the_source_and_reads_a_hand_edited_file_as_the_views_do(cli, example_with_runs):
    """A run as its writer wrote it is compacted from typed columns, a hand-edited one (its footer's
    cases_sha256 no longer holds) field by field: both read back as the JSONL views read them, and
    the file records the JSONL's sha256, size and the cases written (not its lines)."""
    written, edited = sorted((example_with_runs / "runs").iterdir())[:2]
    lines = (edited / "cases.jsonl").read_text().splitlines()
    # a line that is no case, a repeated (item_id, repeat) whose second line is dropped, a blank line, no final newline
    (edited / "cases.jsonl").write_text("\n".join([*lines[:5], "", *lines[5:], '{"item_id": 7}', lines[0].replace('"score"', '"_was"')]))
    before = view_rows(example_with_runs / "runs")
    done = {row["run_id"]: row for row in cli.json("compact")}
    assert view_rows(example_with_runs / "runs") == before
    for folder, cases in ((written, 180), (edited, len(lines))):
        source = folder / "cases.jsonl"
        metadata = pq.read_schema(folder / "cases.parquet").metadata
        assert metadata[b"evalsite.jsonl_sha256"].decode() == hashlib.sha256(source.read_bytes()).hexdigest()
        assert metadata[b"evalsite.jsonl_bytes"] == str(source.stat().st_size).encode()
        assert metadata[b"evalsite.cases"] == str(cases).encode() and done[folder.name]["cases"] == cases
        assert pq.read_metadata(folder / "cases.parquet").num_rows == cases
    assert not list(edited.glob("cases.parquet.*"))

def test_compact_to_a_folder_writes_partitions_that_form_a_runs_folder(cli, example_with_runs, tmp_path):
    store = tmp_path / "store"
    done = cli.json("compact", "--to", str(store))
    assert len(done) == 3
    partitions = sorted(p.relative_to(store).as_posix() for p in store.glob("dataset=*/run=*"))
    assert len(partitions) == 3 and all(p.startswith("dataset=") for p in partitions)
    assert view_rows(store) == view_rows(example_with_runs / "runs")
    hive = duckdb.sql(f"SELECT DISTINCT dataset, run FROM read_parquet('{store}/*/*/cases.parquet', hive_partitioning=true)")
    assert len(hive.fetchall()) == 3
    assert not (example_with_runs / "runs" / done[0]["run_id"] / "cases.parquet").exists()


def test_an_unfinished_run_is_refused_by_name(cli, example_with_runs):
    folder = sorted((example_with_runs / "runs").iterdir())[0]
    (folder / "end.json").unlink()
    result = cli("compact", folder.name)
    assert result.exit_code == 1
    assert f"{folder.name}: only finished runs are compacted (this one is interrupted)" in result.output
    shutil.rmtree(folder)


@pytest.mark.parametrize("longest", [25_000, 40_000_000])
def test_a_vouched_run_compacts_in_the_order_of_its_lines_whatever_its_longest_line(tmp_path, longest):
    # ~44 MB: DuckDB parses its 32 MiB blocks on several threads; a 40 MB line is past its own bound
    rng = random.Random(7)
    cases = [{"item_id": f"q{n}", "repeat": 0, "score": 1.0, "passed": True, "scores": [],
              "output": f"{n}:" + "x" * rng.randint(10_000, 25_000)} for n in range(2500)]
    cases[1200]["output"] = "y" * longest
    directory = write_run(tmp_path / "runs", "20260101T000000Z-a-0001", cases)
    footer = json.loads((directory / END_FILE).read_text())
    digest = hashlib.sha256((directory / CASES_FILE).read_bytes()).hexdigest()
    (directory / END_FILE).write_text(json.dumps({**footer, CASES_SHA256: digest}))  # as the run writer vouches
    done = compact_run(directory)
    table = pq.read_table(done.parquet, columns=["item_id", "output"])
    assert done.cases == len(cases)
    assert table.column("item_id").to_pylist() == [case["item_id"] for case in cases]
    assert [json.loads(text) for text in table.column("output").to_pylist()] == [case["output"] for case in cases]  # as JSON
