"""The anytime-valid confidence sequence (stats/confseq.py) against independent references.

The `confseq` package (Howard et al.) does not build on Python 3.11 (its bundled pybind11 is too
old) and `expectation` is not on PyPI, so the references are: the paper's equations written out
as a slow per-item loop (Waudby-Smith & Ramdas 2023, JRSS-B, Theorem 2), the same sequence read as
the paper's capital process (the set of means m at which neither one-sided wealth reaches 2/α,
evaluated by brute force on a grid), the published width √(2σ² log(2/α) / n) at the horizon, and
seeded simulations of the guarantee itself: the true mean leaves the running interval at some look
in at most α of the sequences, where a fixed-n interval recomputed at every look does not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsite.stats.confseq import confidence_sequence, decide, decisions, family_alpha

ALPHA = 0.05


def paper_loop(values, alpha, lower=-1.0, upper=1.0, horizon=None):
    """Theorem 2 of Waudby-Smith & Ramdas (2023), one item at a time, on x = (v − lower) / (upper − lower)."""
    log_term = math.log(2 / alpha)
    mean_before, variance_before = 0.5, 0.25  # μ̂_0 and σ̂²_0
    total, squares = 0.0, 0.0
    bets, weighted, penalties = 0.0, 0.0, 0.0
    best_low, best_high = 0.0, 1.0
    lows, highs = [], []
    for t, value in enumerate(values, start=1):
        x = (value - lower) / (upper - lower)
        spread = t * math.log(1 + t) if horizon is None else max(t, horizon)
        bet = min(math.sqrt(2 * log_term / (variance_before * spread)), 0.5)
        bets += bet
        weighted += bet * x
        penalties += 4 * (x - mean_before) ** 2 * (-math.log(1 - bet) - bet) / 4
        centre, radius = weighted / bets, (log_term + penalties) / bets
        best_low, best_high = max(best_low, centre - radius), min(best_high, centre + radius)
        lows.append(lower + (upper - lower) * best_low)
        highs.append(lower + (upper - lower) * best_high)
        total += x
        mean_before = (0.5 + total) / (t + 1)
        squares += (x - mean_before) ** 2
        variance_before = (0.25 + squares) / (t + 1)
    return np.array(lows), np.array(highs)


def capital_inside(x, m, alpha, horizon=None):
    """m is in the (unintersected) CS at the last t iff both one-sided EB wealths stay below 2/α:
    K±(m) = Π exp(±λ_i (x_i − m) − v_i ψ_E(λ_i)), the paper's supermartingales, multiplied out."""
    log_term = math.log(2 / alpha)
    up, down = 0.0, 0.0  # log wealth
    mean, variance, total, squares = 0.5, 0.25, 0.0, 0.0
    for t, xi in enumerate(x, start=1):
        spread = t * math.log(1 + t) if horizon is None else max(t, horizon)
        bet = min(math.sqrt(2 * log_term / (variance * spread)), 0.5)
        cost = (xi - mean) ** 2 * (-math.log(1 - bet) - bet)
        up += bet * (xi - m) - cost
        down += -bet * (xi - m) - cost
        total += xi
        mean = (0.5 + total) / (t + 1)
        squares += (xi - mean) ** 2
        variance = (0.25 + squares) / (t + 1)
    return up < log_term and down < log_term


