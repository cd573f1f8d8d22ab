"""The O(n) BCa path and the early-stopping Friedman test against independent references."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsite.stats import bootstrap_ci, friedman_test, paired_bootstrap_ci
from evalsite.stats import intervals as intervals_module


def scipy_bca(values: np.ndarray, seed: int, n_resamples: int, confidence: float = 0.95):
    """scipy's own BCa over the values themselves (its O(n²) jackknife)."""
    result = scipy_stats.bootstrap(
        (values,), np.mean, n_resamples=n_resamples, confidence_level=confidence,
        method="BCa", rng=np.random.default_rng(seed),
        batch=max(1, intervals_module._RESAMPLE_CELLS // values.size),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@pytest.mark.parametrize("n", [2, 3, 17, 200, 1500])
@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("kind", ["normal", "pass_fail", "skewed"])
def test_mean_bca_equals_scipy(n, seed, kind):
    rng = np.random.default_rng(1000 * n + seed)
    values = {
        "normal": lambda: rng.normal(0.3, 1.0, n),
        "pass_fail": lambda: (rng.random(n) < 0.7).astype(float),
        "skewed": lambda: rng.exponential(1.0, n) ** 2,
    }[kind]()
    if np.ptp(values) == 0:
        values[0] = 1 - values[0]
    ours = bootstrap_ci(values, seed=seed, n_resamples=999)
    low, high = scipy_bca(values, seed, 999)
    if not (np.isfinite(low) and np.isfinite(high)):  # scipy's BCa undefined: our fallback
        assert "percentile" in ours.method or "degenerate" in ours.method
        return
    assert ours.method == "BCa"
    assert (ours.low, ours.high) == pytest.approx((low, high), rel=1e-12, abs=1e-14)


def test_paired_bca_and_other_confidence_equal_scipy():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=500), rng.normal(0.1, 1.0, size=500)
    ours = paired_bootstrap_ci(a, b, seed=3, n_resamples=1999, confidence=0.9)
    assert tuple(ours) == pytest.approx(scipy_bca(a - b, 3, 1999, 0.9), rel=1e-12)


def test_cluster_bca_equals_scipy_on_the_ratio_statistic():
    rng = np.random.default_rng(5)
    values = rng.normal(size=120)
    groups = rng.integers(0, 25, size=120)
    ours = bootstrap_ci(values, groups=groups, seed=2, n_resamples=999)
    labels = list(dict.fromkeys(groups.tolist()))
    sums = np.array([values[groups == g].sum() for g in labels])
    sizes = np.array([(groups == g).sum() for g in labels], dtype=float)
    reference = scipy_stats.bootstrap(
        (np.arange(len(labels)),),
        lambda chosen, axis=-1: sums[chosen].sum(axis=axis) / sizes[chosen].sum(axis=axis),
        n_resamples=999, method="BCa", rng=np.random.default_rng(2),
        batch=max(1, intervals_module._RESAMPLE_CELLS // len(labels)),
    ).confidence_interval
    assert ours.method == "cluster BCa"
    assert tuple(ours) == pytest.approx((reference.low, reference.high), rel=1e-12)


class DictMemo(dict):
    def put(self, key, value):
        self[key] = value


def test_identical_arrays_are_bootstrapped_once_with_a_memo_and_stats_keeps_no_state(monkeypatch):
    calls = []
    original = intervals_module.resample_statistic
    monkeypatch.setattr(
        intervals_module, "resample_statistic", lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs)
    )
    values = np.random.default_rng(11).random(301)
    memo = DictMemo()
    first = bootstrap_ci(values, seed=9, memo=memo)
    second = bootstrap_ci(values.copy(), seed=9, memo=memo)
    assert first == second and len(calls) == 1 and len(memo) == 1
    bootstrap_ci(values, seed=10, memo=memo)  # another seed is another interval
    assert len(calls) == 2
    assert bootstrap_ci(values, seed=9) == first and len(calls) == 3  # no memo given: computed again


def exact_permutation_p(matrix: np.ndarray) -> float:
    """Brute force: every within-row permutation of the rank rows (k!^n patterns)."""
    import itertools

    ranks = scipy_stats.rankdata(-matrix, axis=1)
    observed = np.sum(ranks.sum(axis=0) ** 2)
    patterns = list(itertools.product(*[list(itertools.permutations(row)) for row in ranks]))
    hits = sum(np.sum(np.sum(rows, axis=0) ** 2) >= observed - 1e-9 for rows in patterns)
    return hits / len(patterns)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_early_stopped_friedman_agrees_with_full_enumeration(seed):
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(5, 3)) + np.array([0.0, 0.4 * seed, 0.8 * seed])
    exact = exact_permutation_p(matrix)
    result = friedman_test(matrix, seed=seed, n_resamples=20_000)
    assert abs(result.p_value - exact) < 4 * result.std_error + 1 / (result.n_resamples + 1)
    if abs(exact - 0.05) > 0.02:  # clear cases: the early decision is the exact one
        assert (result.p_value <= 0.05) == (exact <= 0.05)


@pytest.mark.slow
def test_early_stopping_keeps_the_level_under_the_null():
    """Seeded simulation: arms alike, the rejection rate at 0.05 stays at or below 0.05."""
    rng = np.random.default_rng(123)
    trials = 600
    rejections = sum(
        friedman_test(rng.normal(size=(12, 4)), seed=trial).p_value <= 0.05 for trial in range(trials)
    )
    assert rejections / trials <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / trials)


def test_clear_evidence_stops_early_and_none_draws_the_budget():
    rng = np.random.default_rng(8)
    matrix = rng.normal(size=(400, 5)) + np.linspace(0, 1, 5)
    early = friedman_test(matrix)
    assert early.n_resamples < 5_000 and early.p_value < 0.05
    assert scipy_stats.friedmanchisquare(*matrix.T).pvalue < 1e-10
    full = friedman_test(matrix, alpha=None, n_resamples=1_000)
    assert full.n_resamples == 1_000 and full.p_value == 1 / 1_001
    with pytest.raises(ValueError, match="alpha"):
        friedman_test(matrix, alpha=1.5)


def test_the_resamples_are_scipys_own():
    from evalsite.stats._bca import resample_statistic

    values = np.random.default_rng(2).normal(size=700)

    def statistic(chosen, axis=-1):
        return values[chosen].mean(axis=axis)

    ours = resample_statistic(statistic, 700, 1001, 97, np.random.default_rng(5))
    reference = scipy_stats.bootstrap(
        (np.arange(700),), statistic, n_resamples=1001, batch=97, method="percentile", rng=np.random.default_rng(5)
    ).bootstrap_distribution
    assert np.array_equal(ours, reference)
