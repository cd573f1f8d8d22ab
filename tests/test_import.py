"""``evalsite import`` across formats: re-imports, shared datasets, the DuckDB views, the readers."""

from __future__ import annotations

import gc
import json
import os
import shutil
import weakref
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from import_support import INSPECT_EVAL, INSPECT_JSON, ITEMS, LMEVAL, PROMPTFOO, imported_runs

import evalsite.execute.importers.jsonstream as jsonstream
import evalsite.execute.importers.writer as writer
from evalsite import collector
from evalsite.analysis.db import open_database
from evalsite.errors import SourceError
from evalsite.execute.importers.evalzip import EvalZip, write_zstd_zip
from evalsite.execute.importers.jsonstream import JsonArrayStream, orjson_value
from evalsite.experiment.datasets import load_dataset

ALL_TOOLS = [
    ("promptfoo", str(PROMPTFOO / "results.json")),
    ("inspect", *map(str, INSPECT_EVAL)),
    ("lm-eval", str(LMEVAL)),
]


def test_importing_the_same_file_twice_is_refused_unless_again(import_project, cli):
    path = str(PROMPTFOO / "results.json")
    assert cli("import", "promptfoo", path).exit_code == 0
    first = {run.run_id for run in imported_runs(import_project)}
    again = cli("import", "promptfoo", path)
    assert again.exit_code == 1
    assert again.output.startswith(f"Error: {path} was already imported as run ")
    assert "pass --again to import it again" in again.output
    assert {run.run_id for run in imported_runs(import_project)} == first
    assert cli("import", "promptfoo", path, "--again").exit_code == 0
    assert len(imported_runs(import_project)) == 4


def test_the_same_content_twice_in_one_call_is_refused(import_project, cli, tmp_path):
    copy = tmp_path / "copy.json"
    copy.write_bytes((PROMPTFOO / "results.json").read_bytes())
    result = cli("import", "promptfoo", str(PROMPTFOO / "results.json"), str(copy))
    assert result.exit_code == 1
    assert f"{copy} has the same content as" in result.output
    assert not (import_project / "runs").exists()


