"""``evalsite compare``: fingerprint diff first, comparability, the regression report and the gate."""

from __future__ import annotations

import json
import math
import statistics

import pytest
from compare_support import CRITICAL, ITEMS, edit_row, interrupt, run_arm
from scipy import stats as scipy_stats

from evalsite.analysis.compare import comparability, compare_runs
from evalsite.project import find_project
from evalsite.runlog.records import RunHeader


def compare_json(cli, *args: str) -> tuple[int, dict]:
    result = cli("compare", *args, "--json")
    return result.exit_code, json.loads(result.stdout)


def test_runs_on_different_datasets_are_refused_with_the_reason(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    old_id = json.loads(cli("show", baseline, "--json").stdout)["dataset_id"]
    edit_row(golden_project, "g07", input="Q7 (reworded)")
    current = run_arm(cli, golden_project)
    new_id = json.loads(cli("show", current, "--json").stdout)["dataset_id"]

    result = cli("compare", current, "--baseline", baseline)

    assert result.exit_code == 1
    assert result.stderr == f"Error: not comparable: dataset {old_id} vs {new_id}\n"
    assert "dataset.dataset_id" in result.stdout and "dataset.inputs_id" in result.stdout
    assert "items:" not in result.stdout


def test_the_fingerprint_diff_is_printed_before_the_verdict(golden_project, cli):
    baseline = run_arm(cli, golden_project, params={"model": "small"})
    current = run_arm(cli, golden_project, params={"model": "large"})
    output = cli("compare", current, "--baseline", baseline).stdout
    assert output.index("fingerprint: ") < output.index("config.params.model") < output.index("comparable:")
    assert output.index("comparable:") < output.index("items:")


def test_a_changed_evaluator_version_is_refused(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    current = run_arm(cli, golden_project, evaluators=[{"type": "exact", "ignore_punctuation": True}])
    code, report = compare_json(cli, current, "--baseline", baseline)
    assert code == 1
    assert report["comparability"]["comparable"] is False
    assert report["comparability"]["reason"].startswith("evaluator 'exact' version ")
    assert report["regression"] is None
    changed = {d["path"] for d in report["fingerprint_diff"]}
    assert {"evaluators.exact.version", "evaluators.exact.params.ignore_punctuation"} <= changed


def test_an_added_evaluator_is_refused(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    current = run_arm(cli, golden_project, evaluators=[{"type": "exact"}, {"type": "exact", "name": "strict"}])
    result = cli("compare", current, "--baseline", baseline)
    assert result.exit_code == 1
    assert result.stderr == "Error: not comparable: evaluator 'strict' only in the current run\n"


def test_a_model_change_is_compared_and_listed_as_changed(golden_project, cli):
    baseline = run_arm(cli, golden_project, params={"model": "small"})
    current = run_arm(cli, golden_project, params={"model": "large", "wrong": ["g05"]})
    code, report = compare_json(cli, current, "--baseline", baseline)
    assert code == 0
    assert report["comparability"]["comparable"] is True
    diff = {d["path"]: (d["old"], d["new"]) for d in report["fingerprint_diff"]}
    assert diff["config.params.model"] == ("small", "large")
    assert diff["target.model"] == ("small", "large")
    summary = report["regression"]["summary"]
    assert (summary["compared"], summary["regressed"], summary["unchanged"]) == (12, 1, 11)


def test_items_are_classified_by_the_threshold_on_their_mean_over_repeats(golden_project, cli):
    baseline = run_arm(cli, golden_project, repeat=4, params={"wrong": ["g01", "g02"]})
    current = run_arm(cli, golden_project, repeat=4, params={"wrong": ["g02"], "wrong_in_repeat": {"0": ["g04"], "1": ["g05"], "2": ["g05"]}})
    report = compare_runs(find_project(), current, baseline=baseline, threshold=0.3).regression
    by_item = {item.item_id: item for item in report.items}
    assert by_item["g01"].classification == "improved" and by_item["g01"].delta == 1.0
    assert by_item["g04"].classification == "unchanged" and by_item["g04"].delta == -0.25
    assert by_item["g05"].classification == "regressed" and by_item["g05"].delta == -0.5
    assert by_item["g02"].classification == "unchanged"
    assert [i.item_id for i in report.classified("regressed")] == ["g05"]


def test_per_evaluator_newly_failing_newly_passing_still_failing_and_deltas(golden_project, cli):
    baseline = run_arm(cli, golden_project, params={"wrong": ["g01", "g02"]})
    current = run_arm(cli, golden_project, params={"wrong": ["g02", "g04", "g06"]})
    (exact,) = compare_runs(find_project(), current, baseline=baseline).regression.evaluators
    assert exact.evaluator == "exact"
    assert exact.newly_failing == ["g04", "g06"]
    assert exact.newly_passing == ["g01"]
    assert exact.still_failing == ["g02"]
    assert exact.baseline_pass_rate == pytest.approx(10 / 12)
    assert exact.current_pass_rate == pytest.approx(9 / 12)
    assert exact.pass_rate_delta == pytest.approx(-1 / 12)
    assert exact.mean_delta == pytest.approx(-1 / 12)
    assert (exact.baseline_errors, exact.current_errors, exact.error_delta) == (0, 0, 0)


def test_summary_means_interval_and_exact_paired_test(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    wrong = ["g01", "g02", "g04", "g05", "g06", "g07", "g08", "g09"]
    current = run_arm(cli, golden_project, params={"wrong": wrong})
    summary = compare_runs(find_project(), current, baseline=baseline).regression.summary
    assert (summary.compared, summary.improved, summary.regressed, summary.unchanged) == (12, 0, 8, 4)
    assert summary.baseline_mean == 1.0
    assert summary.current_mean == pytest.approx(4 / 12)
    assert summary.mean_delta == pytest.approx(-8 / 12)
    # eight items all moved down by 1: the two-sided sign-flip p is 2 / 2**8, exactly
    assert summary.test_kind == "exact"
    assert summary.p_value == pytest.approx(2 / 2**8)
    assert summary.ci_low <= summary.mean_delta <= summary.ci_high < 0


def test_a_ground_truth_edit_is_rescored_from_the_baseline_output(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    edit_row(golden_project, "g05", expected="A5 (corrected)")
    current = run_arm(cli, golden_project)
    report = compare_runs(find_project(), current, baseline=baseline)
    assert report.comparability.comparable and report.comparability.ground_truth_edited
    (g05,) = [item for item in report.regression.items if item.item_id == "g05"]
    # stored 1.0 against the old answer; re-scored 0.0 against the new one, like the current run
    assert (g05.baseline_score, g05.current_score, g05.classification, g05.rescored) == (0.0, 0.0, "unchanged", True)
    summary = report.regression.summary
    assert (summary.compared, summary.regressed, summary.gt_changed, summary.rescored) == (12, 0, 0, 1)
    assert report.regression.evaluators[0].newly_failing == []


def test_a_ground_truth_edit_that_cannot_be_rescored_is_left_out_of_every_number(golden_project, cli):
    baseline = run_arm(cli, golden_project, params={"wrong": ["g01"]})
    edit_row(golden_project, "g05", expected=None)  # exact skips an item with no expected value
    current = run_arm(cli, golden_project, params={"wrong": ["g01"]})
    code, report = compare_json(cli, current, "--baseline", baseline)
    assert code == 0
    regression = report["regression"]
    (gt,) = [item for item in regression["items"] if item["classification"] == "gt_changed"]
    assert gt["item_id"] == "g05" and gt["rescored"] is False
    assert "could not re-score" in gt["note"] and "no expected value" in gt["note"]
    summary = regression["summary"]
    assert (summary["compared"], summary["gt_changed"], summary["regressed"], summary["unchanged"]) == (11, 1, 0, 11)
    assert summary["baseline_mean"] == pytest.approx(10 / 11)
    exact = regression["evaluators"][0]
    assert "g05" not in exact["newly_failing"] and exact["baseline_pass_rate"] == pytest.approx(10 / 11)
    text = cli("compare", current, "--baseline", baseline).stdout
    assert "gt_changed, left out of every number (1):" in text and "g05" in text


def test_items_in_only_one_run_are_listed_apart_and_never_regressions(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    interrupt(golden_project, baseline, keep=9)
    current = run_arm(cli, golden_project)
    regression = compare_runs(find_project(), current, baseline=baseline).regression
    lost = sorted(set(ITEMS) - {i.item_id for i in regression.items})
    assert len(lost) == 3 and regression.only_in_current == lost
    assert regression.only_in_baseline == []
    assert (regression.summary.compared, regression.summary.regressed) == (9, 0)
    reverse = compare_runs(find_project(), baseline, baseline=current).regression
    assert reverse.only_in_baseline == lost and reverse.summary.regressed == 0


def test_within_noise_from_the_given_noise(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    current = run_arm(cli, golden_project, params={"wrong": ["g01"]})
    summary = compare_runs(find_project(), current, baseline=baseline, noise=0.1).regression.summary
    assert (summary.noise, summary.noise_source, summary.within_noise) == (0.1, "given", True)
    # one repeat each: Δ = -1/12 against σ √(1/1 + 1/1), a two-sided z-test
    assert summary.noise_p == pytest.approx(2 * scipy_stats.norm.sf((1 / 12) / (0.1 * math.sqrt(2))))
    tight = compare_runs(find_project(), current, baseline=baseline, noise=0.01).regression.summary
    assert tight.noise_p < 0.05 and tight.within_noise is False


def test_noise_measured_from_repeats_is_the_spread_of_per_repeat_means(golden_project, cli):
    baseline = run_arm(cli, golden_project, repeat=3)
    current = run_arm(cli, golden_project, repeat=3, params={"wrong_in_repeat": {"0": ["g01", "g02", "g04"], "2": ["g05"]}})
    summary = compare_runs(find_project(), current, baseline=baseline).regression.summary
    # the baseline never varies; the current run's repeats score 9/12, 12/12 and 11/12
    assert summary.noise_source == "repeats" and summary.noise_items == 12
    current_means, baseline_means = [9 / 12, 12 / 12, 11 / 12], [1.0, 1.0, 1.0]
    reference = scipy_stats.ttest_ind(current_means, baseline_means, equal_var=True)
    assert summary.noise_p == pytest.approx(reference.pvalue)
    assert summary.noise == pytest.approx(math.sqrt(2 * statistics.variance(current_means) / 4))
    assert summary.mean_delta == pytest.approx(-4 / 36)
    assert summary.p_value >= 0.05 and summary.within_noise is True


def test_without_repeats_or_noise_the_noise_is_unknown(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    current = run_arm(cli, golden_project, params={"wrong": ["g01"]})
    summary = compare_runs(find_project(), current, baseline=baseline).regression.summary
    assert (summary.noise, summary.within_noise) == (None, None)
    assert "noise unknown" in cli("compare", current, "--baseline", baseline).stdout


def test_gate_passes_on_an_insignificant_flip(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    current = run_arm(cli, golden_project, params={"wrong": ["g09"]})
    result = cli("compare", current, "--baseline", baseline, "--fail-on", "regression")
    assert result.exit_code == 0, result.output
    assert "regressed (1):" in result.stdout and "gate (α = 0.05): pass" in result.stdout


def test_gate_fails_on_a_significant_regression(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    current = run_arm(cli, golden_project, params={"wrong": ["g01", "g02", "g04", "g05", "g06", "g07", "g08", "g09"]})
    result = cli("compare", current, "--baseline", baseline, "--fail-on", "regression")
    assert result.exit_code == 1
    assert "gate (α = 0.05): fail: significant regression: mean Δ -0.667, p = 0.008 < α = 0.05" in result.stdout
    assert cli("compare", current, "--baseline", baseline).exit_code == 0, "without --fail-on the report only reports"


def test_gate_fails_when_a_critical_row_newly_fails(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    current = run_arm(cli, golden_project, params={"wrong": [CRITICAL]})
    result = cli("compare", current, "--baseline", baseline, "--fail-on", "regression")
    assert result.exit_code == 1
    assert f"critical rows newly failing: {CRITICAL}" in result.stdout


def test_an_improvement_never_fails_the_gate(golden_project, cli):
    baseline = run_arm(cli, golden_project, params={"wrong": ["g01", "g02", "g04", "g05", "g06", "g07", "g08", "g09"]})
    current = run_arm(cli, golden_project)
    assert cli("compare", current, "--baseline", baseline, "--fail-on", "regression").exit_code == 0


def test_bad_arguments_are_usage_errors(golden_project, cli):
    run = run_arm(cli, golden_project)
    assert cli("compare", run, "--threshold", "-1").exit_code == 2
    assert cli("compare", run, "--fail-on", "anything").exit_code == 2
    missing = cli("compare", "nosuchrun")
    assert missing.exit_code == 1 and "no run matches 'nosuchrun'" in missing.output


def header(dataset_id: str, inputs_id: str | None = None, version: str = "v1") -> RunHeader:
    fingerprint = {"dataset": {"dataset_id": dataset_id}, "evaluators": {"exact": {"type": "exact", "version": version}}}
    if inputs_id:
        fingerprint["dataset"]["inputs_id"] = inputs_id
    return as_header({"dataset": {"dataset_id": dataset_id}, "fingerprint": fingerprint})


def as_header(data: dict) -> RunHeader:
    return RunHeader.from_json({"format_version": 1, "run_id": "r", **data}, "run.json")


def test_without_an_inputs_id_on_either_side_the_dataset_id_decides():
    assert comparability(header("golden@1", "golden@q"), header("golden@1")).comparable
    refused = comparability(header("golden@1", "golden@q"), header("golden@2"))
    assert (refused.comparable, refused.reason) == (False, "dataset golden@1 vs golden@2")
    edited = comparability(header("golden@1", "golden@q"), header("golden@2", "golden@q"))
    assert edited.comparable and edited.ground_truth_edited


def test_comparability_reads_evaluator_versions_from_old_headers_too():
    old = as_header({"dataset": {"dataset_id": "golden@1"}, "evaluators": {"exact": {"type": "exact", "version": "v1"}}})
    assert comparability(old, header("golden@1")).comparable
    assert comparability(old, header("golden@1", version="v2")).reason == "evaluator 'exact' version v1 vs v2"


def test_the_step_summary_and_summary_file_carry_the_verdict(golden_project, cli, tmp_path, monkeypatch):
    step_summary = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    baseline = run_arm(cli, golden_project)
    current = run_arm(cli, golden_project, params={"wrong": ["g01", "g02", "g04", "g05", "g06", "g07", "g08", "g09"]})
    cli("compare", current, "--baseline", baseline, "--fail-on", "regression", "--summary", str(tmp_path / "pr.md"))
    for path in (step_summary, tmp_path / "pr.md"):
        text = path.read_text()
        text = text[text.index(f"### evalsite compare: {current}"):]
        assert "| 12 | 0 | 8 | 4 | 0 |" in text
        assert "**Gate (α = 0.05):** fail — significant regression" in text
