"""``evalsite.run_experiment`` is the one batch function ``evalsite run`` calls: the same guards,
the same selectors, the same failure reasons, and a :class:`BatchResult` carrying what the
command prints."""

from __future__ import annotations

import click
import pytest
from study_support import lines, runs, write_study

import evalsite
from evalsite.api import OptionError
from evalsite.errors import EvalsiteError, OutputError, ProjectError

SAME = ("arm", "status", "cases", "items", "errors", "mean_score", "pass_rate")


def test_items_run_in_dataset_order_and_the_rows_are_the_clis(study_project, cli):
    manifest = write_study(study_project, items=4, repeat=2)
    result = evalsite.run_experiment(manifest, item_ids=["q2", "q0"], concurrency=1, progress=False)
    assert result.ok and result.finished and result.reasons == ()
    (run,) = runs(study_project)  # one case at a time: the file holds the plan's order, the dataset's
    assert [(c["item_id"], c["repeat"]) for c in run.cases] == [("q0", 0), ("q0", 1), ("q2", 0), ("q2", 1)]
    (row,) = result.rows()
    assert row["run_id"] == run.run_id and "resume" not in row
    (printed,) = cli.json("run", manifest, "--item", "q2", "--item", "q0")
    assert {key: row[key] for key in SAME} == {key: printed[key] for key in SAME}
    assert (row["cases"], row["items"], row["mean_score"]) == (4, 2, 1.0)


@pytest.mark.parametrize(("option", "value", "message"), [
    ("executor", "rey", "executor='rey' is not one of 'local', 'ray'; did you mean 'ray'?"),
    ("depth", "items", "depth='items' is not one of 'experiment', 'arm', 'item', 'case'; did you mean 'item'?"),
    ("cache", "replya", "cache='replya' is not one of 'off', 'record', 'replay', 'auto'; did you mean 'replay'?"),
    ("until", "decide", "until='decide' is not one of 'decided'; did you mean 'decided'?"),
    ("fail_on", "regressions", "fail_on='regressions' is not one of 'regression'; did you mean 'regression'?"),
    ("repeat", 0, "repeat=0 is not a finite number from 1 to 10000"),
    ("max_cost_usd", float("nan"), "max_cost_usd=nan is not a finite number from 0 to inf"),
    ("overrides", ["repeat"], "'repeat' is not KEY=VALUE (e.g. arms.base.params.temperature=0)"),
    ("timeout", "soon", "timeout: "),
])
def test_a_bad_option_is_a_plain_error_naming_it_and_nothing_runs(study_project, option, value, message):
    manifest = write_study(study_project)
    with pytest.raises(OptionError) as raised:
        evalsite.run_experiment(manifest, **{option: value})
    assert raised.value.message.startswith(message)
    assert isinstance(raised.value, EvalsiteError) and isinstance(raised.value, ValueError)
    assert not isinstance(raised.value, click.ClickException) and raised.value.exit_code == 2
    assert runs(study_project) == [] and not (study_project / "calls.log").exists()


def test_a_uri_runs_location_is_refused_before_anything_runs(study_project, monkeypatch):
    manifest = write_study(study_project)
    monkeypatch.setenv("EVALSITE_RUNS", "s3://bucket/runs")
    with pytest.raises(ProjectError, match=r"^the runs location is s3://bucket/runs, which only `evalsite compact --to` "
                                           r"writes; unset EVALSITE_RUNS"):
        evalsite.run_experiment(manifest)
    assert not (study_project / "calls.log").exists()


def test_a_dry_run_estimates_and_calls_nothing(study_project, cli):
    manifest = write_study(study_project, items=3, repeat=2)
    result = evalsite.run_experiment(manifest, dry_run=True)
    assert result.batch is None and result.runs == [] and result.ok
    assert result.estimate is not None and result.estimate.to_json() == cli.json("run", manifest, "--dry-run")
    assert result.estimate.total()["cases"] == 6
    assert runs(study_project) == [] and not (study_project / "calls.log").exists()
    with pytest.raises(OutputError, match="^out.junit.xml: run --dry-run has no test cases to write as JUnit XML"):
        evalsite.run_experiment(manifest, dry_run=True, junit="out.junit.xml")


