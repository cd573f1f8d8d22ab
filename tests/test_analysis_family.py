"""``evalsite family-test``: sign-flip and McNemar p-values recomputed independently, Holm by
hand, power by its formula, and the refusal of runs that may not be compared."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_support import edit_manifest, item_repeat_matrix, new_run, run_id
from scipy import stats as scipy_stats

from evalsite.stats import min_detectable_effect, required_n


def exact_sign_flip_p(diffs: np.ndarray, unit: int) -> float:
    """Two-sided sign-flip p by the distribution of sum(±|d|) over integer multiples of 1/unit,
    built as a plain dictionary (independent of evalsite's grid engine)."""
    magnitudes = [int(round(abs(d) * unit)) for d in diffs if round(d * unit) != 0]
    distribution = {0: 1.0}
    for m in magnitudes:
        step: dict[int, float] = {}
        for total, p in distribution.items():
            step[total + m] = step.get(total + m, 0.0) + p / 2
            step[total - m] = step.get(total - m, 0.0) + p / 2
        distribution = step
    observed = abs(round(sum(diffs) * unit))
    return sum(p for total, p in distribution.items() if abs(total) >= observed)


def per_item(project, arm: str, field: str = "score") -> np.ndarray:
    return item_repeat_matrix(project, run_id(project, arm), field)[1]


def test_family_numbers_match_independent_computations(cli, example_with_runs):
    careful, l2r, sampler = (run_id(example_with_runs, arm) for arm in ("careful", "left_to_right", "sampler"))
    report = cli.json("family-test", careful, "--vs", l2r, "--vs", sampler)

    raw = []
    for comparison, arm in zip(report["comparisons"], ("left_to_right", "sampler")):
        diffs = per_item(example_with_runs, "careful").mean(axis=1) - per_item(example_with_runs, arm).mean(axis=1)
        expected_p = exact_sign_flip_p(diffs, unit=3)
        assert comparison["sign_flip"]["p_value"] == pytest.approx(expected_p, rel=1e-9)
        assert comparison["sign_flip"]["kind"] == "exact"
        assert comparison["mean_diff"] == pytest.approx(diffs.mean())
        raw.append(expected_p)
        mine = per_item(example_with_runs, "careful", "passed").min(axis=1) == 1  # an item passes when every repeat passed
        theirs = per_item(example_with_runs, arm, "passed").min(axis=1) == 1
        only_mine, only_theirs = int(np.sum(mine & ~theirs)), int(np.sum(~mine & theirs))
        assert (comparison["mcnemar"]["b"], comparison["mcnemar"]["c"]) == (only_mine, only_theirs)
        assert comparison["mcnemar"]["p_value"] == pytest.approx(
            scipy_stats.binomtest(only_mine, only_mine + only_theirs, 0.5).pvalue
        )

    smaller, larger = sorted(raw)
    holm_by_hand = {smaller: min(1.0, 2 * smaller), larger: min(1.0, max(2 * smaller, larger))}
    assert [c["holm_p"] for c in report["comparisons"]] == pytest.approx([holm_by_hand[p] for p in raw])
    assert [c["verdict"] for c in report["comparisons"]] == [
        "careful better than left_to_right", "careful better than sampler",
    ]


def test_holm_changes_the_verdict_of_a_borderline_comparison(cli, example_with_runs):
    """Against the family {sampler, left_to_right}, left_to_right vs sampler is not significant,
    and Holm's adjusted p is never below the raw one."""
    l2r, sampler, careful = (run_id(example_with_runs, arm) for arm in ("left_to_right", "sampler", "careful"))
    report = cli.json("family-test", l2r, "--vs", sampler, "--vs", careful)
    vs_sampler, vs_careful = report["comparisons"]
    assert vs_sampler["holm_p"] >= vs_sampler["sign_flip"]["p_value"]
    assert vs_sampler["verdict"] in ("no significant difference", "no significant difference; within noise")
    assert vs_careful["verdict"] == "left_to_right worse than careful"


def test_noise_labels_a_difference_within_the_spread_of_repeats(cli, example_with_runs):
    l2r, sampler = run_id(example_with_runs, "left_to_right"), run_id(example_with_runs, "sampler")
    (comparison,) = cli.json("family-test", l2r, "--vs", sampler)["comparisons"]
    mine, theirs = per_item(example_with_runs, "left_to_right").mean(axis=0), per_item(example_with_runs, "sampler").mean(axis=0)
    reference = scipy_stats.ttest_ind(mine, theirs, equal_var=True)
    assert comparison["noise_p"] == pytest.approx(reference.pvalue)
    assert comparison["noise"] == pytest.approx(np.sqrt((np.var(mine, ddof=1) + np.var(theirs, ddof=1)) / 2))
    assert comparison["within_noise"] is bool(comparison["holm_p"] >= 0.05 and reference.pvalue >= 0.05)


def test_power_is_the_calibrated_figure_at_alpha_over_m(cli, example_with_runs):
    careful, l2r, sampler = (run_id(example_with_runs, arm) for arm in ("careful", "left_to_right", "sampler"))
    report = cli.json("family-test", careful, "--vs", l2r, "--vs", sampler, "--effect", "0.1", "--alpha", "0.1")
    assert report["power_alpha"] == pytest.approx(0.05)
    for comparison, arm in zip(report["comparisons"], ("left_to_right", "sampler")):
        diffs = per_item(example_with_runs, "careful").mean(axis=1) - per_item(example_with_runs, arm).mean(axis=1)
        assert comparison["detectable"]["effect"] == pytest.approx(min_detectable_effect(diffs, alpha=0.05).effect)
        assert comparison["needed"]["n"] == required_n(diffs, 0.1, alpha=0.05).n
    text = cli("family-test", careful, "--vs", l2r, "--vs", sampler, "--effect", "0.1").stdout
    assert "sign-flip test over items at α/m = 0.025" in text and "|Δ| = 0.1 needs" in text


def test_the_text_names_the_tests_and_the_kind_of_p(cli, example_with_runs):
    careful, sampler = run_id(example_with_runs, "careful"), run_id(example_with_runs, "sampler")
    text = cli("family-test", careful, "--vs", sampler).stdout
    assert "exact (grid distribution)" in text
    assert "McNemar: exact binomial test on discordant pass/fail items" in text
    assert "Holm over every pair of these 2 runs (1 pair), as the leaderboard corrects" in text


def test_runs_that_may_not_be_compared_are_refused(cli, example_with_runs):
    careful = run_id(example_with_runs, "careful")
    other = new_run(cli, example_with_runs, edit_manifest(example_with_runs, evaluators=[{"type": "exact"}]), "--arm", "sampler", "--repeat", "1")
    result = cli("family-test", careful, "--vs", run_id(example_with_runs, "left_to_right"), "--vs", other)
    assert result.exit_code == 1
    assert result.stdout == ""
    careful_version = cli.json("show", careful)["evaluators"]["exact"]["version"]
    other_version = cli.json("show", other)["evaluators"]["exact"]["version"]
    assert result.stderr == (
        f"Error: not comparable: {careful} vs {other}: evaluator 'exact' version {careful_version} vs {other_version}\n"
    )


def test_a_run_named_twice_or_no_family_is_an_error(cli, example_with_runs):
    careful = run_id(example_with_runs, "careful")
    twice = cli("family-test", careful, "--vs", careful)
    assert twice.exit_code == 1 and f"run {careful} is named twice" in twice.stderr
    assert cli("family-test", careful).exit_code == 2
    unknown = cli("family-test", careful, "--vs", "nosuchrun")
    assert unknown.exit_code == 1 and "no run matches 'nosuchrun'" in unknown.stderr
