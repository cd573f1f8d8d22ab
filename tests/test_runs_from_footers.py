"""``evalsite runs`` reads a finished run's figures from its footer while the footer's
``cases_sha256`` still holds, and summarises the cases of every other run; ``runs``, ``show`` and
``leaderboard`` import only what they print needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalsite.analysis.summary import summarise_run
from evalsite.runlog.store import read_run

LISTED = ("cases", "mean_score", "pass_rate")


def _listing(cli) -> dict[str, dict]:
    return {row["run_id"]: row for row in cli.json("runs")}


def _expected(directory: Path) -> dict:
    """The figures summarised independently from the run's cases, read by the Python reader."""
    summary = summarise_run(read_run(directory).cases)
    return {"cases": summary.cases, "mean_score": summary.mean_score, "pass_rate": summary.pass_rate}


def _runs(project: Path) -> list[Path]:
    return sorted(path for path in (project / "runs").iterdir() if (path / "end.json").exists())


def test_finished_runs_are_listed_with_their_cases_summary(example_with_runs, cli):
    listing = _listing(cli)
    assert len(listing) == 3
    for directory in _runs(example_with_runs):
        assert {name: listing[directory.name][name] for name in LISTED} == _expected(directory)


def test_the_footer_is_what_is_read_while_its_hash_holds(example_with_runs, cli):
    directory = _runs(example_with_runs)[0]
    footer = json.loads((directory / "end.json").read_text())
    footer["totals"]["mean_score"] = 0.123  # a footer whose totals were edited, its cases untouched
    (directory / "end.json").write_text(json.dumps(footer))
    assert _listing(cli)[directory.name]["mean_score"] == 0.123


def test_edited_interrupted_and_unhashed_runs_are_summarised_from_their_cases(example_with_runs, cli):
    edited, interrupted, unhashed = _runs(example_with_runs)
    lines = (edited / "cases.jsonl").read_text().splitlines(keepends=True)
    (edited / "cases.jsonl").write_text("".join(lines[:-7]))  # fewer cases than the footer counts
    (interrupted / "end.json").unlink()
    footer = json.loads((unhashed / "end.json").read_text())
    del footer["cases_sha256"]
    footer["totals"]["mean_score"] = 0.5  # without its hash the footer is not believed
    (unhashed / "end.json").write_text(json.dumps(footer))
    listing = _listing(cli)
    assert listing[edited.name]["cases"] == 173
    assert listing[interrupted.name]["status"] == "interrupted"
    for directory in (edited, interrupted, unhashed):
        assert {name: listing[directory.name][name] for name in LISTED} == _expected(directory)


def test_runs_are_listed_newest_first_with_their_identity(example_with_runs, cli):
    rows = cli.json("runs")
    assert [row["run_id"] for row in rows] == sorted((row["run_id"] for row in rows), reverse=True)
    header = json.loads((_runs(example_with_runs)[0] / "run.json").read_text())
    row = next(row for row in rows if row["run_id"] == header["run_id"])
    assert (row["arm"], row["experiment"], row["dataset_id"], row["status"], row["excluded"]) == (
        header["arm_id"], header["experiment"], header["dataset"]["dataset_id"], "completed", None)


def _loaded_by(project: Path, *args: str) -> set[str]:
    """The modules one command loaded, in a fresh interpreter."""
    probe = ("import contextlib, io, json, sys\nfrom evalsite.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             f"    main({list(args)!r}, standalone_mode=False)\n"
             "print(json.dumps(sorted(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=project)
    return set(json.loads(result.stdout.splitlines()[-1]))


def _packages(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def test_runs_and_show_load_no_scipy_duckdb_jinja_or_httpx(example_with_runs):
    run_id = _runs(example_with_runs)[0].name
    runs = _loaded_by(example_with_runs, "runs")
    assert not _packages(runs) & {"scipy", "duckdb", "jinja2", "httpx", "numpy", "pyarrow"}
    show = _loaded_by(example_with_runs, "show", run_id)
    assert not _packages(show) & {"scipy", "duckdb", "jinja2", "httpx"}


def test_the_leaderboard_loads_no_scipy_stats(example_with_runs):
    loaded = _loaded_by(example_with_runs, "leaderboard")
    assert "evalsite.analysis.verdict" in loaded  # it did compute the verdict
    assert not {name for name in loaded if name == "scipy.stats" or name.startswith("scipy.stats.")}
    assert not _packages(loaded) & {"jinja2", "httpx", "jsonschema"}
