"""Friedman's permutations drawn as counts (evalsite.stats._rank_counts) against independent
references: the exact null distribution of the rank sums by enumerating every arrangement of tiny
inputs, the index shuffle's distribution on a fixed-seed simulation, the type-I error rate under
the null, and scipy's Friedman statistic."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsite.stats import _rank_counts, friedman_test
from evalsite.stats.ranking import _shuffled_rank_sums, within_item_ranks


@pytest.fixture
def rank_counts_always(monkeypatch):
    """Draw counts at every size and with any number of multisets."""
    monkeypatch.setattr(_rank_counts, "COUNTS_FROM_CELLS", 0)
    monkeypatch.setattr(_rank_counts, "ITEMS_PER_STATE", 0)


def doubled_ranks(values: np.ndarray) -> np.ndarray:
    doubled = np.rint(2 * within_item_ranks(values)).astype(np.int64)
    return doubled[np.any(doubled != doubled[:, :1], axis=1)]


def exact_rank_sums(doubled: np.ndarray) -> dict[tuple[int, ...], float]:
    """The exact null distribution of the rank-sum vector: every item's k! arrangements equally likely,
    items independent (convolved item by item)."""
    law: dict[tuple[int, ...], float] = {(0,) * doubled.shape[1]: 1.0}
    for row in doubled.tolist():
        arrangements = Counter(itertools.permutations(row))
        total = sum(arrangements.values())
        following: Counter[tuple[int, ...]] = Counter()
        for sums, chance in law.items():
            for arrangement, ways in arrangements.items():
                following[tuple(s + r for s, r in zip(sums, arrangement))] += chance * ways / total
        law = dict(following)
    return law


def sampled(doubled: np.ndarray, rows: int, seed: int) -> np.ndarray:
    found = _rank_counts.rank_sum_sampler(doubled)
    assert found is not None
    draw, per_chunk = found
    rng = np.random.default_rng(seed)
    return np.concatenate([draw(rng, min(per_chunk, rows - start)) for start in range(0, rows, per_chunk)])


@pytest.mark.parametrize(
    ("values", "seed"),
    [
        (np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1], [1, 0, 1], [1, 1, 0], [0, 0, 1]]), 0),
        (np.array([[2, 1, 1, 0], [1, 1, 0, 0], [2, 1, 1, 0], [0, 0, 0, 1], [3, 2, 1, 0]]), 1),
        (np.array([[0.5, 1, 0, 0.5], [1, 1, 0.5, 0], [0.5, 1, 0, 0.5], [0, 0, 0, 1]]), 2),
    ],
)
def test_rank_sums_follow_the_exact_null_distribution(rank_counts_always, values, seed):
    doubled = doubled_ranks(values)
    law = exact_rank_sums(doubled)
    draws = sampled(doubled, 20_000, seed)
    assert np.all(draws.sum(axis=1) == doubled.sum())  # every item gives all of its ranks
    seen = Counter(map(tuple, draws.tolist()))
    assert set(seen) <= set(law)  # only reachable rank sums
    common = sorted(vector for vector, chance in law.items() if chance * draws.shape[0] >= 5)
    observed = [seen[vector] for vector in common] + [draws.shape[0] - sum(seen[vector] for vector in common)]
    expected = [law[vector] * draws.shape[0] for vector in common]
    expected.append(draws.shape[0] - sum(expected))
    assert scipy_stats.chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.parametrize(("n_items", "n_arms", "levels", "seed"), [(400, 6, 2, 0), (300, 10, 3, 4), (250, 5, 1000, 9)])
def test_statistic_distribution_equals_the_shuffle(rank_counts_always, n_items, n_arms, levels, seed):
    """The same null distribution of the sum of squared rank sums as the index shuffle (two-sample KS,
    conservative for a discrete statistic), and its mean is the exact one."""
    rng = np.random.default_rng(seed)
    difficulty = rng.random((n_items, 1))
    doubled = doubled_ranks(np.floor(levels * rng.random((n_items, n_arms)) ** (0.5 + difficulty)))
    by_counts = (sampled(doubled, 6_000, seed + 1) ** 2).sum(axis=1)
    shuffle, _ = _shuffled_rank_sums(doubled)
    by_shuffle = (shuffle(np.random.default_rng(seed + 2), 6_000) ** 2).sum(axis=1)
    assert scipy_stats.ks_2samp(by_counts, by_shuffle).pvalue > 1e-3
    row_mean = doubled.mean(axis=1)
    exact_mean = n_arms * (doubled.var(axis=1).sum() + row_mean.sum() ** 2)
    assert abs(by_counts.mean() - exact_mean) < 4 * by_counts.std() / np.sqrt(by_counts.size)


def test_type_one_error_under_the_null(rank_counts_always):
    """Arms alike (each item's pass chance shared by its arms): the test rejects at 5 % about 5 % of
    the time (400 seeded datasets; 99.9 % binomial bounds)."""
    rng = np.random.default_rng(30)
    rejected = 0
    for seed in range(400):
        values = (rng.random((80, 5)) < rng.random((80, 1))).astype(float)
        rejected += friedman_test(values, seed=seed, n_resamples=199, alpha=None).p_value <= 0.05
    low, high = scipy_stats.binom.ppf([0.0005, 0.9995], 400, 0.05)
    assert low <= rejected <= high


@pytest.mark.parametrize("seed", [0, 5])
def test_p_value_agrees_with_the_shuffle_and_statistic_with_scipy(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    values = (rng.random((3_000, 6)) < 0.6 + 0.004 * np.arange(6)).astype(float)  # p near 0.1-0.5
    shuffled = friedman_test(values, seed=seed, n_resamples=4_000, alpha=None)
    monkeypatch.setattr(_rank_counts, "COUNTS_FROM_CELLS", 0)
    counted = friedman_test(values, seed=seed, n_resamples=4_000, alpha=None)
    assert counted.statistic == shuffled.statistic
    assert counted.statistic == pytest.approx(scipy_stats.friedmanchisquare(*values.T).statistic, rel=1e-12)
    spread = np.sqrt(2 * shuffled.p_value * (1 - shuffled.p_value) / 4_000)
    assert abs(counted.p_value - shuffled.p_value) < 4 * spread + 1e-3


def test_counts_only_for_large_inputs_with_few_multisets():
    rng = np.random.default_rng(1)
    pass_fail = doubled_ranks((rng.random((40_000, 10)) < 0.7).astype(float))
    assert _rank_counts.rank_sum_sampler(pass_fail) is not None
    assert _rank_counts.rank_sum_sampler(pass_fail[:1_000]) is None  # small: the shuffle
    assert pass_fail[:8_000].size >= 1 << 16 > pass_fail[:6_000].size  # a 10,000-item leaderboard counts
    assert _rank_counts.rank_sum_sampler(pass_fail[:8_000]) is not None
    assert _rank_counts.rank_sum_sampler(pass_fail[:6_000]) is None
    continuous = doubled_ranks(rng.random((20_000, 30)))  # 2^30 sub-multisets of one class
    assert _rank_counts.rank_sum_sampler(continuous) is None


def test_large_input_takes_the_counts(monkeypatch):
    """A large pass/fail input never shuffles, and its p-value is a valid permutation p-value."""
    rng = np.random.default_rng(2)
    values = (rng.random((30_000, 10)) < 0.7).astype(float)

    def no_shuffle(doubled):
        raise AssertionError("the shuffle ran")

    from evalsite.stats import ranking

    monkeypatch.setattr(ranking, "_shuffled_rank_sums", no_shuffle)
    result = friedman_test(values, seed=3, n_resamples=999, alpha=None)
    assert result.n_resamples == 999 and 1 / 1000 <= result.p_value <= 1
    assert result.statistic == pytest.approx(scipy_stats.friedmanchisquare(*values.T).statistic, rel=1e-12)
