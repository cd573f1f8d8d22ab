"""``evalsite promote``: a baseline is a decision with a reason, refused when it cannot be trusted;
and ``validate_decisions`` catches a decision whose run is gone or changed."""

from __future__ import annotations

import json

import pytest
from compare_support import commit_all, interrupt, run_arm

from evalsite.project import find_project
from evalsite.runlog.decisions import validate_decisions


def decisions(project) -> list[dict]:
    path = project / "runs" / "decisions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_promoting_a_clean_completed_run_appends_a_decision(golden_project, cli):
    commit_all(golden_project)
    run = run_arm(cli, golden_project)
    header = json.loads((golden_project / "runs" / run / "run.json").read_text())

    result = cli("promote", run, "--reason", "  best on the reviewed set  ")

    assert result.exit_code == 0, result.output
    assert result.stdout == f"promoted {run} as the baseline of arm main on {header['dataset']['dataset_id']}\n"
    (decision,) = decisions(golden_project)
    assert decision["decision"] == "promote"
    assert decision["run_id"] == run
    assert decision["dataset_id"] == header["dataset"]["dataset_id"]
    assert decision["arm_id"] == "main"
    assert decision["fingerprint_hash"] == header["fingerprint_hash"]
    assert decision["reason"] == "best on the reviewed set"
    assert decision["by"] == "Ada Lovelace <ada@example.org>"
    assert decision["at"].endswith("Z") and decision["allow_dirty"] is False
    assert validate_decisions(find_project()) == []


def test_decisions_are_appended_never_rewritten(golden_project, cli):
    commit_all(golden_project)
    first, second = run_arm(cli, golden_project), run_arm(cli, golden_project)
    cli("promote", first, "--reason", "first")
    before = (golden_project / "runs" / "decisions.jsonl").read_text()
    cli("promote", second, "--reason", "second", "--json")
    after = (golden_project / "runs" / "decisions.jsonl").read_text()
    assert after.startswith(before)
    assert [d["run_id"] for d in decisions(golden_project)] == [first, second]


@pytest.mark.parametrize("reason", ["", "   "])
def test_an_empty_reason_is_refused(golden_project, cli, reason):
    run = run_arm(cli, golden_project)
    result = cli("promote", run, "--reason", reason, "--allow-dirty")
    assert result.exit_code == 1
    assert result.stderr == "Error: promote: --reason is empty; say why this run should be the baseline\n"
    assert not (golden_project / "runs" / "decisions.jsonl").exists()


def test_a_missing_reason_is_a_usage_error(golden_project, cli):
    run = run_arm(cli, golden_project)
    assert cli("promote", run).exit_code == 2


def test_an_incomplete_run_is_refused_even_with_allow_dirty(golden_project, cli):
    run = run_arm(cli, golden_project)
    interrupt(golden_project, run, keep=4)
    result = cli("promote", run, "--reason", "looks fine", "--allow-dirty")
    assert result.exit_code == 1
    assert "refusing to promote a run whose status is interrupted" in result.stderr


def test_a_run_from_an_unknown_build_is_refused_unless_allowed(golden_project, cli):
    run = run_arm(cli, golden_project)
    refused = cli("promote", run, "--reason", "fine")
    assert refused.exit_code == 1
    assert "unknown build" in refused.stderr and "--allow-dirty" in refused.stderr
    allowed = cli("promote", run, "--reason", "fine", "--allow-dirty")
    assert allowed.exit_code == 0
    assert decisions(golden_project)[0]["allow_dirty"] is True


def test_a_run_from_a_dirty_tree_is_refused_unless_allowed(golden_project, cli):
    commit_all(golden_project)
    (golden_project / "golden_arm.py").write_text((golden_project / "golden_arm.py").read_text() + "\n# wip\n")
    run = run_arm(cli, golden_project)
    refused = cli("promote", run, "--reason", "fine")
    assert refused.exit_code == 1
    assert "dirty tree" in refused.stderr
    assert cli("promote", run, "--reason", "fine", "--allow-dirty").exit_code == 0


def test_a_run_whose_fingerprint_was_edited_is_refused(golden_project, cli):
    run = run_arm(cli, golden_project)
    path = golden_project / "runs" / run / "run.json"
    header = json.loads(path.read_text())
    header["fingerprint"]["config"]["params"]["model"] = "something else"
    path.write_text(json.dumps(header))
    result = cli("promote", run, "--reason", "fine", "--allow-dirty")
    assert result.exit_code == 1
    assert "no fingerprint matching its recorded fingerprint_hash" in result.stderr


def test_validate_fails_a_decision_whose_run_is_missing_or_changed(golden_project, cli):
    kept, changed, removed = (run_arm(cli, golden_project) for _ in range(3))
    for run in (kept, changed, removed):
        cli("promote", run, "--reason", "fine", "--allow-dirty")
    path = golden_project / "runs" / changed / "run.json"
    header = json.loads(path.read_text())
    header["fingerprint"]["seed"] = 42
    path.write_text(json.dumps(header))
    for name in ("run.json", "cases.jsonl", "end.json"):
        (golden_project / "runs" / removed / name).unlink()
    (golden_project / "runs" / removed).rmdir()

    problems = validate_decisions(find_project())

    assert len(problems) == 2
    assert problems[0].startswith(f"runs/decisions.jsonl: line 2: run {changed}: fingerprint no longer matches the decision")
    assert problems[1] == f"runs/decisions.jsonl: line 3: run {removed} is missing"


def test_validate_reports_a_bad_line_and_tolerates_a_torn_last_one(golden_project, cli):
    run = run_arm(cli, golden_project)
    path = golden_project / "runs" / "decisions.jsonl"
    path.write_text('not json\n{"no_run": 1}\n{"run_id": "torn by a cra')
    assert validate_decisions(find_project()) == [
        "runs/decisions.jsonl: line 1 is not valid JSON; skipped",
        "runs/decisions.jsonl: line 2: run_id is missing",
    ]
    cli("promote", run, "--reason", "after the crash", "--allow-dirty")
    assert path.read_text().splitlines()[-1].startswith('{"allow_critical": false, "allow_dirty": true')
    assert len(validate_decisions(find_project())) == 2


def test_validate_fails_a_decision_whose_run_is_gone(golden_project, cli):
    run = run_arm(cli, golden_project)
    assert cli("promote", run, "--reason", "fine", "--allow-dirty").exit_code == 0
    assert cli("validate").exit_code == 0
    (golden_project / "runs" / run).rename(golden_project / "gone")
    result = cli("validate")
    assert result.exit_code == 1
    assert f"runs/decisions.jsonl: line 1: run {run} is missing" in result.output
