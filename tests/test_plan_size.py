"""``evalsite plan-size`` and stats/stopping_design.py: the simulated stop_when design beside the fixed-n one.

References: a brute-force look schedule; the stopping rule's familywise false separations by
seeded simulation (≤ α within Monte Carlo error, where stopping on a fixed-n p-value is not); the
fixed-n items for a power checked by simulating the fixed-n test at that many items; the data model
checked against the means and spread it is asked for.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsite.cli import main
from evalsite.stats import sign_flip_test
from evalsite.stats.stopping_design import Scenario, draw_scores, look_points, simulate_stopping

ALPHA = 0.05


def mc_slack(rate: float, sims: int) -> float:
    """Three Monte Carlo standard errors of a rate estimated from ``sims`` experiments."""
    return 3 * math.sqrt(max(rate * (1 - rate), 0.01) / sims)


@pytest.mark.parametrize(("units", "size", "min_items", "every"), [(100, 1, 30, 20), (57, 1, 1, 10), (40, 7, 20, 10)])
def test_looks_are_the_ends_of_blocks_once_min_items_are_in(units, size, min_items, every):
    expected = [t for t in range(1, units + 1)
                if t * size >= min_items and any((t - 1) * size < k <= t * size for k in range(every, units * size + 1, every))]
    expected = sorted(set(expected) | {units})
    assert look_points(units, unit_size=size, min_items=min_items, check_every=every).tolist() == expected


def test_the_data_model_has_the_means_and_spread_asked_for():
    rng = np.random.default_rng(0)
    binary = draw_scores(Scenario(0.1, base=0.6, arms=3), rng, 200, 1000)
    np.testing.assert_allclose(binary.mean(axis=(0, 1)), [0.6, 0.7, 0.8], atol=0.005)
    nested = draw_scores(Scenario(0.1, base=0.6, nested=True), rng, 200, 1000)
    assert np.all(nested[:, :, 1] >= nested[:, :, 0])  # the better arm is right wherever the other is
    assert abs(float(np.mean(nested[:, :, 1] - nested[:, :, 0])) - 0.1) < 0.005
    continuous = draw_scores(Scenario(0.05, base=0.4, sd=0.3), rng, 200, 1000)
    diffs = continuous[:, :, 1] - continuous[:, :, 0]
    assert abs(float(diffs.mean()) - 0.05) < 0.005 and abs(float(diffs.std()) - 0.3) < 0.005
    clustered = draw_scores(Scenario(0.0, base=0.5, cluster_size=10, cluster_shift=0.3), rng, 200, 100)
    assert abs(float(clustered.mean()) - 0.5) < 0.005
    # a cluster's mean moves by ±0.3, so cluster means spread far more than 10 independent items'
    assert float(clustered.std()) > 2 * math.sqrt(0.25 / 10)


@pytest.mark.parametrize("scenario", [
    Scenario(0.0, base=0.6, arms=3),
    Scenario(0.0, base=0.5, sd=0.4, arms=2),
    Scenario(0.0, base=0.5, arms=2, cluster_size=10, cluster_shift=0.3),
], ids=["binary-3-arms", "continuous", "clusters"])
def test_stopping_when_it_looks_decided_keeps_false_separations_below_alpha(scenario):
    sims = 600
    plan = simulate_stopping(scenario, n_items=1000, min_items=10, check_every=10, n_sims=sims, seed=3, fixed_n=False)
    assert plan.false_separation_rate <= ALPHA + mc_slack(ALPHA, sims)
    assert plan.decided_rate == plan.separated_rate  # without a margin a decision is a separation


def test_peeking_at_a_fixed_n_p_value_is_what_this_prevents():
    """The reference the rule beats: stop at the first of the same looks where the fixed-n
    sign-flip p ≤ α. On identical pass/fail arms it declares a difference far more often than α.
    (For ±1 differences the sign-flip p is the exact two-sided sign test's, checked here too.)"""
    rng = np.random.default_rng(4)
    sims, n = 600, 1000
    diffs = (rng.random((sims, n)) < 0.5).astype(float) - (rng.random((sims, n)) < 0.5)
    looks = look_points(n, unit_size=1, min_items=10, check_every=10)
    wins = np.cumsum(diffs > 0, axis=1)[:, looks - 1]
    moved = np.cumsum(diffs != 0, axis=1)[:, looks - 1]
    p = np.minimum(1.0, 2 * scipy_stats.binom.cdf(np.minimum(wins, moved - wins), moved, 0.5))
    for sim in range(3):
        assert sign_flip_test(diffs[sim], np.zeros(n)).p_value == pytest.approx(p[sim, -1], rel=1e-9)
    assert np.mean(np.any(p <= ALPHA, axis=1)) > 3 * ALPHA
    stopped = simulate_stopping(Scenario(0.0, base=0.5), n_items=n, min_items=10, check_every=10, n_sims=sims,
                                seed=4, fixed_n=False)
    assert stopped.false_separation_rate <= ALPHA + mc_slack(ALPHA, sims)


def test_a_clear_difference_stops_early_and_the_right_way():
    plan = simulate_stopping(Scenario(0.1, base=0.6, nested=True), n_items=1000, min_items=10, check_every=10,
                             n_sims=300, seed=1, fixed_n=False)
    assert plan.decided_rate > 0.95 and plan.false_separation_rate == 0
    assert plan.items_p10 <= plan.items_median <= plan.items_p90 < 1000


def test_equivalence_is_declared_only_with_a_margin():
    equal = Scenario(0.0, base=0.5, nested=True)  # nested equal arms: every difference is 0
    plan = simulate_stopping(equal, n_items=600, margin=0.05, n_sims=50, seed=2, fixed_n=False)
    assert plan.equivalent_rate == 1.0 and plan.separated_rate == 0.0
    assert simulate_stopping(equal, n_items=600, n_sims=50, seed=2, fixed_n=False).decided_rate == 0.0


@pytest.mark.parametrize("scenario", [
    Scenario(0.1, base=0.6),
    Scenario(0.1, base=0.6, nested=True),
    Scenario(0.08, base=0.5, sd=0.5),
], ids=["binary", "nested", "continuous"])
def test_fixed_n_items_for_the_same_power_have_that_power(scenario):
    """The fixed-n items reported (stats/power.py, or the exact one-signed rule for nested arms),
    fed back as the dataset size, give the fixed-n test about that power in simulation."""
    plan = simulate_stopping(scenario, n_items=300, n_sims=200, seed=5, fixed_n=True)
    assert plan.fixed_items is not None and plan.fixed_items_power is not None
    check = simulate_stopping(scenario, n_items=plan.fixed_items, n_sims=300, seed=6, fixed_n=True)
    # power.py is calibrated to ±3 points; the one-signed rule is exact
    assert abs(check.fixed_power - plan.fixed_items_power) <= 0.03 + mc_slack(plan.fixed_items_power, 300)


@pytest.mark.parametrize(("kwargs", "culprit"), [
    ({"delta": 0.5, "base": 0.6}, "every arm's mean"),
    ({"delta": 0.1, "base": 0.5, "sd": 0.9}, "sd"),
    ({"delta": 0.1, "nested": True, "sd": 0.2}, "nested"),
    ({"delta": 0.1, "arms": 1}, "arms"),
])
def test_impossible_scenarios_name_the_culprit(kwargs, culprit):
    delta = kwargs.pop("delta")
    with pytest.raises(ValueError, match=culprit):
        simulate_stopping(Scenario(delta, **kwargs), n_items=100, n_sims=2)


def test_impossible_counts_name_the_culprit():
    with pytest.raises(ValueError, match="max-items 200 is more than the 100 items"):
        simulate_stopping(Scenario(0.1), n_items=100, max_items=200, n_sims=2)
    with pytest.raises(ValueError, match="check-every"):
        simulate_stopping(Scenario(0.1), n_items=100, check_every=0, n_sims=2)


# The command --------------------------------------------------------------------------------------


def test_plan_size_prints_both_designs_outside_a_project(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("plan-size", "--delta", "0.1", "--base", "0.6", "--nested", "--sims", "100", "--check-every", "10")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["design", "items_median", "items_mean", "items_p10", "items_p90", "decided"]
    assert lines[2].startswith("stop_when (anytime-valid)")
    assert lines[3].startswith("fixed-n, all 1,000 items") and lines[4].startswith("fixed-n, same power")


def test_plan_size_json_is_the_simulation(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["plan-size", "--delta", "0.1", "--base", "0.6", "--items", "400", "--sims", "100", "--seed", "9"]
    report = cli.json(*args)
    expected = simulate_stopping(Scenario(0.1, base=0.6), n_items=400, n_sims=100, seed=9)
    assert report["plan"]["items_median"] == expected.items_median
    assert report["plan"]["decided_rate"] == expected.decided_rate
    assert report["plan"]["fixed_items"] == expected.fixed_items
    assert report["scenario"]["base"] == 0.6 and report["seed"] == 9


@pytest.mark.parametrize(("args", "message"), [
    (["--delta", "0.6", "--base", "0.6"], "Error: delta/base: every arm's mean (here 0.6 to 1.2)"),
    (["--delta", "0.1", "--items", "100", "--max-items", "200"], "Error: max-items 200 is more than the 100 items"),
    (["--delta", "0.1", "--sd", "0.2", "--nested"], "Error: nested: only pass/fail scores"),
])
def test_plan_size_refuses_in_one_line(cli, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = cli("plan-size", *args, "--sims", "2")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and result.stderr.startswith(message)


def test_plan_size_usage_errors_exit_2(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("plan-size").exit_code == 2  # --delta is required
    assert cli("plan-size", "--delta", "0.1", "--alpha", "1.5").exit_code == 2


def test_the_documented_example_is_real_output(cli, tmp_path, monkeypatch):
    """docs/reference/commands/plan-size.md: its console example, run as written, and every option in its table."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "reference" / "commands" / "plan-size.md").read_text()
    block = re.search(r"```console\n\$ evalsite (.*?)\n(.*?)```", page, re.DOTALL)
    assert block
    monkeypatch.chdir(tmp_path)
    result = cli(*block.group(1).split())
    assert result.exit_code == 0, result.output
    assert result.stdout == block.group(2)
    for parameter in main.commands["plan-size"].params:
        for option in parameter.opts:
            assert f"`{option}" in page, f"{option} is not in the options table"
