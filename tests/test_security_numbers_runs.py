"""Numbers in run files from outside (issue 32, items 3 and 9): a forged case line whose cost,
latency, tokens or score is out of the documented range, or holds an integer past Python's 4,300
digits, is skipped with a reason like any malformed line, by the Python reader, the DuckDB views
and the columnar scan alike; no command gives a traceback; the writer never writes such a line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hostile_support import READERS, make_project

from evalsite.analysis.case_scan import scan_cases
from evalsite.analysis.db import open_database
from evalsite.analysis.summary import summarise_run
from evalsite.runlog.hashing import file_sha256
from evalsite.runlog.records import CASE_RANGES, bounded_case, well_typed_case
from evalsite.runlog.store import CASES_FILE, RunWriter, read_cases, read_header, read_run

MANY_DIGITS = "9" * 5000  # past Python's int-string limit: json.loads raises ValueError


@pytest.fixture(scope="module")
def pristine_numbers(cli, tmp_path_factory) -> Path:
    return make_project(cli, tmp_path_factory.mktemp("numbers") / "p")


@pytest.fixture
def numbers_project(pristine_numbers, tmp_path, monkeypatch) -> Path:
    copy = tmp_path / "p"
    shutil.copytree(pristine_numbers, copy)
    monkeypatch.chdir(copy)
    return copy


def forge(folder: Path, changes: list[str]) -> None:
    """Set fields of the first lines to raw JSON text (``"cost_usd": 1.7e308``), each key once."""
    path = folder / CASES_FILE
    lines = path.read_text().splitlines()
    for index, change in enumerate(changes):
        forged = json.loads("{" + change.replace(MANY_DIGITS, "0") + "}")
        case = {key: value for key, value in json.loads(lines[index]).items() if key not in forged}
        lines[index] = json.dumps(case)[:-1] + ", " + change + "}"
    path.write_text("\n".join(lines) + "\n")


FORGERIES = {
    "two costs of 1.7e308": (['"cost_usd": 1.7e308', '"cost_usd": 1.7e308'],
                             "line 1: cost_usd must be a number from 0 to 1e+06, not a number 1.7e+308"),
    "two latencies of 1.7e308": (['"latency_ms": 1.7e308', '"latency_ms": 1.7e308'],
                                 "line 1: latency_ms must be a number from 0 to 2.592e+09, not a number 1.7e+308"),
    "tokens past 1e9": (['"input_tokens": 10000000000', '"output_tokens": 18446744073709551615'],
                        "line 1: input_tokens must be an integer from 0 to 1000000000, not a number 10000000000"),
    "a negative cost": (['"cost_usd": -5'], "line 1: cost_usd must be a number from 0 to 1e+06, not a number -5"),
    "a score of 1e300": (['"score": 1e300', '"scores": [{"evaluator": "exact", "score": -1e300}]'],
                         "line 1: score must be a number from -1e+12 to 1e+12, not a number 1e+300"),
    "a many-digit cost": ([f'"cost_usd": {MANY_DIGITS}', f'"latency_ms": -{MANY_DIGITS}'],
                          "line 1 holds an integer of more than 4300 digits"),
    "a many-digit output": ([f'"output": [{MANY_DIGITS}]'], "line 1 holds an integer of more than 4300 digits"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_forged_out_of_range_line_is_skipped_with_a_reason_by_every_command(cli, numbers_project, name):
    changes, reason = FORGERIES[name]
    bad, good = sorted((numbers_project / "runs").iterdir())
    forge(bad, changes)
    warning = f"warning: {bad.name}/cases.jsonl: {reason}; skipped"
    kept = 6 - len(changes)
    for command in (*READERS, ("show", bad.name), ("compare", bad.name, "--baseline", good.name)):
        result = cli(*command)
        assert result.exception is None or isinstance(result.exception, SystemExit), (command, result.output)
        assert result.exit_code == 0, (command, result.output)
    shown = cli("show", bad.name, "--json")
    assert warning in shown.stderr.splitlines()
    assert json.loads(shown.stdout)["cases"] == kept
    counted = cli.json("query", f"SELECT count(*) AS n FROM cases WHERE run_id = '{bad.name}'")
    assert counted == [{"n": kept}]  # the DuckDB views leave out exactly the lines the reader skips
    validated = cli("validate")
    assert validated.exit_code == 1 and f"runs/{bad.name}/cases.jsonl: {reason}; skipped" in validated.output.splitlines()


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_the_columnar_scan_reads_a_forged_run_as_the_python_reader_does(numbers_project, name):
    bad, _ = sorted((numbers_project / "runs").iterdir())
    forge(bad, FORGERIES[name][0])
    python = read_cases(bad / CASES_FILE)
    expected = json.dumps(summarise_run(python).to_json(), sort_keys=True, default=str)
    assert json.dumps(summarise_run(scan_cases(bad).columns).to_json(), sort_keys=True, default=str) == expected
    database = open_database(numbers_project / "runs")
    assert database.rows("SELECT count(*) AS n FROM cases WHERE run_id = ?", [bad.name]) == [{"n": len(python)}]


def test_the_views_keep_a_number_at_the_edge_of_its_range(numbers_project):
    bad, _ = sorted((numbers_project / "runs").iterdir())
    forge(bad, [f'"cost_usd": {CASE_RANGES["cost_usd"][1]}, "latency_ms": {CASE_RANGES["latency_ms"][1]}',
                '"input_tokens": 1000000000, "score": -1e12'])
    assert len(read_cases(bad / CASES_FILE)) == 6
    database = open_database(numbers_project / "runs")
    assert database.rows("SELECT count(*) AS n FROM cases WHERE run_id = ?", [bad.name]) == [{"n": 6}]
    summary = summarise_run(scan_cases(bad).columns)
    assert summary.cost.known == 1e6


def test_the_writer_records_an_out_of_range_number_as_null_and_names_it(tmp_path):
    writer = RunWriter.create(tmp_path, "a", {"format_version": 1, "run_id": "r", "arm_id": "a"})
    case = {"item_id": "q0", "repeat": 0, "error": None, "cost_usd": 2e6, "latency_ms": float("inf"),
            "scores": [{"evaluator": "plugin", "score": float("nan")}, {"evaluator": "exact", "score": 1.0}]}
    written = writer.append_case(case)
    writer.finish({"status": "completed"})
    text = (writer.directory / CASES_FILE).read_text()
    assert "Infinity" not in text and "NaN" not in text
    (read,) = read_run(writer.directory).cases
    assert read.raw == written and well_typed_case(written)
    assert read.cost_usd is None and read.latency_ms is None and read.scores[0].score is None
    assert read.error == ("latency_ms=inf is out of range (0 to 2.592e+09), recorded as null; "
                          "cost_usd=2000000.0 is out of range (0 to 1e+06), recorded as null")
    assert read.scores[0].error == "score=nan is out of range (-1e+12 to 1e+12), recorded as null"
    assert read.scores[1].score == 1.0 and read.scores[1].error is None
    assert json.loads((writer.directory / "end.json").read_text()).get("cases_sha256")  # every line well typed


def test_a_case_in_range_is_written_as_it_is():
    case = {"item_id": "q0", "repeat": 0, "cost_usd": 1e6, "input_tokens": 10**9, "scores": [{"evaluator": "e", "score": 1}]}
    assert bounded_case(case) is case


def test_an_integer_too_long_to_write_is_recorded_as_null_and_named(tmp_path):
    writer = RunWriter.create(tmp_path, "a", {"format_version": 1, "run_id": "r", "arm_id": "a"})
    written = writer.append_case({"item_id": "q0", "repeat": 0, "error": None, "output": {"n": [10**5000, 10**4000]}})
    writer.finish({"status": "completed"})
    (read,) = read_run(writer.directory).cases
    assert read.raw == written and read["output"] == {"n": [None, 10**4000]}
    assert read.error == "output.n[0] is an integer of more than 4300 digits, recorded as null"


def test_text_that_is_not_unicode_is_written_with_the_replacement_character(tmp_path):
    """A lone surrogate (an invalid byte decoded with surrogateescape, half an emoji) has no UTF-8:
    the writer puts U+FFFD in its place, keys too, and joins a pair held as two code points."""
    writer = RunWriter.create(tmp_path, "a", {"format_version": 1, "run_id": "r", "arm_id": "a", "config": {"k": "x\ud83d"}})
    output = b"caf\xff".decode("utf-8", "surrogateescape")
    written = writer.append_case({"item_id": "q0", "repeat": 0, "error": None, "output": output,
                                  "scores": [{"evaluator": "e", "score": 1, "detail": "x\ud83d\ude00", "label": "\ud83d"}],
                                  "transcript": {"k\udc80": ["\ude00"]}})
    writer.finish({"status": "completed"})
    (read,) = read_run(writer.directory).cases
    assert read.raw == written and read["output"] == "caf\ufffd"
    assert read.raw["scores"][0]["detail"] == "x\U0001f600" and read.raw["scores"][0]["label"] == "\ufffd"
    assert read.raw["transcript"] == {"k\ufffd": ["\ufffd"]}
    assert read_header(writer.directory).config == {"k": "x\ufffd"}  # run.json and end.json too
    assert json.loads((writer.directory / "end.json").read_text()).get("cases_sha256")  # the line is well typed


def test_a_forged_run_whose_footer_vouches_for_its_lines_breaks_no_command(cli, numbers_project):
    """A forger can recompute ``cases_sha256``: the views then read the file unchecked, and the
    figures built on them still leave its out-of-range numbers out instead of overflowing."""
    bad, good = sorted((numbers_project / "runs").iterdir())
    forge(bad, ['"cost_usd": 1.7e308', '"cost_usd": 1.7e308', '"latency_ms": 1.7e308', '"latency_ms": 1.7e308'])
    footer = json.loads((bad / "end.json").read_text())
    (bad / "end.json").write_text(json.dumps({**footer, "cases_sha256": file_sha256(bad / CASES_FILE)}))
    for command in (*READERS, ("show", bad.name), ("compare", bad.name, "--baseline", good.name)):
        result = cli(*command)
        assert result.exception is None or isinstance(result.exception, SystemExit), (command, result.output)
        assert result.exit_code == 0, (command, result.output)
