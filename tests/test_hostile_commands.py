"""Hostile input to the less-travelled commands (review, merge, compact, ci, plan-size, the width of
the terminal): each refusal is one line naming the culprit, never a traceback, and writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def run_ids(root: Path) -> list[str]:
    return sorted(path.name for path in (root / "runs").iterdir() if path.is_dir())


@pytest.mark.parametrize("command, field", [
    (("runs", "--exclude", "RUN", "--reason", "scratch \udcff"), "exclude of RUN not recorded: reason 'scratch \\udcff'"),
    (("review", "import", "ratings.jsonl", "--reviewer", "\udcff"), "review of RUN not recorded: by '\\udcff'"),
])
def test_command_line_text_that_is_not_utf8_is_refused_before_a_decision_is_written(hostile_project, cli, command, field):
    """A shell passes bytes that are not UTF-8 as lone surrogates (\\udcff for 0xff): appending such a
    reason or reviewer to runs/decisions.jsonl was a UnicodeEncodeError traceback."""
    run = run_ids(hostile_project)[0]
    Path("ratings.jsonl").write_text(f'{{"run_id": "{run}", "item_id": "q0", "repeat": 0, "rating": "pass"}}\n')
    result = cli(*(part.replace("RUN", run) for part in command))
    assert (result.exit_code, result.output) == (
        1, f"Error: {field.replace('RUN', run)} holds a lone surrogate \\udcff (bytes that are not UTF-8 text)\n")
    assert not (hostile_project / "runs/decisions.jsonl").exists()


@pytest.mark.parametrize("command", [
    ("plan-size", "--delta", "0.1", "--sims", "10"), ("leaderboard",), ("rank-stability",), ("bootstrap", "@latest"),
    ("family-test", "a@latest", "--vs", "b@latest"), ("judge-agreement",),
])
def test_a_negative_seed_is_a_usage_error_naming_the_option(hostile_project, cli, command):
    """numpy's generators take no negative seed: each of these ended in 'ValueError: expected
    non-negative integer' (a traceback, or plan-size's one line naming no option)."""
    result = cli(*command, "--seed", "-1")
    assert result.exit_code == 2 and "Invalid value for '--seed': -1 is not in the range x>=0." in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("text, why", [
    ("[" * 100_000 + "]" * 100_000, "maximum recursion depth exceeded"),
    ("[" + "9" * 5000 + "]", "Exceeds the limit (4300 digits)"),
    ('[{"run_id": null}]', "each row must be an object whose run_id is a string"),
    ('{"run_id": "x"}', "each row must be an object whose run_id is a string"),
])
def test_ci_summary_from_a_file_that_is_no_list_of_runs_is_one_line(hostile_project, cli, text, why):
    """Deep nesting and a 5,000-digit integer were tracebacks; a null run_id was looked up as the run 'None'."""
    Path("runs.json").write_text(text)
    result = cli("ci", "summary", "--from", "runs.json", "-o", "summary.md", "--no-claims")
    assert result.exit_code == 1 and len(result.output.splitlines()) == 1, result.output
    assert result.output.startswith("Error: runs.json: not the JSON list of runs `evalsite run --json` prints (")
    assert why in result.output and not Path("summary.md").exists()


@pytest.mark.parametrize("command", [("review", "export", "--out"), ("schema", "--write")])
def test_a_file_written_under_a_file_or_over_a_folder_is_one_line(hostile_project, cli, command):
    """review export --out and schema --write made the file's folder with mkdir and wrote with
    write_text: a path under a file (FileExistsError) or a folder (IsADirectoryError) was a traceback."""
    Path("notes.txt").write_text("mine\n")
    under = cli(*command, "notes.txt/out.json")
    assert (under.exit_code, under.output) == (1, "Error: notes.txt/out.json: cannot make its folder notes.txt: File exists\n")
    if command[0] == "review":  # schema's option refuses a folder itself (click.Path(dir_okay=False))
        over = cli(*command, "runs")
        assert (over.exit_code, over.output) == (1, "Error: runs: cannot write: Is a directory\n")
    assert Path("notes.txt").read_text() == "mine\n" and Path("runs").is_dir()


def test_compact_to_the_runs_folder_itself_is_refused_and_counts_stay_true(hostile_project, cli):
    """Partitions written under runs/ itself are read beside the run folders they came from: every
    run was listed twice and every query counted its cases twice, silently."""
    cases = cli("query", "SELECT count(*) AS n FROM cases", "--json")
    for folder in ("runs", "runs/", str(hostile_project / "runs")):
        result = cli("compact", "--to", folder)
        assert result.exit_code == 1, result.output
        assert result.output == (f"Error: compact --to {folder}: is the runs folder compacted from, whose readers would "
                                 "read each run twice (its folder and its partition); name another folder\n")
    assert sorted(path.name for path in (hostile_project / "runs").iterdir()) == run_ids(hostile_project)
    assert cli("query", "SELECT count(*) AS n FROM cases", "--json").output == cases.output


@pytest.mark.parametrize("folder, message", [
    ("", "compact --to: the folder is empty; name the folder to write partitions under"),
    ("notes.txt", "notes.txt/dataset=d@{id}/run={run}: cannot make the folder: Not a directory"),
])
def test_compact_to_no_folder_is_one_line(hostile_project, cli, folder, message):
    """An empty --to (an unset variable in a script) wrote partitions into the working folder; a
    file as --to was a NotADirectoryError traceback."""
    Path("notes.txt").write_text("mine\n")
    run = run_ids(hostile_project)[0]
    dataset = cli.json("show", run)["dataset_id"].removeprefix("d@")
    result = cli("compact", run, "--to", folder)
    assert (result.exit_code, result.output) == (1, f"Error: {message.format(id=dataset, run=run)}\n")
    assert Path("notes.txt").read_text() == "mine\n" and not list(hostile_project.glob("dataset=*"))


def test_compact_to_never_writes_outside_its_folder_for_a_forged_dataset_id(hostile_project, cli, tmp_path):
    """The partition's folder is named by the run.json's dataset id: one edited to hold '../' wrote
    the run's Parquet outside --to (found by the session's audit: dataset=x/../../escaped)."""
    run = run_ids(hostile_project)[0]
    header = hostile_project / "runs" / run / "run.json"
    data = json.loads(header.read_text())
    data["dataset"]["dataset_id"] = "x/../../escaped"
    header.write_text(json.dumps(data))
    result = cli("compact", run, "--to", "parts")
    assert result.exit_code == 1 and len(result.output.splitlines()) == 1, result.output
    assert result.output.startswith(f"Error: '{run}': its dataset_id 'x/../../escaped' cannot name a folder"), result.output
    assert not (hostile_project / "escaped").exists() and not list(hostile_project.rglob("*.parquet"))


@pytest.fixture
def sharded_batch(hostile_project, cli) -> list[Path]:
    """The project with a batch of two shard runs per arm beside its two runs: the shards' folders."""
    before = set(run_ids(hostile_project))
    for shard in ("1/2", "2/2"):
        cli("run", "experiments/e.yaml", "--shard", shard)
    return [hostile_project / "runs" / run for run in run_ids(hostile_project) if run not in before]