@pytest.mark.parametrize("horizon", [None, 200])
@pytest.mark.parametrize("kind", ["binary", "continuous", "nested", "constant"])
def test_matches_the_papers_equations_item_by_item(kind, horizon):
    rng = np.random.default_rng(7)
    values = {
        "binary": rng.choice([-1.0, 0.0, 1.0], p=[0.2, 0.5, 0.3], size=400),
        "continuous": np.clip(rng.normal(0.1, 0.3, size=400), -1, 1),
        "nested": (rng.random(400) < 0.1).astype(float),
        "constant": np.full(400, 0.25),
    }[kind]
    low, high = confidence_sequence(values, alpha=ALPHA, horizon=horizon)
    ref_low, ref_high = paper_loop(values, ALPHA, horizon=horizon)
    np.testing.assert_allclose(low, ref_low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(high, ref_high, rtol=0, atol=1e-12)


@pytest.mark.parametrize("horizon", [None, 100])
def test_the_interval_is_where_neither_wealth_reaches_two_over_alpha(horizon):
    rng = np.random.default_rng(3)
    x = (rng.random(150) < 0.7).astype(float)  # on [0, 1]: lower 0, upper 1
    low, high = confidence_sequence(x, alpha=ALPHA, lower=0.0, upper=1.0, horizon=horizon)
    # away from the edges (within 1e-3 the grid cannot tell), membership matches the wealth test
    for m in np.linspace(0.3, 0.95, 131):
        if min(abs(m - low[-1]), abs(m - high[-1])) < 1e-3:
            continue
        # the running intersection can only be tighter than the last interval alone
        if low[-1] < m < high[-1]:
            assert capital_inside(x, m, ALPHA, horizon), m
        elif not capital_inside(x, m, ALPHA, horizon):
            assert not (low[-1] < m < high[-1]), m


def test_width_at_the_horizon_is_the_published_empirical_bernstein_rate():
    """Tuned for n, the radius is about √(2σ² log(2/α) / n) (the paper's fixed-n EB width), and
    the default schedule, spread over all t, is wider there. A balanced repeating pattern keeps
    the centre still, so the running intersection is the last interval."""
    n = 20_000
    values = np.tile([1.0, 0.0, -1.0, 0.0], n // 4)  # σ² = 1/2
    expected = math.sqrt(2 * 0.5 * math.log(2 / ALPHA) / n)
    low, high = confidence_sequence(values, alpha=ALPHA, horizon=n)
    assert (high[-1] - low[-1]) / 2 == pytest.approx(expected, rel=0.02)
    low, high = confidence_sequence(values, alpha=ALPHA)
    assert (high[-1] - low[-1]) / 2 > 1.3 * expected


def test_no_interval_is_narrower_than_the_floor_of_capped_bets():
    """statistics.md: with bets capped at 1/2 each interval is at least ±4 log(2/α) / t wide on
    [−1, 1]; all-zero differences (no spread at all) sit just above that floor."""
    t = np.arange(1, 2001)
    low, high = confidence_sequence(np.zeros(2000), alpha=ALPHA, horizon=2000)
    floor = 4 * math.log(2 / ALPHA) / t
    inside = floor < 1  # before that the interval is the whole [−1, 1]
    ratio = ((high - low) / 2)[inside] / floor[inside]
    assert np.all(ratio >= 1 - 1e-12) and ratio[-1] < 1.01


def test_the_running_intersection_only_narrows_and_is_rescaled():
    rng = np.random.default_rng(5)
    values = rng.random(500)
    low, high = confidence_sequence(values, alpha=ALPHA, lower=0.0, upper=1.0)
    assert np.all(np.diff(low) >= 0) and np.all(np.diff(high) <= 0)
    assert np.all(low <= high)
    # the same data on [-3, 2] is the same sequence, stretched
    wide_low, wide_high = confidence_sequence(values * 5 - 3, alpha=ALPHA, lower=-3.0, upper=2.0)
    np.testing.assert_allclose(wide_low, low * 5 - 3, atol=1e-12)
    np.testing.assert_allclose(wide_high, high * 5 - 3, atol=1e-12)


def test_rows_are_independent_sequences():
    rng = np.random.default_rng(2)
    rows = rng.choice([-1.0, 0.0, 1.0], size=(3, 120))
    low, high = confidence_sequence(rows, alpha=ALPHA, horizon=100)
    for row, row_low, row_high in zip(rows, low, high):
        one_low, one_high = confidence_sequence(row, alpha=ALPHA, horizon=100)
        np.testing.assert_array_equal(row_low, one_low)
        np.testing.assert_array_equal(row_high, one_high)


def test_edge_cases():
    low, high = confidence_sequence([], alpha=ALPHA)
    assert low.shape == high.shape == (0,)
    low, high = confidence_sequence([1.0], alpha=ALPHA)  # one value at the bound: nothing known yet
    assert (low[0], high[0]) == (-1.0, 1.0)
    low, high = confidence_sequence(np.full(2000, -1.0), alpha=ALPHA)  # constant, at the lower bound
    assert low[-1] == -1.0 and high[-1] < -0.95
    low, high = confidence_sequence(np.zeros(3000), alpha=ALPHA)  # constant zero: equivalence, never separation
    assert decide(low[-1], high[-1], margin=0.05) == "equivalent"
    assert np.all(low <= 0) and np.all(high >= 0)


def test_deterministic():
    values = np.random.default_rng(1).random(1000) * 2 - 1
    first = confidence_sequence(values, alpha=ALPHA)
    second = confidence_sequence(values.copy(), alpha=ALPHA)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])