def test_a_bad_file_among_several_leaves_nothing_behind(import_project, cli, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text((PROMPTFOO / "results.json").read_text().replace('"testIdx": 5', '"testIdx" 5', 1))
    result = cli("import", "promptfoo", str(PROMPTFOO / "results.json"), str(broken))
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {broken}: line ")
    assert "invalid JSON: Expecting ':' delimiter" in result.output
    assert not (import_project / "runs").exists()


def test_two_tools_on_the_same_items_share_a_dataset_id(import_project, cli):
    for tool, *paths in ALL_TOOLS:
        assert cli("import", tool, *paths, "--dataset", "items-24").exit_code == 0
    runs = imported_runs(import_project)
    assert len(runs) == 6
    assert {run.header.dataset.dataset_id for run in runs} == {load_dataset(ITEMS).dataset_id}
    assert {run.header.raw["source"]["tool"] for run in runs} == {"promptfoo", "inspect_ai", "lm-eval"}


def test_different_items_get_a_different_dataset_id(import_project, cli):
    cli("import", "inspect", *map(str, INSPECT_EVAL))
    cli("import", "inspect", *map(str, INSPECT_JSON))  # --limit 9: nine of the items
    assert len({run.header.dataset.dataset_id for run in imported_runs(import_project)}) == 2


LEADERBOARD = """
SELECT r.arm_id AS arm, s.evaluator, s.version, count(*) AS n, avg(s.score) AS mean
FROM scores s JOIN runs r USING (run_id)
WHERE r.dataset_id = ?
GROUP BY ALL ORDER BY s.evaluator, arm
"""


def test_imported_runs_query_together_from_a_duckdb_file(import_project, cli, tmp_path):
    for tool, *paths in ALL_TOOLS:
        cli("import", tool, *paths)
    (dataset_id,) = {run.header.dataset.dataset_id for run in imported_runs(import_project)}
    database = open_database(import_project / "runs", str(tmp_path / "evalsite.duckdb"))
    assert database.skipped == []
    board = {(r["evaluator"], r["arm"]): r for r in database.rows(LEADERBOARD, [dataset_id])}
    expected = {  # each tool's own figures (fixtures/external/README.md)
        ("exact", "model-a"): 17 / 24, ("exact", "model-b"): 10 / 24,  # promptfoo
        ("contains_expected", "model-a"): 17 / 24, ("contains_expected", "model-b"): 17 / 24,
        ("match", "openai-api/fake/model-a"): 0.7083, ("match", "openai-api/fake/model-b"): 0.4167,  # Inspect
        ("includes", "openai-api/fake/model-a"): 0.7083, ("includes", "openai-api/fake/model-b"): 0.7083,
        ("exact_match", "model-a"): 0.7083, ("exact_match", "model-b"): 0.4167,  # lm-eval
    }
    for key, mean in expected.items():
        assert board[key]["mean"] == pytest.approx(mean, abs=1e-4), key
    assert board[("match", "openai-api/fake/model-a")]["n"] == 48  # two epochs
    # within one tool both arms share each evaluator's version (comparable); across tools they never do
    versions = {}
    for (evaluator, _), row in board.items():
        versions.setdefault(evaluator, set()).add(row["version"])
    assert all(len(v) == 1 for v in versions.values())
    assert len({next(iter(v)) for v in versions.values()}) == len(versions)
    database.connection.close()
    reopened = open_database(import_project / "runs", str(tmp_path / "evalsite.duckdb"))
    assert reopened.rows("SELECT count(*) AS n FROM cases")[0]["n"] == 24 * 2 + 48 * 2 + 24 * 2


def test_the_reporting_commands_read_imported_runs(import_project, cli):
    result = cli("import", "lm-eval", str(LMEVAL), "--json")
    rows = json.loads(result.output)
    assert [(r["arm"], r["tool"], r["cases"], r["status"]) for r in rows] == [
        ("model-a", "lm-eval", 24, "completed"), ("model-b", "lm-eval", 24, "completed")]
    listing = json.loads(cli("runs", "--json").output)
    assert {r["run_id"] for r in listing} == {r["run_id"] for r in rows}
    shown = json.loads(cli("show", rows[0]["run_id"], "--json").output)
    assert shown["pass_rate"] == pytest.approx(17 / 24)
    assert cli("build").exit_code == 0


def test_usage_errors(import_project, cli):
    assert cli("import", "braintrust", str(PROMPTFOO / "results.json")).exit_code == 2
    assert cli("import", "promptfoo", "missing.json").exit_code == 2
    folder = cli("import", "promptfoo", str(PROMPTFOO))
    assert folder.exit_code == 1
    assert folder.output.strip() == f"Error: {PROMPTFOO} is a folder; give the promptfoo file(s) to import"


def test_a_scorer_file_that_is_not_a_regular_file_is_a_usage_error(import_project, cli, tmp_path):
    """--scorer-file /dev/zero was hashed forever, a named pipe blocked the import."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "q1", "input": "x", "score": 1}\n', encoding="utf-8")
    pipe = tmp_path / "score.pipe"
    os.mkfifo(pipe)
    for scorer in ("/dev/zero", str(pipe)):
        result = cli("import", "jsonl", str(rows), "--scorer-file", scorer)
        assert result.exit_code == 2
        assert f"Invalid value for '--scorer-file': {scorer} is not a regular file" in result.output
    assert not (import_project / "runs").exists()


@pytest.mark.parametrize("format_name", ["jsonl", "inspect"])
def test_a_path_that_is_neither_file_nor_folder_is_refused_as_such(import_project, cli, tmp_path, format_name):
    """/dev/null or a named pipe (what ``<(…)`` gives) was called a folder, or a folder with no logs in it."""
    pipe = tmp_path / "rows.pipe"
    os.mkfifo(pipe)
    for path in (pipe, Path(os.devnull)):
        result = cli("import", format_name, str(path))
        assert (result.exit_code, result.output) == (
            1, f"Error: {path}: not a regular file; give the {format_name} file(s) to import\n")
    assert not (import_project / "runs").exists()


def test_secrets_in_source_settings_are_not_copied(import_project, cli, tmp_path):
    data = json.loads((PROMPTFOO / "results.json").read_text())
    for provider in data["config"]["providers"]:
        provider["config"]["headers"] = {"Authorization": "Bearer sk-live-123"}
    path = tmp_path / "with-header.json"
    path.write_text(json.dumps(data))
    cli("import", "promptfoo", str(path))
    for run in imported_runs(import_project):
        assert "sk-live-123" not in (run.directory / "run.json").read_text()


# --- the readers ---------------------------------------------------------------------------

@pytest.mark.parametrize("chunk", [5, 97, 1 << 20])
@pytest.mark.parametrize("path, keys", [
    (PROMPTFOO / "results.json", ("results", "results")),
    (INSPECT_JSON[0], ("samples",)),
])
def test_the_stream_yields_what_json_load_reads_whatever_the_chunk_size(monkeypatch, chunk, path, keys):
    monkeypatch.setattr(jsonstream, "CHUNK_CHARS", chunk)
    stream = JsonArrayStream(path, keys)
    elements = list(stream)
    whole = json.loads(path.read_text())
    parent = whole
    for key in keys[:-1]:
        parent = parent[key]
    assert elements == parent.pop(keys[-1])
    assert stream.rest == whole and stream.found and not stream.truncated


TRICKY_ELEMENTS = [
    {"id": 123456789012345678901234567890, "text": "a line\n    }\n break", "n": [1, 2.5, -0.0]},
    {}, [], [[1], {"a": {}}], {"x": float("nan"), "y": float("inf")}, {"s": "caf\u00e9 \\ud800"},
    {"deep": {"er": [{"est": 1e-320}]}}, 7, "text", None,
]


@pytest.mark.parametrize("chunk", [5, 97, 1 << 20])
@pytest.mark.parametrize("indent", [None, 2, 4, "\t"])
def test_the_stream_reads_indented_and_compact_elements_as_json_load_does(monkeypatch, tmp_path, chunk, indent):
    """Elements of an indented document are cut at their closing line and decoded by orjson: the
    same values as the standard decoder, NaN, long integers and all (compared by repr)."""
    monkeypatch.setattr(jsonstream, "CHUNK_CHARS", chunk)
    path = tmp_path / "doc.json"
    document = {"meta": {"v": 3}, "results": {"results": TRICKY_ELEMENTS * 3, "after": [1]}}
    path.write_text(json.dumps(document, indent=indent), encoding="utf-8")
    decoded = []
    monkeypatch.setattr(jsonstream, "orjson_value", lambda data: decoded.append(data) or orjson_value(data))
    stream = JsonArrayStream(path, ("results", "results"))
    whole = json.loads(path.read_text(encoding="utf-8"))
    assert repr(list(stream)) == repr(whole["results"].pop("results"))
    assert stream.rest == whole
    if indent and chunk > 1000:  # the whole document in one chunk: every non-empty element to orjson first (in a run or alone)
        assert len(decoded) >= 12


def test_the_stream_steps_over_skipped_paths(monkeypatch):
    monkeypatch.setattr(jsonstream, "CHUNK_CHARS", 64)
    path = PROMPTFOO / "results.json"
    stream = JsonArrayStream(path, ("results", "results"), skip=("config.tests",))
    whole = json.loads(path.read_text())
    assert list(stream) == whole["results"].pop("results")
    del whole["config"]["tests"]
    assert stream.rest == whole


def test_the_stream_keeps_a_number_cut_by_a_chunk_boundary(monkeypatch, tmp_path):
    monkeypatch.setattr(jsonstream, "CHUNK_CHARS", 3)
    path = tmp_path / "n.json"
    path.write_text('{"a": {"b": [1, 22, 3333333333333], "c": -1.5e3}, "d": true}')
    stream = JsonArrayStream(path, ("a", "b"))
    assert list(stream) == [1, 22, 3333333333333]
    assert stream.rest == {"a": {"c": -1500.0}, "d": True}


@pytest.mark.parametrize("chunk", range(1, 40))
def test_the_stream_keeps_a_number_cut_after_its_point_or_exponent(monkeypatch, tmp_path, chunk):
    """``0.`` or ``1e-`` at a chunk's end is the start of a number, not a shorter one and junk."""
    monkeypatch.setattr(jsonstream, "CHUNK_CHARS", chunk)
    path = tmp_path / "n.json"
    path.write_text('{"a": {"b": [{}, 0.0, 1e5, -2.5e-3, 7E+2]}, "c": 0.25, "d": [1.5, -0.125e1]}')
    stream = JsonArrayStream(path, ("a", "b"))
    whole = json.loads(path.read_text())
    assert list(stream) == whole["a"].pop("b")
    assert stream.rest == whole


def test_the_stream_reports_a_cut_outside_the_array_as_an_error(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text('{"a": {"b": [1, 2]}, "meta": {"x": "unfinish')
    with pytest.raises(SourceError, match="ends in the middle of its JSON"):
        list(JsonArrayStream(path, ("a", "b")))


def test_the_stream_names_a_wrong_shape(tmp_path):
    path = tmp_path / "shape.json"
    path.write_text('{"a": [1, 2]}')
    with pytest.raises(SourceError, match=r"line 1: a: expected an object"):
        list(JsonArrayStream(path, ("a", "b")))


LINES_ORJSON_READS_OTHERWISE = [
    '{"id": 123456789012345678901234567890, "n": -9223372036854775809, "u": 18446744073709551615}',
    '{"x": NaN, "y": Infinity, "z": -Infinity, "big": 1e400}',
    '{"text": "\\ud800 alone", "pair": "\\ud83d\\ude00", "dup": 1, "dup": 2}',
    '{"f": [0.1, 1e-320, 2.5e308, 1.7976931348623157e308, -0.0, 5e-324], "s": "caf\u00e9 \u2603"}',
]


def test_json_lines_reads_every_line_as_the_standard_decoder_does(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(LINES_ORJSON_READS_OTHERWISE) + "\n", encoding="utf-8")
    read = [record for _, record in jsonstream.JsonLines(path)]
    expected = [json.loads(line) for line in LINES_ORJSON_READS_OTHERWISE]
    assert repr(read) == repr(expected)  # repr: NaN is not equal to itself, and 1 == 1.0
    assert [type(v) for v in read[0].values()] == [int, int, int]


def test_zstd_zip_round_trip_and_crc_check(tmp_path):
    members = [("header.json", b'{"version": 2}'), ("samples/x_epoch_1.json", b"{}" * 1000)]
    path = tmp_path / "log.eval"
    write_zstd_zip(path, members)
    with EvalZip(path) as log:
        assert [(name, log.read(name)) for name in log.names()] == members
    data = bytearray(path.read_bytes())
    crc_at = data.index(b"PK\x01\x02") + 16  # the central directory's CRC of the first member
    data[crc_at] ^= 0xFF
    path.write_bytes(bytes(data))
    with EvalZip(path) as log, pytest.raises(SourceError, match="member header.json is corrupt"):
        log.read("header.json")


def test_compare_pairs_two_arms_of_one_tool_and_refuses_two_tools(import_project, cli):
    for tool, *paths in ALL_TOOLS[:2]:
        assert cli("import", tool, *paths, "--dataset", "items-24").exit_code == 0
    runs = {(run.header.raw["source"]["tool"], run.header.arm_id): run.run_id for run in imported_runs(import_project)}
    inspect_a, inspect_b = runs[("inspect_ai", "openai-api/fake/model-a")], runs[("inspect_ai", "openai-api/fake/model-b")]
    result = cli("compare", inspect_b, "--baseline", inspect_a, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["regression"]["summary"]
    # model-b fails exact match on the seven "k" items model-a passes (see the fixtures' README)
    assert summary["compared"] == 24 and summary["regressed"] == 7 and summary["improved"] == 0
    assert summary["mean_delta"] < 0 and summary["p_value"] < 0.05
    refused = cli("compare", runs[("promptfoo", "model-a")], "--baseline", inspect_a)
    assert refused.exit_code == 1 and "Error: not comparable: evaluator" in refused.stderr


def test_the_leaderboard_ranks_imported_arms_with_the_tool_reported_means(import_project, cli):
    assert cli("import", "lm-eval", str(LMEVAL), "--dataset", "items-24").exit_code == 0
    board = json.loads(cli("leaderboard", "--json").stdout)
    means = {arm["summary"]["arm"]["arm_id"]: arm["summary"]["mean"] for arm in board["arms"]}
    # lm-eval's own exact_match,none: 0.7083 and 0.4167 (the fixtures' README)
    assert means == pytest.approx({"model-a": 17 / 24, "model-b": 10 / 24})
    assert board["n_items"] == 24


def test_an_imports_drafts_are_let_go_before_the_collector_runs_again(import_project, cli, monkeypatch):
    """What an import made while the collector was paused sits in its youngest generation: the
    drafts (items, rows, tallies) are freed before the collector is enabled, not walked by its
    first collection."""
    drafts: list[weakref.ref[Any]] = []
    alive_when_enabled: list[int] = []
    made = writer.SourceImport._draft

    def draft(self: writer.SourceImport, key: str) -> Any:
        found = made(self, key)
        drafts.append(weakref.ref(found))
        return found

    def enable() -> None:
        alive_when_enabled.append(sum(ref() is not None for ref in drafts))
        gc.enable()

    monkeypatch.setattr(writer.SourceImport, "_draft", draft)
    monkeypatch.setattr(collector, "gc", SimpleNamespace(isenabled=gc.isenabled, disable=gc.disable, enable=enable))
    assert cli("import", "promptfoo", str(PROMPTFOO / "results.json")).exit_code == 0
    assert len(drafts) == 2 and alive_when_enabled == [0]


@pytest.mark.parametrize("format_name", ["promptfoo", "inspect", "lm-eval"])
def test_a_json_document_starting_with_a_byte_order_mark_imports_as_one_without(import_project, cli, tmp_path,
                                                                                 format_name):
    """A UTF-8 BOM (what Windows tools write first) before a promptfoo or Inspect JSON document was
    refused as 'the document: expected an object', and lm-eval's results as not JSON; JSON Lines
    and CSV files already read past it."""
    folder = shutil.copytree(LMEVAL / "model-a", tmp_path / "lmeval")
    original = {"promptfoo": PROMPTFOO / "results.json", "inspect": INSPECT_JSON[0],
                "lm-eval": next(folder.glob("results_*.json"))}[format_name]
    marked = original if format_name == "lm-eval" else tmp_path / original.name
    marked.write_bytes(b"\xef\xbb\xbf" + original.read_bytes())
    result = cli("import", format_name, str(marked), "--json")
    assert result.exit_code == 0, result.output
    unmarked = cli("import", format_name, str(original if format_name != "lm-eval" else LMEVAL / "model-a"), "--json")
    counts = [sorted((row["arm"], row["cases"], row["mean_score"]) for row in json.loads(output.output))
              for output in (result, unmarked)]
    assert counts[0] == counts[1] and counts[0]

