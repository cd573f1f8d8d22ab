"""evalsite.stats.distributions against scipy.stats, the independent reference, over grids of
inputs: the analysis commands use these instead of importing scipy.stats."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsite.stats import distributions as d


def test_the_normal_cdf_and_quantile_equal_scipys_over_the_tails():
    """The standard library's (scipy's ndtr formula over libm's erf/erfc; AS241) against scipy's
    ndtr/ndtri, from 1e-300 to 1 - 1e-16 and out to |x| = 38: the worst relative difference seen was
    1.6e-13, below x = -30 (both are within ~2e-13 of the exact value there: the argument x / √2 is
    rounded, and erfc magnifies that by 2x²); 1e-15 for the quantile."""
    from scipy import special

    x = np.concatenate([np.linspace(-38, 38, 7601), np.linspace(-1, 1, 2001)])
    cdf = np.asarray(d.norm_cdf(x))
    assert cdf == pytest.approx(special.ndtr(x), rel=3e-13, abs=1e-300)
    assert [d.norm_cdf(value) for value in x[::50].tolist()] == cdf[::50].tolist()
    assert [d.norm_sf(value) for value in x[::50].tolist()] == pytest.approx(special.ndtr(-x[::50]), rel=3e-13, abs=1e-300)
    p = np.concatenate([np.logspace(-300, -1, 3001), np.linspace(0.01, 0.99, 981), 1 - np.logspace(-16, -1, 151)])
    quantiles = np.asarray(d.norm_ppf(p))
    assert quantiles == pytest.approx(special.ndtri(p), rel=1e-14, abs=1e-15)
    assert [d.norm_ppf(value) for value in p[::40].tolist()] == quantiles[::40].tolist()
    assert [d.norm_ppf(value) for value in (0.0, 1.0, -0.5, 2.0)] == [-math.inf, math.inf, pytest.approx(math.nan, nan_ok=True),
                                                                     pytest.approx(math.nan, nan_ok=True)]
    assert math.isnan(d.norm_cdf(math.nan))


def test_t_quantile_and_tail_and_chi_square_tail_equal_scipy_stats():
    """scipy's references are taken a grid at a time (the same ufuncs as one value at a time)."""
    for p in np.linspace(1e-6, 1 - 1e-6, 41).tolist():
        dfs = [1, 2, 3, 7, 30, 1000, 100_000]
        assert [d.t_ppf(p, df) for df in dfs] == pytest.approx(scipy_stats.t.ppf(p, dfs).tolist(), rel=1e-10, abs=1e-12), p
    for p in (0.9, 0.95, 0.975, 0.99, 0.995, 0.999):  # a power analysis's critical values: 1 - alpha / 2
        dfs = [*range(1, 400), 9_999, 10_000, 10_001, 99_999, 10**6]  # the series, then the expansion
        assert [d.t_ppf(p, df) for df in dfs] == pytest.approx(scipy_stats.t.ppf(p, dfs).tolist(), rel=2e-13), p
    assert [d.t_ppf(p, 5) for p in (0.0, 0.5, 1.0)] == [-math.inf, 0.0, math.inf]
    xs = np.linspace(-12, 12, 97).tolist()
    for df in (1, 2.5, 9, 120):
        assert [d.t_sf(x, df) for x in xs] == pytest.approx(scipy_stats.t.sf(xs, df).tolist(), rel=1e-12, abs=1e-300), df
    xs = np.linspace(0, 200, 401).tolist()
    for df in range(1, 40):
        assert [d.chi2_sf(x, df) for x in xs] == pytest.approx(scipy_stats.chi2.sf(xs, df).tolist(), rel=1e-12, abs=1e-300), df
    assert d.chi2_sf(-1.0, 3) == 1.0
    for fraction in (2.5, 0.5, 0):  # the finite series hold at whole degrees of freedom only
        with pytest.raises(ValueError, match="whole number"):
            d.t_ppf(0.975, fraction)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="whole number"):
            d.chi2_sf(3.0, fraction)  # type: ignore[arg-type]


#: Where the tails are compared at 4,000 trials and more, in standard deviations from the mean: out
#: to where they underflow (past ~38), densest where they change fastest.
SPREAD_POINTS = (0, 0.5, 1, 1.5, 2, 3, 4, 5, 7, 10, 13, 16, 20, 25, 30, 38, 45)


