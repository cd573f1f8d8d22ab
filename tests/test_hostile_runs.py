"""Hostile run files never give a traceback: every reading command reports a bad run by id with the
reason and goes on with the good ones (issue 15, defects 5 and 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile_support import ARMS, READERS, make_project
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsite.analysis.db import open_database
from evalsite.errors import RunLogError
from evalsite.runlog.store import read_run, scan_runs


def rewrite_case(folder: Path, **changes) -> None:
    path = folder / "cases.jsonl"
    lines = path.read_text().splitlines()
    lines[0] = json.dumps({**json.loads(lines[0]), **changes})
    path.write_text("\n".join(lines) + "\n")


def rewrite_header(folder: Path, **changes) -> None:
    path = folder / "run.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def directory_named_run_json(folder: Path) -> None:
    (folder / "run.json").unlink()
    (folder / "run.json").mkdir()


#: The issue's mutations: what is done to a run, and the reason a reader gives (after the run's id).
HEADER_MUTATIONS = {
    "integer run_id": (lambda f: rewrite_header(f, run_id=5), "/run.json: run_id must be a string, not a number 5"),
    "dataset a string": (lambda f: rewrite_header(f, dataset="x"), "/run.json: dataset must be an object, not a string 'x'"),
    "end.json a string": (lambda f: (f / "end.json").write_text('"completed"'),
                          "/end.json: end.json must be a JSON object, not a string"),
    "directory named run.json": (directory_named_run_json, "/run.json: is a directory, not a file"),
    "lone surrogate in run.json": (lambda f: rewrite_header(f, arm_id="a\ud83d"),
                                   "/run.json: holds a lone surrogate \\ud83d (not valid Unicode text)"),
}
CASE_MUTATIONS = {
    "non-object case line": (lambda f: (f / "cases.jsonl").open("a").write("[1, 2]\n"),
                             "/cases.jsonl: line 7: a case must be a JSON object, not a list; skipped"),
    "wrong types in scores": (lambda f: rewrite_case(f, scores=[{"evaluator": "exact", "score": "high"}]),
                              "/cases.jsonl: line 1: scores[0].score must be a number, not a string 'high'; skipped"),
    # half an emoji's escape: json reads it, UTF-8 (pyarrow, the site) cannot hold it, DuckDB refuses the line
    "lone surrogate": (lambda f: rewrite_case(f, output="x\ud83d"),
                       "/cases.jsonl: line 1 holds a lone surrogate \\ud83d (not valid Unicode text); skipped"),
}


@pytest.mark.parametrize("name", sorted(HEADER_MUTATIONS))
def test_a_run_with_a_bad_header_or_footer_is_skipped_by_every_reader(cli, hostile_project, name):
    mutate, reason = HEADER_MUTATIONS[name]
    bad, good = sorted((hostile_project / "runs").iterdir())
    mutate(bad)
    expected = f"warning: skipped run {bad.name}{reason}"
    for command in READERS:
        result = cli(*command)
        assert result.exit_code == 0, (command, result.output)
        assert expected in result.stderr.splitlines(), (command, result.stderr)
    assert (hostile_project / "site/runs" / f"{good.name}.html").is_file()
    assert not (hostile_project / "site/runs" / f"{bad.name}.html").exists()
    compared = cli("compare", good.name)  # the only other run is unreadable: no baseline, said in one line
    assert compared.exit_code == 0 and expected in compared.stderr.splitlines()
    result = cli("validate")
    assert result.exit_code == 1
    assert f"runs/{bad.name}{reason}" in result.output.splitlines()
    shown = cli("show", bad.name)
    assert shown.exit_code == 1 and shown.stderr == f"Error: {bad.name}{reason}\n"


@pytest.mark.parametrize("name", sorted(CASE_MUTATIONS))
def test_a_bad_case_line_is_a_warning_and_the_run_is_still_read(cli, hostile_project, name):
    mutate, reason = CASE_MUTATIONS[name]
    bad, _ = sorted((hostile_project / "runs").iterdir())
    mutate(bad)
    for command in READERS:
        result = cli(*command)
        assert result.exit_code == 0, (command, result.output)
    assert (hostile_project / "site/runs" / f"{bad.name}.html").is_file()
    shown = cli("show", bad.name, "--json")
    assert shown.exit_code == 0 and f"warning: {bad.name}{reason}" in shown.stderr.splitlines()
    result = cli("validate")
    assert result.exit_code == 1 and f"runs/{bad.name}{reason}" in result.output.splitlines()


def test_an_item_id_of_more_digits_than_int_reads_is_read_by_every_command(cli, hostile_project):
    """A digit run of 5,000 digits in an item id (int() reads 4,300 from text) orders as a number
    rather than raising from the natural order's key: every reader, show, compare and validate."""
    first, second = sorted((hostile_project / "runs").iterdir())
    for run, item_id in ((first, "q" + "9" * 5000), (second, "q" + "0" * 10 + "9" * 5000)):
        rewrite_case(run, item_id=item_id)
    for command in (*READERS, ("show", first.name), ("compare", second.name, "--baseline", first.name), ("validate",)):
        result = cli(*command)  # an exception escapes the invoker
        assert result.exit_code == 0, (command, result.output)
    assert (hostile_project / "site/runs" / f"{first.name}.html").is_file()