BROKEN = ("def down(input, repeat):\n    raise RuntimeError('the model is down')\n\n\n"
          "def wrong(input, repeat):\n    return 'no'\n")


def test_the_failure_reasons_are_the_lines_the_cli_prints(study_project, cli):
    (study_project / "study_broken.py").write_text(BROKEN)
    manifest = write_study(study_project, arms=[{"id": "up", "target": "python:study_target:answer"},
                                                {"id": "down", "target": "python:study_broken:down"}])
    result = evalsite.run_experiment(manifest, allow_failures=True, progress=False)
    assert not result.ok and result.batch is not None
    (reason,) = result.reasons  # the error-rate rule: --allow-failures does not accept an arm that never answered
    assert reason.startswith("down: ") and reason.endswith("; --allow-failures does not accept it")
    printed = cli("run", manifest, "--allow-failures")
    assert printed.exit_code == 1
    assert [line for line in printed.stderr.splitlines() if line.startswith("failed: ")] == [f"failed: {reason}"]


def test_the_batch_writes_junit_and_its_markdown_and_builds_the_site(study_project):
    manifest = write_study(study_project, items=2)
    result = evalsite.run_experiment(manifest, junit="report.junit.xml", build=True, progress=False)
    suite, cases = result.junit
    assert suite == "evalsite.run.study" and len(cases) == 2
    assert "<testsuite" in (study_project / "report.junit.xml").read_text()
    assert result.markdown.startswith("### evalsite run: study")
    assert result.site is not None and (result.site.out_dir / "index.html").is_file()


def test_a_baseline_comparison_and_fail_on_regression(study_project):
    manifest = write_study(study_project, items=8)  # 8 of 8 items worse: the paired sign-flip test's p < 0.01
    first = evalsite.run_experiment(manifest, progress=False)
    (before,) = first.runs
    (study_project / "study_broken.py").write_text(BROKEN)
    worse = write_study(study_project, items=8, target="python:study_broken:wrong")
    result = evalsite.run_experiment(worse, baseline=before.run_id, fail_on="regression", allow_failures=True,
                                     progress=False)
    (run,) = result.runs
    report = result.baselines[run.run_id]
    assert report.baseline is not None and report.baseline.run_id == before.run_id
    assert result.rows()[0]["baseline_diff"] == report.to_json()
    assert report.comparability.comparable and report.regression.summary.regressed == 8
    assert report.gate is not None and report.gate.failed and result.regression_failed and not result.ok
    assert result.reasons == ()  # every case generated; only the gate fails the batch
    lenient = evalsite.run_experiment(worse, baseline=before.run_id, allow_failures=True, progress=False)
    assert lenient.baselines and not lenient.regression_failed and lenient.ok  # without fail_on the gate is reported only


def test_the_depth_and_until_options_reach_the_plan(study_project):
    note = [{"name": "note", "run": "python:study_steps:note"}]
    manifest = write_study(study_project, items=2, hooks={level: {"post": note} for level in ("experiment", "item")})
    assert evalsite.run_experiment(manifest, depth="item", progress=False).ok
    assert {entry["level"] for entry in lines(study_project / "steps.log")} == {"item"}


def test_one_arm_or_item_may_be_given_as_a_plain_string(study_project):
    manifest = write_study(study_project, items=3, arms=[{"id": "a", "target": "python:study_target:answer"},
                                                         {"id": "b", "target": "python:study_target:answer"}])
    result = evalsite.run_experiment(manifest, arms="b", item_ids="q1", progress=False)
    assert [(run.arm_id, run.summary.cases) for run in result.runs] == [("b", 1)]  # not the arms 'b'… letter by letter
