"""Hooks: when each level's pre and post steps run, what their failures fail, and their logs."""

from __future__ import annotations

import json

from study_support import lines, runs, write_study


def test_a_failing_item_pre_step_fails_exactly_that_items_cases_without_calling_the_target(study_project, cli):
    manifest = write_study(study_project, repeat=2, hooks={"item": {"pre": [{"name": "prepare", "run": "python:study_steps:fail_q1"}]}})
    result = cli("run", manifest)
    assert result.exit_code == 1
    (run,) = runs(study_project)
    failed = sorted((c["item_id"], c["repeat"]) for c in run.cases if c["error"])
    assert failed == [("q1", 0), ("q1", 1)]
    for case in run.cases:
        if case["item_id"] == "q1":
            assert case["error"] == "item pre step 'prepare' failed: RuntimeError: no fixture for q1"
        else:
            assert case["error"] is None and case["passed"] is True
    assert sorted(c["input"] for c in lines(study_project / "calls.log")) == ["x0", "x0", "x2", "x2"]
    # the item pre ran once per item, however many repeats it has
    assert sorted(e["item_id"] for e in lines(study_project / "steps.log")) == ["q0", "q1", "q2"]
    log = run.directory / "hooks" / "item-q1-pre-prepare.log"
    assert "RuntimeError: no fixture for q1" in log.read_text()


def test_a_case_pre_step_runs_before_every_attempt_and_a_failing_one_fails_only_its_case(study_project, cli):
    manifest = write_study(study_project, items=2, target="python:study_target:flaky",
                           hooks={"case": {"pre": [{"name": "each", "run": "python:study_steps:fail_q1"}]}})
    assert cli("run", manifest).exit_code == 1
    (run,) = runs(study_project)
    by_item = {c["item_id"]: c for c in run.cases}
    assert by_item["q0"]["error"] is None and by_item["q0"]["attempts"] == 2
    assert by_item["q1"]["error"] == "case pre step 'each' failed: RuntimeError: no fixture for q1"
    assert by_item["q1"]["attempts"] == 0  # the pre step failed before any call
    assert [e["item_id"] for e in lines(study_project / "steps.log")].count("q0") == 2  # once per attempt
    assert [c["input"] for c in lines(study_project / "calls.log")] == ["x0"]


def test_arm_and_experiment_pre_steps_run_once_before_the_first_call(study_project, cli):
    manifest = write_study(study_project, repeat=2, hooks={
        "experiment": {"pre": [{"name": "exp", "run": "python:study_steps:note"}]},
        "arm": {"pre": [{"name": "arm", "run": "python:study_steps:note"}]},
    })
    assert cli("run", manifest).exit_code == 0
    assert [(e["level"], e["step"]) for e in lines(study_project / "steps.log")] == [("experiment", "exp"), ("arm", "arm")]


def test_cache_hits_start_nothing_beneath_them(study_project, cli):
    manifest = write_study(study_project, emulation={"cache": "auto"}, hooks={
        "arm": {"pre": [{"name": "arm", "run": "python:study_steps:note"}]},
        "case": {"pre": [{"name": "case", "run": "python:study_steps:note"}]},
    })
    assert cli("run", manifest).exit_code == 0
    assert len(lines(study_project / "steps.log")) == 1 + 3
    assert cli("run", manifest).exit_code == 0
    assert len(lines(study_project / "steps.log")) == 1 + 3  # the second run was all hits: nothing prepared
    assert [c["cache"] for c in runs(study_project)[1].cases] == ["hit"] * 3


def test_a_case_failed_in_a_pre_step_records_no_attempt_and_no_cache_mark(study_project, cli):
    manifest = write_study(study_project, repeat=2, emulation={"cache": "auto"},
                           hooks={"item": {"pre": [{"name": "prepare", "run": "python:study_steps:fail_q1"}]}})
    assert cli("run", manifest).exit_code == 1
    (run,) = runs(study_project)
    by_key = {(c["item_id"], c["repeat"]): c for c in run.cases}
    for repeat in (0, 1):
        failed = by_key[("q1", repeat)]
        assert failed["error"].startswith("item pre step 'prepare' failed")
        assert failed["attempts"] == 0 and "cache" not in failed  # no call was made, none recorded
        assert by_key[("q0", repeat)]["attempts"] == 1 and by_key[("q0", repeat)]["cache"] == "recorded"
    # a second run still calls for q1 (nothing of it was cached) and replays the rest
    assert cli("run", manifest).exit_code == 1
    second = {(c["item_id"], c["repeat"]): c for c in runs(study_project)[1].cases}
    assert second[("q0", 0)]["cache"] == "hit" and "cache" not in second[("q1", 0)]


