"""evalsite.stats.distributions against scipy.stats, the independent reference, over grids of
inputs: the analysis commands use these instead of importing scipy.stats."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsite.stats import distributions as d


def test_normal_t_chi_square_and_beta_equal_scipy_stats():
    for p in np.linspace(1e-6, 1 - 1e-6, 41):
        assert d.norm_ppf(p) == pytest.approx(scipy_stats.norm.ppf(p), rel=1e-12, abs=1e-300)
        for df in (1, 2, 3, 7, 30, 1000, 1e6):
            assert d.t_ppf(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-12)
    for x in np.linspace(-12, 12, 97):
        assert d.norm_cdf(x) == pytest.approx(scipy_stats.norm.cdf(x), rel=1e-12, abs=1e-300)
        assert d.norm_sf(x) == pytest.approx(scipy_stats.norm.sf(x), rel=1e-12, abs=1e-300)
        for df in (1, 2.5, 9, 120):
            assert d.t_sf(x, df) == pytest.approx(scipy_stats.t.sf(x, df), rel=1e-12, abs=1e-300)
    for x in np.linspace(0, 80, 81):
        for df in (1, 2, 5, 19):
            assert d.chi2_sf(x, df) == pytest.approx(scipy_stats.chi2.sf(x, df), rel=1e-12, abs=1e-300)
    for a in (1, 2, 7, 100, 5000):
        for b in (1, 3, 40, 9999):
            for p in (5e-4, 0.01, 0.5, 0.99, 1 - 5e-4):
                assert d.beta_ppf(p, a, b) == pytest.approx(scipy_stats.beta.ppf(p, a, b), rel=1e-12)


def test_binomial_tails_and_test_equal_scipy_stats():
    for n in [*range(1, 120), 500, 1001, 4000]:
        ks = range(-1, n + 2) if n < 120 else range(0, n + 1, max(1, n // 97))
        for k in ks:
            assert d.binom_sf(k, n, 0.5) == pytest.approx(scipy_stats.binom.sf(k, n, 0.5), rel=1e-11, abs=1e-300)
            assert d.binom_cdf(k, n, 0.5) == pytest.approx(scipy_stats.binom.cdf(k, n, 0.5), rel=1e-11, abs=1e-300)
            if 0 <= k <= n:
                assert d.binom_test_half(k, n) == pytest.approx(
                    scipy_stats.binomtest(k, n, 0.5).pvalue, rel=1e-11, abs=1e-300), (k, n)
    with pytest.raises(ValueError):
        d.binom_test_half(3, 2)


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


def test_binomial_half_pmf_keeps_its_digits_against_exact_fractions():
    from fractions import Fraction

    from evalsite.stats.distributions import binomial_half_pmf

    for n in (0, 1, 2, 7, 15, 16, 40, 999, 20_001):
        pmf = binomial_half_pmf(n)
        assert pmf.size == n + 1
        for j in sorted({*range(0, n + 1, max(1, n // 50)), n // 2, n}):
            exact = float(Fraction(math.comb(n, j), 1 << n))
            if exact > 1e-300:
                assert pmf[j] == pytest.approx(exact, rel=1e-11, abs=0), (n, j)
        if n <= 1000:
            assert pmf == pytest.approx(scipy_stats.binom.pmf(np.arange(n + 1), n, 0.5), rel=1e-11, abs=1e-300)