@pytest.mark.parametrize(
    ("call", "culprit"),
    [
        (lambda: confidence_sequence([0.0, 1.5], alpha=ALPHA), r"values: 1 outside \[-1, 1\].*\[1\] = 1.5"),
        (lambda: confidence_sequence([0.0, math.nan], alpha=ALPHA), "values: 1 outside.*not finite"),
        (lambda: confidence_sequence(np.zeros((2, 2, 2)), alpha=ALPHA), "values: expected 1-D"),
        (lambda: confidence_sequence([0.0], alpha=1.0), "alpha"),
        (lambda: confidence_sequence([0.0], alpha=0), "alpha"),
        (lambda: confidence_sequence([0.0], alpha="0.05"), "alpha"),
        (lambda: confidence_sequence([0.0], alpha=ALPHA, lower=1.0, upper=0.0), "lower and upper"),
        (lambda: confidence_sequence([0.0], alpha=ALPHA, horizon=0), "horizon"),
        (lambda: family_alpha(0.05, 0), "pairs"),
        (lambda: family_alpha(1.5, 2), "alpha"),
        (lambda: decide(-0.1, 0.1, margin=-1.0), "margin"),
    ],
)
def test_bad_inputs_name_the_culprit(call, culprit):
    with pytest.raises(ValueError, match=culprit):
        call()


def test_decisions():
    assert decide(0.01, 0.2, margin=None) == "separated"
    assert decide(-0.2, -0.01, margin=0.05) == "separated"
    assert decide(0.01, 0.02, margin=0.05) == "separated"  # a real difference inside the margin
    assert decide(-0.04, 0.04, margin=0.05) == "equivalent"
    assert decide(-0.04, 0.04, margin=None) is None
    assert decide(-0.04, 0.06, margin=0.05) is None
    assert decide(-0.05, 0.01, margin=0.05) is None  # the margin's ends are open
    separated, equivalent = decisions(np.array([0.01, -0.04, -0.04, 0.01]), np.array([0.2, 0.04, 0.06, 0.02]), margin=0.05)
    assert separated.tolist() == [True, False, False, True] and equivalent.tolist() == [False, True, False, False]
    assert family_alpha(0.05, 3) == pytest.approx(0.05 / 3)
    assert family_alpha(0.05, 1) == 0.05
    assert family_alpha(np.float32(0.05), 2) == pytest.approx(0.025)  # any real number will do


# The guarantee, by simulation: 1,000 sequences of 2,000 values, looked at after every value. -------

SEQUENCES, LENGTH = 1000, 2000
#: α plus three Monte Carlo standard errors of a rate α over SEQUENCES sequences.
ALLOWED = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / SEQUENCES)


def ever_missed(draws, mean, horizon=None):
    low, high = confidence_sequence(draws, alpha=ALPHA, horizon=horizon)
    return float(np.mean(np.any((low > mean) | (high < mean), axis=1)))


@pytest.mark.parametrize("horizon", [None, 300])
def test_binary_differences_are_covered_at_every_look(horizon):
    rng = np.random.default_rng(20231)
    a = rng.random((SEQUENCES, LENGTH)) < 0.7
    b = rng.random((SEQUENCES, LENGTH)) < 0.6
    assert ever_missed(a.astype(float) - b, 0.1, horizon) <= ALLOWED


@pytest.mark.parametrize("horizon", [None, 300])
def test_continuous_differences_are_covered_at_every_look(horizon):
    rng = np.random.default_rng(20232)
    draws = rng.beta(2, 5, size=(SEQUENCES, LENGTH)) - rng.beta(2, 5, size=(SEQUENCES, LENGTH))
    assert ever_missed(draws, 0.0, horizon) <= ALLOWED


def test_skewed_values_near_a_bound_are_covered():
    """Rare large values (a mean of 0.02 on [0, 1]) are where normal approximations fail."""
    rng = np.random.default_rng(20233)
    draws = (rng.random((SEQUENCES, LENGTH)) < 0.02).astype(float)
    low, high = confidence_sequence(draws, alpha=ALPHA, lower=0.0, upper=1.0, horizon=500)
    assert float(np.mean(np.any((low > 0.02) | (high < 0.02), axis=1))) <= ALLOWED


def test_a_fixed_n_interval_recomputed_at_every_look_is_not_valid():
    """The check above has teeth: the 95% t-interval, looked at after every block of 10, misses
    the true mean at some look far more often than 5% — what the sequence exists to prevent."""
    rng = np.random.default_rng(20234)
    draws = rng.choice([-1.0, 0.0, 1.0], size=(SEQUENCES, LENGTH))
    t = np.arange(1, LENGTH + 1)
    means = np.cumsum(draws, axis=1) / t
    sd = np.sqrt(np.maximum(np.cumsum(draws**2, axis=1) / t - means**2, 1e-12) * t / np.maximum(t - 1, 1))
    looks = slice(9, None, 10)
    half = scipy_stats.t.ppf(0.975, np.maximum(t - 1, 1)) * sd / np.sqrt(t)
    missed = np.mean(np.any(np.abs(means[:, looks]) > half[:, looks], axis=1))
    assert missed > 3 * ALPHA
    assert ever_missed(draws, 0.0) <= ALLOWED
