"""Repeat noise, flakiness, pass@k, power and percentiles against hand values and combinatorics."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from evalsite.stats import (
    flakiness,
    min_detectable_effect,
    min_items_for_alpha,
    nearest_rank_percentile,
    pass_at_k,
    pass_hat_k,
    repeat_noise,
    required_n,
    sign_flip_test,
)


def test_repeat_noise_is_the_spread_of_per_repeat_means():
    matrix = np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    result = repeat_noise(matrix)
    assert result.repeat_means == pytest.approx((0.75, 0.25, 0.75))
    assert result.std == pytest.approx(np.std([0.75, 0.25, 0.75], ddof=1))
    assert (result.n_items, result.n_repeats) == (4, 3)


def test_repeat_noise_uses_only_the_items_present_in_every_repeat():
    matrix = np.array([[1.0, np.nan], [0.0, 1.0], [np.nan, np.nan]])
    result = repeat_noise(matrix)
    assert result.repeat_means == (0.0, 1.0)
    assert (result.n_items, result.items_left_out) == (1, 1)
    assert math.isnan(repeat_noise([[1.0], [0.0]]).std)  # one repeat: no spread to measure


def test_a_deterministic_arm_with_an_incomplete_last_repeat_has_no_noise():
    difficulty = (np.arange(200) % 3 == 0).astype(float)  # the same answer on every repeat
    matrix = np.column_stack([difficulty, difficulty, np.where(np.arange(200) < 50, difficulty, np.nan)])
    result = repeat_noise(matrix)
    assert result.std == pytest.approx(0.0, abs=1e-12)
    assert (result.n_items, result.items_left_out, result.n_repeats) == (50, 150, 3)


def brute_force_pass_at_k(n, c, k):
    """Share of k-subsets of n runs (c passing) with at least one / only passing runs."""
    runs = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(runs, k))
    return (
        sum(any(s) for s in subsets) / len(subsets),
        sum(all(s) for s in subsets) / len(subsets),
    )


@given(st.integers(1, 10).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_and_pass_hat_k_equal_brute_force_combinatorics(case):
    n, c, k = case
    at_least_one, all_pass = brute_force_pass_at_k(n, c, k)
    assert pass_at_k(n, c, k) == pytest.approx(at_least_one)
    assert pass_hat_k(n, c, k) == pytest.approx(all_pass)


def test_pass_at_k_is_undefined_beyond_the_recorded_runs():
    assert math.isnan(pass_at_k(3, 1, 4)) and math.isnan(pass_hat_k(3, 1, 4))
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def test_flakiness_per_item():
    outcomes = np.array(
        [[1, 1, 1, 1, 1, 1, 1, 1, 0, 0], [1] * 10, [0] * 9 + [np.nan]], dtype=float
    )
    result = flakiness(outcomes, k=3)
    assert result.n_runs == (10, 10, 9) and result.n_passed == (8, 10, 0)
    assert result.pass_rate == pytest.approx((0.8, 1.0, 0.0))
    assert result.wilson[0] == pytest.approx((0.4902, 0.9433), abs=5e-5)
    assert result.pass_at_k == pytest.approx((1 - 0 / 120, 1.0, 0.0))  # C(2,3) = 0
    assert result.pass_hat_k == pytest.approx((56 / 120, 1.0, 0.0))
    assert result.flaky_items == (0,)
    assert result.mean_pass_hat_k == pytest.approx((56 / 120 + 1.0) / 3)


def test_flakiness_default_k_is_the_fewest_recorded_repeats():
    result = flakiness([[True, False, True], [True, True, np.nan]])
    assert result.k == 2
    assert result.pass_at_k == pytest.approx((1 - 0 / 3, 1.0))
    assert math.isnan(flakiness([[1, 0, 1], [1, 1, np.nan]], k=3).pass_at_k[1])  # only two runs


def test_flakiness_refuses_scores_that_are_not_outcomes():
    with pytest.raises(ValueError, match="0/1"):
        flakiness([[0.5, 1.0]])


def test_min_detectable_effect_of_normal_differences_is_near_the_textbook_value():
    # normal differences: the tilt of the observed magnitudes is a shift of the mean, so the
    # calibrated answer (tests/test_power_calibration.py) stays within 2% of (z + z_power) sd / √n
    diffs = np.random.default_rng(0).normal(0.05, 0.4, size=200)
    result = min_detectable_effect(diffs, alpha=0.05, power=0.8)
    sd = np.std(diffs, ddof=1)
    assert result.effect == pytest.approx((1.959964 + 0.841621) * sd / math.sqrt(200), rel=0.02)
    assert result.n == 200 and result.method.startswith("sign-flip power")


def test_min_detectable_effect_is_infinite_below_the_sign_flip_floor():
    assert min_detectable_effect([0.1, -0.2, 0.3, 0.1, 0.2]).effect == math.inf
    assert math.isfinite(min_detectable_effect([0.1, -0.2, 0.3, 0.1, 0.2, 0.0] * 2).effect)


def test_required_n_near_the_textbook_value_and_floor():
    # (1.959964 + 0.841621)^2 × 0.5^2 / 0.1^2 = 196.2 items by the textbook formula; the sign-flip
    # test compares with the spread including the effect, so a few more
    assert 197 <= required_n(0.5, 0.1).n <= 202
    assert required_n(0.5, -0.1).n == required_n(0.5, 0.1).n
    assert required_n(0.5, 1.5).n in (6, 7)  # near the floor of 6: 2 / 2^6 < 0.05
    diffs = np.random.default_rng(1).normal(size=50)
    assert required_n(diffs, 0.2).sd == pytest.approx(np.std(diffs, ddof=1))


def test_required_n_inverts_min_detectable_effect():
    diffs = np.random.default_rng(2).normal(0.0, 0.3, size=400)
    effect = min_detectable_effect(diffs).effect
    assert required_n(diffs, effect).n in (400, 401)


def test_min_items_for_alpha_is_where_the_sign_flip_test_can_first_reach_alpha():
    for alpha in (0.05, 0.01, 0.1):
        n = min_items_for_alpha(alpha)
        all_positive = np.arange(1, n + 1, dtype=float)
        assert sign_flip_test(all_positive, np.zeros(n)).p_value <= alpha
        assert sign_flip_test(all_positive[:-1], np.zeros(n - 1)).p_value > alpha


def test_power_inputs_are_validated():
    with pytest.raises(ValueError, match="effect"):
        required_n(0.5, 0.0)
    with pytest.raises(ValueError, match="power"):
        required_n(0.5, 0.1, power=1.0)
    with pytest.raises(ValueError, match="at least 2"):
        min_detectable_effect([0.3])
    with pytest.raises(ValueError, match="sd"):
        required_n(-1.0, 0.1)


def test_required_n_has_the_nominal_power_under_its_own_model():
    """Simulate normal differences at the required n: a z-test rejects about `power` of the time."""
    sd, effect = 1.0, 0.35
    n = required_n(sd, effect).n
    rng = np.random.default_rng(3)
    samples = rng.normal(effect, sd, size=(4000, n))
    z = samples.mean(axis=1) / (sd / math.sqrt(n))
    rejected = np.mean(np.abs(z) > scipy_stats.norm.ppf(0.975))
    assert rejected == pytest.approx(0.8, abs=0.03)


@pytest.mark.parametrize(
    "p, expected",
    [(0, 15), (5, 15), (30, 20), (40, 20), (50, 35), (100, 50)],  # Wikipedia's worked example
)
def test_nearest_rank_percentile_hand_values(p, expected):
    assert nearest_rank_percentile([15, 20, 35, 40, 50], p) == expected


def test_nearest_rank_percentile_reads_p_as_its_decimal():
    assert nearest_rank_percentile(np.arange(1, 1001), 99.9) == 999
    assert nearest_rank_percentile(np.arange(1, 21), 95) == 19
    assert nearest_rank_percentile([3.0, 1.0, 2.0], 50) == 2.0


def test_nearest_rank_percentile_validation():
    with pytest.raises(ValueError):
        nearest_rank_percentile([], 50)
    with pytest.raises(ValueError):
        nearest_rank_percentile([1.0], 101)