def edit_header(folder: Path, change) -> None:
    header = json.loads((folder / "run.json").read_text())
    change(header)
    (folder / "run.json").write_text(json.dumps(header))


@pytest.mark.parametrize("change, culprit", [
    (lambda h: h.update(shard="2/2"), "shard must be an object, not a string '2/2'"),
    (lambda h: h["shard"].update(count="2"), "shard.count must be an integer >= 1, not a string '2'"),
    (lambda h: h["shard"].update(index=[1]), "shard.index must be an integer from 1 to 2, not a list [1]"),
    (lambda h: h.pop("config_id"), "config_id is missing"),
    (lambda h: h.pop("started_at"), "started_at is missing"),
    (lambda h: h["plan"].update(items="6"), "plan.items must be an integer >= 0, not a string '6'"),
])
def test_merge_names_a_shard_header_field_it_cannot_use(hostile_project, cli, sharded_batch, change, culprit):
    """A hand-edited shard run.json (the fields merging reads) was a TypeError or KeyError traceback."""
    before = sorted(hostile_project.rglob("*"))
    edit_header(sharded_batch[0], change)
    result = cli("merge")
    assert (result.exit_code, result.output) == (1, f"Error: {sharded_batch[0].name}/run.json: {culprit}\n")
    assert sorted(hostile_project.rglob("*")) == before, "nothing written, nothing moved"


def test_merge_never_moves_shards_out_of_the_runs_folder(hostile_project, cli, sharded_batch):
    """The batch id names the folder under runs/.merged/ the merged shards move to: '../../outside'
    moved every shard run out of the runs folder (out of the project, with more '..')."""
    for folder in sharded_batch:
        edit_header(folder, lambda h: h.update(batch_id="../../outside"))
    result = cli("merge")
    assert (result.exit_code, result.output) == (
        1, f"Error: {sharded_batch[0].name}/run.json: batch_id must be a batch id (a folder name), not a string '../../outside'\n")
    assert all(folder.is_dir() for folder in sharded_batch) and not (hostile_project / "outside").exists()


@pytest.mark.parametrize("sql", ["", ";", " ;; ", "/* nothing */"])
def test_query_without_a_statement_is_one_line(hostile_project, cli, sql):
    """DuckDB returns no cursor for text holding no statement: that was an AttributeError traceback."""
    result = cli("query", sql)
    assert (result.exit_code, result.output) == (1, f"Error: query: {sql!r} holds no SQL statement\n")


