"""Baseline resolution: explicit → promoted → most recent older completed run → none."""

from __future__ import annotations

import json

from compare_support import edit_row, interrupt, run_arm


def resolved(cli, run: str, *extra: str) -> dict:
    result = cli("compare", run, *extra, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_no_prior_run_means_nothing_to_compare_and_exit_0(golden_project, cli):
    only = run_arm(cli, golden_project)
    result = cli("compare", only)
    assert result.exit_code == 0
    assert "no prior run" in result.stdout
    report = resolved(cli, only)
    assert report["baseline_source"] == "none"
    assert report["baseline"] is None and report["regression"] is None


def test_prior_run_is_the_most_recent_older_completed_run_of_the_same_arm_and_dataset(golden_project, cli):
    oldest = run_arm(cli, golden_project)
    run_arm(cli, golden_project, arm="other")
    edit_row(golden_project, "g07", input="Q7 reworded")
    run_arm(cli, golden_project)  # same arm, other questions
    edit_row(golden_project, "g07", input="Q7")
    crashed = run_arm(cli, golden_project)
    interrupt(golden_project, crashed, keep=5)
    current = run_arm(cli, golden_project)
    newer = run_arm(cli, golden_project)

    report = resolved(cli, current)
    assert report["baseline_source"] == "prior"
    assert report["baseline"]["run_id"] == oldest
    assert resolved(cli, newer)["baseline"]["run_id"] == current
    assert "(the most recent older completed run of this arm on this dataset)" in cli("compare", current).stdout


def test_a_ground_truth_edit_keeps_the_prior_run_as_baseline(golden_project, cli):
    before = run_arm(cli, golden_project)
    edit_row(golden_project, "g05", expected="A5 (corrected)")
    after = run_arm(cli, golden_project)
    report = resolved(cli, after)
    assert report["baseline"]["run_id"] == before
    assert report["comparability"]["ground_truth_edited"] is True
    assert report["regression"]["summary"]["rescored"] == 1


def test_the_promoted_baseline_wins_over_the_prior_run(golden_project, cli):
    promoted = run_arm(cli, golden_project)
    run_arm(cli, golden_project)
    current = run_arm(cli, golden_project)
    other_arm = run_arm(cli, golden_project, arm="other")
    assert cli("promote", other_arm, "--reason", "another arm's baseline", "--allow-dirty").exit_code == 0
    assert cli("promote", promoted, "--reason", "reviewed by the team", "--allow-dirty").exit_code == 0

    report = resolved(cli, current)
    assert report["baseline_source"] == "promoted"
    assert report["baseline"]["run_id"] == promoted
    assert report["promotion"]["reason"] == "reviewed by the team"
    text = cli("compare", current).stdout
    assert "(the promoted baseline)" in text and "reviewed by the team" in text


def test_the_promoted_run_itself_falls_back_to_its_own_prior_run(golden_project, cli):
    first = run_arm(cli, golden_project)
    promoted = run_arm(cli, golden_project)
    cli("promote", promoted, "--reason", "good", "--allow-dirty")
    report = resolved(cli, promoted)
    assert (report["baseline_source"], report["baseline"]["run_id"]) == ("prior", first)


def test_an_explicit_baseline_overrides_everything(golden_project, cli):
    promoted = run_arm(cli, golden_project)
    explicit = run_arm(cli, golden_project, arm="other")
    current = run_arm(cli, golden_project)
    cli("promote", promoted, "--reason", "good", "--allow-dirty")
    report = resolved(cli, current, "--baseline", explicit[:22])
    assert (report["baseline_source"], report["baseline"]["run_id"]) == ("explicit", explicit)
    assert "(given with --baseline)" in cli("compare", current, "--baseline", explicit).stdout