def _tail_points(n: int, p: float) -> list[int]:
    """Where the binomial tails are compared at n trials: every k up to 40 trials (and one past each
    end), every third k (and both ends) up to 119, ~97 evenly spaced below 4,000; from 4,000 trials,
    where evenly spaced k would mostly fall where both tails are 0 or 1 (7 of 98 inside at 100,000
    trials), k at :data:`SPREAD_POINTS` standard deviations either side of the mean, and both ends."""
    if n <= 40:
        return list(range(-1, n + 2))
    if n < 120:
        return sorted({-1, 0, 1, *range(2, n - 1, 3), n - 1, n, n + 1})
    if n < 4000:
        return list(range(0, n + 1, max(1, n // 97)))
    sd = math.sqrt(n * p * (1 - p))
    spread = {round(n * p + sign * z * sd) for z in SPREAD_POINTS for sign in (-1, 1)}
    return sorted({-1, 0, 1, n - 1, n, n + 1, *(k for k in spread if 0 <= k <= n)})


def _two_sided_half(ks: list[int], n: int) -> list[float]:
    """The two-sided exact binomial test's p-values at p = 1/2, the mass of the outcomes at most as
    likely as k: summed in exact fractions up to 1,024 trials, else ``scipy.stats.binomtest``'s."""
    if n > 1024:
        return [scipy_stats.binomtest(k, n, 0.5).pvalue for k in ks]
    counts = [math.comb(n, j) for j in range(n + 1)]
    return [float(Fraction(sum(c for c in counts if c <= counts[k]), 2**n)) for k in ks]


def test_binomial_tails_and_test_equal_scipy_stats():
    """Every trial count up to 40 and every third to 119 (each ends' k included), then large ones
    (:func:`_tail_points`): scipy's references taken a grid at a time (the same ufuncs as one value
    at a time); the two-sided test's, exact up to 1,024 trials (:func:`_two_sided_half`)."""
    for n in [*range(1, 41), *range(41, 120, 3), 500, 1001, 4000, 100_000]:
        for p in (0.5, 0.05, 0.3, 0.999):
            ks = _tail_points(n, p)
            sf, cdf = scipy_stats.binom.sf(ks, n, p).tolist(), scipy_stats.binom.cdf(ks, n, p).tolist()
            assert [d.binom_sf(k, n, p) for k in ks] == pytest.approx(sf, rel=1e-11, abs=1e-300), (n, p)
            assert [d.binom_cdf(k, n, p) for k in ks] == pytest.approx(cdf, rel=1e-11, abs=1e-300), (n, p)
        tested = [k for k in _tail_points(n, 0.5) if 0 <= k <= n]
        assert [d.binom_test_half(k, n) for k in tested] == pytest.approx(_two_sided_half(tested, n), rel=1e-11, abs=1e-300), n
    for n in (1, 2, 24, 60, 1023, 1024):  # a sign test's tails: the correctly rounded value
        for k in range(-1, n + 1, max(1, n // 40)):
            upper = Fraction(sum(math.comb(n, j) for j in range(k + 1, n + 1)), 2**n)
            assert d.binom_sf(k, n, 0.5) == float(upper) and d.binom_cdf(k, n, 0.5) == float(1 - upper), (k, n)
    assert d.binomial_pmf(4, 0.0).tolist() == [1, 0, 0, 0, 0] and d.binomial_pmf(4, 1.0).tolist() == [0, 0, 0, 0, 1]
    assert d.binomial_pmf(1, 0.25).tolist() == [0.75, 0.25] and d.binomial_pmf(0, 0.25).tolist() == [1.0]
    with pytest.raises(ValueError):
        d.binom_test_half(3, 2)


def test_binomial_tails_of_an_array_are_exact_up_to_1024_trials_and_equal_scipy_stats_above():
    """A sign test's tails P(X > k), X ~ Binomial(n, 1/2), over every k (and past both ends): up
    to 1,024 trials the correctly rounded sums of C(n, j) / 2^n, above them scipy.stats.binom.sf's."""
    for n in (1, 2, 7, 100, 1023, 1024):
        k = np.arange(-2, n + 3)
        counts = [math.comb(n, j) for j in range(n + 1)]
        exact = [float(Fraction(sum(counts[max(0, x + 1):]), 2**n)) for x in k.tolist()]
        assert d.binom_sf_array(k, n).tolist() == exact, n
    for n in (1025, 4000, 100_000):
        k = np.arange(-2, n + 3)
        ours, reference = d.binom_sf_array(k, n), scipy_stats.binom.sf(k, n, 0.5)
        assert ours == pytest.approx(reference, rel=1e-11, abs=1e-300), n
        assert d.binom_sf_array(k[[n // 2 + 300, 5]], n) == pytest.approx(reference[[n // 2 + 300, 5]], rel=1e-11)


def test_a_monte_carlo_p_values_clopper_pearson_decision_equals_scipys_beta_bounds():
    """ranking._clear_of decides with binomial tails what the Clopper-Pearson bounds (Beta quantiles) decide."""
    from evalsite.stats.ranking import _LOOK_ERROR, _clear_of

    tail = _LOOK_ERROR / 2
    for drawn in (1, 2, 10, 64, 200, 1000, 8000):
        for hits in sorted({*range(0, min(drawn, 40) + 1), *range(0, drawn + 1, max(1, drawn // 60)), drawn}):
            low = 0.0 if hits == 0 else scipy_stats.beta.ppf(tail, hits, drawn - hits + 1)
            high = 1.0 if hits == drawn else scipy_stats.beta.ppf(1 - tail, hits + 1, drawn - hits)
            for alpha in (0.01, 0.05, 0.1, 0.5):
                assert _clear_of(hits, drawn, alpha) == (high < alpha or low > alpha), (hits, drawn, alpha)


def test_ranks_equal_scipy_rankdata_with_ties():
    rng = np.random.default_rng(7)
    for shape in [(40, 1), (40, 2), (200, 5), (30, 12), (9,)]:
        for values in (rng.integers(0, 3, shape).astype(float), rng.normal(size=shape), np.zeros(shape)):
            for method in ("average", "min", "max"):
                assert np.array_equal(d.rankdata(values, method), scipy_stats.rankdata(values, axis=-1, method=method))


def test_studentized_range_at_infinite_df_equals_scipy_stats():
    """scipy integrates to epsabs 1e-11, so agreement is checked to that."""
    for k in (2, 3, 5, 10, 20):
        for q in (0.0, 0.05, 0.5, 1.0, 2.0, 3.3, 4.5, 6.0, 8.0):
            assert d.studentized_range_cdf(q, k) == pytest.approx(scipy_stats.studentized_range.cdf(q, k, np.inf), abs=1e-11)
            assert d.studentized_range_sf(q, k) == pytest.approx(scipy_stats.studentized_range.sf(q, k, np.inf), abs=1e-11)
        for p in (0.9, 0.95, 0.99):
            assert d.studentized_range_ppf(p, k) == pytest.approx(scipy_stats.studentized_range.ppf(p, k, np.inf), rel=1e-10)


def test_a_small_studentized_range_tail_keeps_its_digits():
    """sf is summed as a difference, not 1 - cdf: far in the tail it is still scipy's to 1e-9 relative."""
    for k in (2, 4, 8):
        expected = scipy_stats.studentized_range.sf(9.0, k, np.inf)
        assert 0 < expected < 1e-6
        assert d.studentized_range_sf(9.0, k) == pytest.approx(expected, rel=1e-6)


def test_the_binomial_pmf_at_one_half_keeps_its_digits_against_exact_fractions():
    for n in (0, 1, 2, 7, 15, 16, 40, 999, 20_001):
        pmf = d.binomial_pmf(n, 0.5)
        assert pmf.size == n + 1
        for j in sorted({*range(0, n + 1, max(1, n // 50)), n // 2, n}):
            exact = float(Fraction(math.comb(n, j), 1 << n))
            if exact > 1e-300:
                assert pmf[j] == pytest.approx(exact, rel=1e-11, abs=0), (n, j)
        if n <= 1000:
            assert pmf == pytest.approx(scipy_stats.binom.pmf(np.arange(n + 1), n, 0.5), rel=1e-11, abs=1e-300)