def test_query_keeps_every_column_of_a_name_given_twice(hostile_project, cli):
    """Rows were dicts keyed by column name: 'SELECT 1 AS a, 2 AS a' printed 2 under both headers,
    and its JSON and CSV held only {"a": 2}."""
    sql = "SELECT 1 AS a, 2 AS a, 3 AS a_1"
    assert cli.json("query", sql) == [{"a": 1, "a_1": 2, "a_1_1": 3}]
    assert cli.json("query", "SELECT 1 AS a, 2 AS a, 3 AS a") == [{"a": 1, "a_1": 2, "a_2": 3}]  # as DuckDB names them
    assert cli("query", sql, "--csv").output == "a,a_1,a_1_1\n1,2,3\n"
    assert cli("query", sql).output.split("\n")[1].split() == ["1", "2", "3"]


@pytest.mark.parametrize("lock, reason", [
    ("[" * 100_000 + "]" * 100_000, "unreadable lock file: maximum recursion depth exceeded"),
    ('{"dataset_id": "d", "items": [], "x": ' + "9" * 5000 + "}", "unreadable lock file: Exceeds the limit (4300 digits)"),
    (None, "unreadable lock file: [Errno 21] Is a directory"),
    ('{"dataset_id": "d", "items": [1], "lock_version": 1}', "items[0] is not an item's hashes (needs item_id and sha strings): 1"),
])
def test_dataset_verify_names_a_lock_it_cannot_read(hostile_project, cli, lock, reason):
    """A lock nested 100,000 deep, holding a 5,000-digit integer, a folder, or an item that is no
    object: each was a traceback (RecursionError, ValueError, IsADirectoryError, TypeError)."""
    path = Path("data/d.jsonl.lock.json")
    if lock is None:
        path.mkdir()
    else:
        path.write_text(lock)
    result = cli("dataset", "verify", "data/d.jsonl")
    assert result.exit_code == 1 and len(result.output.splitlines()) == 1, result.output
    assert result.output.startswith(f"Error: {path}: {reason}"), result.output


@pytest.mark.parametrize("days, exit_code, output", [
    ("nan", 2, "Invalid value for '--older-than': nan is not a finite number"),
    ("inf", 2, "Invalid value for '--older-than': inf is not a finite number"),
    ("1e309", 2, "Invalid value for '--older-than': inf is not a finite number"),
    ("1e12", 0, "removed 0 cached responses"),
])
def test_cache_prune_older_than_no_date_reaches(hostile_project, cli, days, exit_code, output):
    """timedelta takes no NaN and a datetime reaches back only to year 1: --older-than nan, inf,
    1e309 and 1e12 were ValueError and OverflowError tracebacks. No number of days is not finite;
    nothing is older than a span no date reaches."""
    from evalsite.execute.cache import ResponseCache, cache_dir

    cache = ResponseCache(cache_dir(hostile_project))
    cache.put("k" * 64, {"recorded_at": "2020-01-01T00:00:00+00:00", "response": {"text": "4"}})
    result = cli("cache", "prune", "--older-than", days)
    assert result.exit_code == exit_code and output in result.output and "Traceback" not in result.output
    assert len(cache.entries()) == 1


@pytest.mark.parametrize("command", [
    ("leaderboard", "--alpha", "nan"),
    ("family-test", "RUN", "--alpha", "nan"),
    ("bootstrap", "RUN", "--confidence", "nan"),
    ("compare", "RUN", "--threshold", "nan"),
    ("compare", "RUN", "--noise", "inf"),
    ("compare", "RUN", "--alpha", "nan"),
    ("plan-size", "--delta", "0.1", "--sd", "nan"),
    ("plan-size", "--delta", "0.1", "--margin", "inf"),
    ("plan-size", "--delta", "inf"),
    ("run", "experiments/m.yaml", "--max-cost", "nan"),
])
def test_a_number_option_that_is_not_finite_is_a_usage_error_naming_it(hostile_project, cli, command):
    """click's FloatRange compares NaN with nothing, so 'nan' passed every bound: leaderboard --alpha
    nan was a ValueError traceback, compare --threshold nan compared every change with NaN."""
    command = tuple(run_ids(hostile_project)[0] if part == "RUN" else part for part in command)
    option = [part for part in command if part.startswith("--")][-1]
    result = cli(*command)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output and "is not a finite number" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("location, found", [("no-such-runs", "no such folder"), ("evalsite.toml", "not a folder")])
def test_a_runs_location_that_is_no_folder_is_one_line_not_an_empty_project(hostile_project, cli, monkeypatch, location, found):
    """--runs (or EVALSITE_RUNS, or [store] runs) naming a missing folder or a file read as a
    project with no runs: an empty leaderboard, a site of no runs, after a typo."""
    (hostile_project / "evalsite.toml").touch()
    for command in (("--runs", location, "runs"), ("--runs", location, "leaderboard"), ("--runs", location, "build")):
        result = cli(*command)
        assert result.exit_code == 1, result.output
        assert result.output == f"Error: runs location {location}: {found} ({hostile_project / location})\n"
    monkeypatch.setenv("EVALSITE_RUNS", location)
    assert cli("show", run_ids(hostile_project)[0]).exit_code == 1
    monkeypatch.delenv("EVALSITE_RUNS")
    assert cli("--runs", "runs", "runs").exit_code == 0