def test_post_steps_run_in_dependency_order_and_a_failure_fails_the_exit_code(study_project, cli):
    manifest = write_study(study_project, items=2, hooks={"arm": {"post": [
        {"name": "last", "run": "python:study_steps:note", "depends_on": ["first"]},
        {"name": "first", "run": "python:study_steps:note"},
        {"name": "broken", "run": "python:study_steps:boom"},
        {"name": "after-broken", "run": "python:study_steps:note", "depends_on": ["broken"]},
    ]}})
    result = cli("run", manifest, "--allow-failures")
    assert result.exit_code == 1
    assert "Error: arm post step 'broken' arm_id=a failed: ValueError: post went wrong" in result.output
    assert [e["step"] for e in lines(study_project / "steps.log")] == ["first", "last"]
    (run,) = runs(study_project)
    assert run.footer.raw["hook_errors"] == [
        "arm post step 'broken' arm_id=a failed: ValueError: post went wrong",
        "arm post step 'after-broken' arm_id=a failed: skipped: it depends on 'broken', which failed",
    ]
    assert all(c["error"] is None for c in run.cases)  # the cases themselves are fine


def test_a_command_step_gets_placeholders_and_its_context_and_its_output_is_logged(study_project, cli):
    script = "import json, os, sys; c = json.loads(os.environ['EVALSITE_STEP_CONTEXT']); print('item', c['item_id'], sys.argv[1])"
    manifest = write_study(study_project, items=1, hooks={"item": {"post": [
        {"name": "shell", "command": ["python", "-c", script, "{level_dir}"]},
    ]}})
    assert cli("run", manifest).exit_code == 0
    (run,) = runs(study_project)
    log = (run.directory / "hooks" / "item-q0-post-shell.log").read_text()
    assert log.strip() == f"item q0 {run.directory / 'items' / 'q0'}"


def test_a_command_step_exiting_non_zero_fails(study_project, cli):
    manifest = write_study(study_project, items=1, hooks={"experiment": {"post": [
        {"name": "no", "command": ["python", "-c", "import sys; sys.exit(3)"]}]}})
    result = cli("run", manifest)
    assert result.exit_code == 1
    assert "experiment post step 'no' failed: command 'python' exited with status 3" in result.output
    (end,) = study_project.glob("results/study/*/end.json")
    assert json.loads(end.read_text())["hook_errors"][0].startswith("experiment post step 'no' failed")


def test_a_step_that_times_out_fails(study_project, cli):
    manifest = write_study(study_project, items=1, hooks={"arm": {"pre": [
        {"name": "slow", "command": ["python", "-c", "import time; time.sleep(30)"], "timeout_s": 0.3}]}})
    assert cli("run", manifest).exit_code == 1
    (run,) = runs(study_project)
    assert run.cases[0]["error"] == "arm pre step 'slow' failed: timed out after 0.3 s"


def test_a_failing_arm_pre_step_runs_once_and_fails_every_case_of_the_run(study_project, cli):
    manifest = write_study(study_project, repeat=2, hooks={"arm": {"pre": [{"name": "setup", "run": "python:study_steps:boom"}]}})
    assert cli("run", manifest).exit_code == 1
    (run,) = runs(study_project)
    assert [c["error"] for c in run.cases] == ["arm pre step 'setup' failed: ValueError: post went wrong"] * 6
    assert lines(study_project / "calls.log") == []
    assert (run.directory / "hooks" / "arm-pre-setup.log").read_text().count("FAILED") == 1


def test_a_case_post_step_that_changes_what_it_is_handed_changes_no_record_or_row(study_project, cli):
    manifest = write_study(study_project, items=3, repeat=2,
                           hooks={"case": {"post": [{"name": "vandal", "run": "python:study_steps:vandal"}]}})
    result = cli("run", manifest)
    assert result.exit_code == 0, result.output
    assert len(lines(study_project / "steps.log")) == 6
    (run,) = runs(study_project)
    assert [(c["item_id"], c["score"], c["passed"], len(c["scores"])) for c in run.cases] == [
        (c["item_id"], 1.0, True, 1) for c in run.cases]  # every repeat scored against the row as written
    totals = run.footer.raw["totals"]
    assert (totals["cases"], totals["mean_score"], totals["pass_rate"]) == (6, 1.0, 1.0)
    assert run.footer.raw["cases_sha256"] is not None  # the writer's checks saw the records as written