def test_four_hand_corrupted_runs_and_one_good_run(cli, tmp_path, monkeypatch):
    hostile_project = make_project(cli, tmp_path / "p", ARMS)
    monkeypatch.chdir(hostile_project)
    folders = sorted((hostile_project / "runs").iterdir())
    by_arm = {json.loads((f / "run.json").read_text())["arm_id"]: f for f in folders}
    good = by_arm.pop("e")
    reasons = {}
    for folder, name in zip(by_arm.values(), sorted(HEADER_MUTATIONS)):
        mutate, reason = HEADER_MUTATIONS[name]
        mutate(folder)
        reasons[folder.name] = reason
    for command in READERS:  # the leaderboard of the one arm left among them
        result = cli(*command)
        assert result.exit_code == 0, (command, result.output)
        skipped = [line for line in result.stderr.splitlines() if line.startswith("warning: skipped run")]
        assert skipped == [f"warning: skipped run {run_id}{reason}" for run_id, reason in sorted(reasons.items())]
    assert (hostile_project / "site/runs" / f"{good.name}.html").is_file()
    assert [arm["arm_id"] for arm in cli.json("leaderboard")["arms"]] == ["e"]
    result = cli("validate")
    assert result.exit_code == 1
    assert [line for line in result.output.splitlines() if line.startswith("runs/")] == [
        f"runs/{run_id}{reason}" for run_id, reason in sorted(reasons.items())
    ]


def test_a_folder_a_kill_left_before_the_header_is_ignored(cli, hostile_project):
    leftover = hostile_project / "runs/20990101T000000Z-killed-0000"
    leftover.mkdir()
    (leftover / ".lock").write_text("")
    (leftover / ".run.json.77.tmp").write_text('{"run_id": ')
    assert cli("validate").exit_code == 0
    for command in READERS:
        result = cli(*command)
        assert result.exit_code == 0 and "killed" not in result.output + result.stderr


@pytest.mark.slow
def test_eight_cases_of_20_mb_output_are_read_by_every_command(cli, hostile_project):
    folder, _ = sorted((hostile_project / "runs").iterdir())
    first = json.loads((folder / "cases.jsonl").read_text().splitlines()[0])
    output = "x" * (20 * 1024 * 1024)
    lines = [json.dumps({**first, "item_id": f"q{i % 6}", "repeat": i // 6, "output": output}) for i in range(8)]
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n")
    result = cli("query", f"SELECT count(*) AS n, sum(length(output::VARCHAR)) AS size FROM cases WHERE run_id = '{folder.name}'",
                    "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"n": 8, "size": 8 * (len(output) + 2)}]  # JSON text: the quotes too
    runs = json.loads(cli("runs", "--json").output)
    assert {row["run_id"]: row["cases"] for row in runs}[folder.name] == 8
    for command in (("leaderboard",), ("build",)):
        result = cli(*command)
        assert result.exit_code == 0, (command, result.output)
        assert "skipped" not in result.stderr


# ----------------------------------------------------------------------------- fuzz

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
HEADER_KEYS = st.sampled_from(["run_id", "format_version", "dataset", "evaluators", "fingerprint", "config", "plan",
                               "arm_id", "started_at", "fingerprint_hash"])
CASE_KEYS = st.sampled_from(["item_id", "repeat", "scores", "score", "passed", "error", "latency_ms", "input_tokens",
                             "cost_usd", "output", "critical"])
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def one_line_naming(message: str, name: str) -> bool:
    return "\n" not in message and message.startswith(name)


@pytest.mark.slow
@FUZZ
@given(key=HEADER_KEYS, value=JSON, footer=st.none() | JSON)
def test_fuzzed_headers_and_footers_are_read_or_refused_in_one_line(hostile_pristine, hostile_project, key, value, footer):
    folder = sorted((hostile_project / "runs").iterdir())[0]
    original = hostile_pristine / "runs" / folder.name
    (folder / "run.json").write_text(json.dumps({**json.loads((original / "run.json").read_text()), key: value}))
    end = json.dumps(footer) if footer is not None else (original / "end.json").read_text()
    (folder / "end.json").write_text(end)
    try:
        run = read_run(folder)
    except RunLogError as exc:
        assert one_line_naming(exc.message, folder.name)
    else:
        assert run.header.run_id == value if key == "run_id" else run.run_id == folder.name
    runs, problems = scan_runs(hostile_project / "runs")
    assert len(runs) + len(problems) == 2 and all(one_line_naming(p, p.split("/")[0]) for p in problems)
    open_database(hostile_project / "runs").rows("SELECT * FROM runs")


@pytest.mark.slow
@FUZZ
@given(key=CASE_KEYS, value=JSON, line=JSON)
def test_fuzzed_case_lines_are_skipped_with_a_warning_and_never_break_the_views(hostile_pristine, hostile_project, key, value, line):
    folder = sorted((hostile_project / "runs").iterdir())[0]
    first = json.loads((hostile_pristine / "runs" / folder.name / "cases.jsonl").read_text().splitlines()[0])
    text = "\n".join([json.dumps({**first, key: value}), json.dumps(line), json.dumps(first)]) + "\n"
    (folder / "cases.jsonl").write_text(text)
    run = read_run(folder)
    assert 1 <= len(run.cases) <= 3 and len(run.cases) + len(run.warnings) == 3
    assert all(one_line_naming(w, f"{folder.name}/cases.jsonl: line ") for w in run.warnings)
    database = open_database(hostile_project / "runs")
    database.rows("SELECT * FROM cases")
    database.rows("SELECT * FROM scores")


def test_an_error_stored_as_type_and_message_reads_as_its_message(cli, hostile_project):
    folder, _ = sorted((hostile_project / "runs").iterdir())
    rewrite_case(folder, error={"type": "TimeoutError", "message": "timed out after 5 s"}, output=None)
    (case, *_), warnings = read_run(folder).cases, read_run(folder).warnings
    assert (case.error, case.error_type, warnings) == ("timed out after 5 s", "TimeoutError", [])
    assert cli("build").exit_code == 0
    page = (hostile_project / "site/runs" / f"{folder.name}.html").read_text()
    assert "timed out after 5 s" in page and "TimeoutError&#39;" not in page and "&#39;message&#39;" not in page
