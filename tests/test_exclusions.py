"""``evalsite runs --exclude/--include``: a scratch run (here on a 10-item slice of the dataset,
another dataset id) kept out of leaderboards, claims and baselines, recorded with its reason."""

from __future__ import annotations

import json

from evalsite.analysis.baselines import BaselineResolver
from evalsite.project import find_project
from evalsite.runlog.store import scan_runs


def _scratch_run(cli) -> str:
    done = cli("run", "experiments/arithmetic.yaml", "--arm", "careful", "--set", "dataset.limit=10", "--set", "repeat=1",
               "--allow-failures")
    assert done.exit_code == 0, done.output
    [scratch] = [row["run_id"] for row in cli.json("runs") if row["cases"] == 10]
    return scratch


def test_an_excluded_scratch_run_leaves_the_leaderboard_to_the_real_dataset(cli, example_with_runs):
    scratch = _scratch_run(cli)
    asked = cli("leaderboard")
    assert asked.exit_code == 2 and "2 datasets have runs" in asked.stderr

    excluded = cli("runs", "--exclude", "careful@latest", "--reason", "scratch: 10 items")
    assert excluded.exit_code == 0, excluded.output
    assert excluded.stdout == f"excluded {scratch} from comparisons: scratch: 10 items\n"
    selection = cli.json("leaderboard")["selection"]
    assert scratch not in {arm["run_id"] for arm in selection["arms"]}
    assert selection["dataset_id"].startswith("arithmetic@") and len(selection["arms"]) == 3
    assert cli("rank-stability").exit_code == 0

    listed = {row["run_id"]: row for row in cli.json("runs")}
    assert listed[scratch]["excluded"] == "scratch: 10 items"
    assert {row["excluded"] for run, row in listed.items() if run != scratch} == {None}
    assert "excluded" in cli("runs").stdout.splitlines()[0]
    assert cli("show", scratch).exit_code == 0  # still readable by name

    line = json.loads((example_with_runs / "runs" / "decisions.jsonl").read_text().splitlines()[-1])
    assert (line["decision"], line["run_id"], line["reason"]) == ("exclude", scratch, "scratch: 10 items")

    back = cli("runs", "--include", scratch, "--reason", "needed after all")
    assert back.exit_code == 0, back.output
    assert cli("leaderboard").exit_code == 2


def test_an_excluded_run_is_never_a_baseline(cli, example_with_runs):
    older = cli.json("runs")[-1]
    before = {row["run_id"] for row in cli.json("runs")}
    again = cli("run", "experiments/arithmetic.yaml", "--arm", older["arm"], "--allow-failures")
    assert again.exit_code == 0, again.output
    [newest] = {row["run_id"] for row in cli.json("runs")} - before
    project = find_project()
    header = next(run.header for run in scan_runs(project.runs_dir)[0] if run.run_id == newest)
    assert BaselineResolver.read(project).choose(header).directory.name == older["run_id"]
    assert cli("runs", "--exclude", older["run_id"], "--reason", "wrong machine").exit_code == 0
    assert BaselineResolver.read(project).choose(header).directory is None


def test_refusals_are_one_line_and_write_nothing(cli, example_with_runs):
    run = cli.json("runs")[0]["run_id"]
    decisions = example_with_runs / "runs" / "decisions.jsonl"
    missing_reason = cli("runs", "--exclude", run)
    assert missing_reason.exit_code == 2 and "--exclude needs --reason TEXT" in missing_reason.stderr
    blank = cli("runs", "--exclude", run, "--reason", "  ")
    assert blank.exit_code == 1 and blank.stderr.startswith("Error: runs --exclude: --reason is empty")
    assert cli("runs", "--include", run, "--reason", "x").stderr == f"Error: run {run} is not excluded; nothing to include\n"
    unknown = cli("runs", "--exclude", "no-such-run", "--reason", "x")
    assert unknown.exit_code != 0 and "no-such-run" in unknown.stderr
    assert not decisions.exists()
    assert cli("runs", "--exclude", run, "--reason", "x").exit_code == 0
    twice = cli("runs", "--exclude", run, "--reason", "x")
    assert twice.exit_code == 1 and "is already excluded" in twice.stderr
    assert len(decisions.read_text().splitlines()) == 1


def test_an_unknown_decision_kind_is_a_problem_naming_the_line(cli, example_with_runs):
    from evalsite.runlog.decisions import read_decisions

    path = example_with_runs / "runs" / "decisions.jsonl"
    path.write_text(json.dumps({"run_id": "r", "fingerprint_hash": "h", "reason": "x", "at": "t", "decision": "retire"}) + "\n")
    decisions, problems = read_decisions(path, "runs/decisions.jsonl")
    assert decisions == []
    assert problems == ["runs/decisions.jsonl: line 1: decision 'retire' is not one of promote, exclude, include, review"]
