"""Large-n paths of the statistics against independent references: the bootstrap drawn as
multinomial counts of distinct values (scipy's index bootstrap within Monte Carlo error), and the
sign-flip test of equal-size differences in closed form (scipy's exact binomial test)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsite.stats import _counts, bootstrap_ci, paired_bootstrap_ci, rank_stability, sign_flip_test
from evalsite.stats import intervals as intervals_module
from evalsite.stats.paired import GRID_BUDGET
from evalsite.stats.stability import stability_draws


def scipy_bca(values: np.ndarray, seed: int, n_resamples: int) -> tuple[float, float]:
    result = scipy_stats.bootstrap((values,), np.mean, n_resamples=n_resamples, method="BCa",
                                   rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def assert_close_bounds(ours, reference, values: np.ndarray) -> None:
    """Two Monte Carlo BCa intervals of the same bootstrap: each bound within 5 % of the
    interval's width (about 7 standard errors at 9,999 resamples) plus one step of the data's grid."""
    width = reference[1] - reference[0]
    distinct = np.unique(values)
    step = float(np.min(np.diff(distinct))) / values.size if distinct.size > 1 else 0.0
    assert abs(ours[0] - reference[0]) <= 0.05 * width + step
    assert abs(ours[1] - reference[1]) <= 0.05 * width + step


@pytest.fixture
def counts_always(monkeypatch):
    """Draw counts at every size, and fail if the index bootstrap is used instead."""
    monkeypatch.setattr(_counts, "COUNTS_FROM_DRAWS", 0)

    def no_index_draws(*args, **kwargs):
        raise AssertionError("the index bootstrap ran")

    monkeypatch.setattr(intervals_module, "resample_statistic", no_index_draws)


@pytest.mark.parametrize("kind", ["pass_fail", "repeat_means", "paired"])
@pytest.mark.parametrize("seed", [0, 3])
def test_counts_bootstrap_agrees_with_scipy(counts_always, kind, seed):
    rng = np.random.default_rng(seed)
    values = {
        "pass_fail": lambda: (rng.random(400) < 0.7).astype(float),
        "repeat_means": lambda: (rng.random((500, 4)) < rng.random((500, 1))).mean(axis=1),
        "paired": lambda: (rng.random(600) < 0.6).astype(float) - (rng.random(600) < 0.5),
    }[kind]()
    ours = bootstrap_ci(values, seed=seed)
    assert ours.method == "BCa"
    assert_close_bounds(tuple(ours), scipy_bca(values, seed + 100, 9999), values)


def test_counts_paired_interval_is_the_interval_of_the_differences(counts_always):
    rng = np.random.default_rng(8)
    a, b = rng.random(800) < 0.6, rng.random(800) < 0.55
    assert paired_bootstrap_ci(a, b) == bootstrap_ci(a.astype(float) - b)


def test_counts_cluster_bootstrap_agrees_with_scipy_on_the_ratio(counts_always):
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(300), 3)
    values = (rng.random(900) < 0.6).astype(float)
    ours = bootstrap_ci(values, groups=groups)
    sums, sizes = values.reshape(300, 3).sum(axis=1), np.full(300, 3.0)
    reference = scipy_stats.bootstrap(
        (np.arange(300),), lambda i, axis=-1: sums[i].sum(axis=axis) / sizes[i].sum(axis=axis),
        n_resamples=9999, method="BCa", rng=np.random.default_rng(1),
    ).confidence_interval
    assert ours.method == "cluster BCa"
    assert_close_bounds(tuple(ours), (reference.low, reference.high), values)


@pytest.mark.slow
def test_large_inputs_draw_counts_by_default_and_agree_with_the_index_bootstrap(monkeypatch):
    values = (np.random.default_rng(2).random(40_000) < 0.4).astype(float)
    assert values.size * 2000 > _counts.COUNTS_FROM_DRAWS  # this size takes the counts path
    by_counts = bootstrap_ci(values, n_resamples=2000, seed=4)
    monkeypatch.setattr(_counts, "COUNTS_FROM_DRAWS", 1 << 62)
    by_index = bootstrap_ci(values, n_resamples=2000, seed=4)
    assert tuple(by_counts) != tuple(by_index)  # two different streams of random numbers ...
    assert_close_bounds(tuple(by_counts), tuple(by_index), values)  # ... of the same bootstrap


def test_many_distinct_values_keep_the_index_bootstrap(monkeypatch):
    monkeypatch.setattr(_counts, "COUNTS_FROM_DRAWS", 0)
    values = np.random.default_rng(6).normal(size=300)
    assert tuple(bootstrap_ci(values, n_resamples=999)) == pytest.approx(scipy_bca(values, 0, 999), rel=1e-12)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_equal_size_differences_above_the_grid_budget_are_an_exact_binomial_test(alternative):
    rng = np.random.default_rng(9)
    a, b = rng.random(60_000) < 0.51, rng.random(60_000) < 0.5
    wins, losses = int(np.sum(a & ~b)), int(np.sum(~a & b))
    assert (wins + losses) ** 2 > GRID_BUDGET  # the item-by-item grid would be over budget
    result = sign_flip_test(a, b, alternative=alternative)
    expected = scipy_stats.binomtest(wins, wins + losses, 0.5, alternative=alternative).pvalue
    assert result.kind == "exact" and result.method == "grid distribution"
    assert result.p_value == pytest.approx(expected, rel=1e-9)


def test_equal_size_differences_in_another_unit_are_the_same_test():
    rng = np.random.default_rng(10)
    d = np.where(rng.random(5_000) < 0.55, 2 / 3, -2 / 3) * (rng.random(5_000) < 0.8)
    wins, losses = int(np.sum(d > 0)), int(np.sum(d < 0))
    result = sign_flip_test(d, np.zeros_like(d))
    assert result.p_value == pytest.approx(scipy_stats.binomtest(wins, wins + losses, 0.5).pvalue, rel=1e-9)


def test_rank_stability_by_counts_agrees_with_the_index_bootstrap(monkeypatch):
    rng = np.random.default_rng(12)
    matrix = (rng.random((3000, 4)) < np.array([0.50, 0.53, 0.56, 0.62])).astype(float)
    pairs = [(3, 0), (3, 1), (2, 0)]
    monkeypatch.setattr(_counts, "COUNTS_FROM_DRAWS", 1 << 62)
    by_index = rank_stability(matrix, pairs=pairs, n_resamples=2000, seed=1)
    monkeypatch.setattr(_counts, "COUNTS_FROM_DRAWS", 0)
    by_counts = rank_stability(matrix, pairs=pairs, n_resamples=2000, seed=1)
    assert by_counts.p_order != by_index.p_order  # another stream ...
    for ours, reference in zip(by_counts.p_order, by_index.p_order):  # ... of the same bootstrap
        assert abs(ours - reference) <= 5 * np.sqrt(reference * (1 - reference) / 2000) + 2e-3
    for (low, high), (ref_low, ref_high) in zip(by_counts.rank_intervals, by_index.rank_intervals):
        assert abs(low - ref_low) <= 1 and abs(high - ref_high) <= 1
    assert by_counts.sizes == by_index.sizes and by_counts.full_order == by_index.full_order


@pytest.mark.parametrize(("n_arms", "levels", "step"), [(10, 2, 1), (6, 3, 2), (8, 5, 4)])
def test_tallied_stability_samples_are_the_index_bootstraps(monkeypatch, n_arms, levels, step):
    """Many distinct item rows: rank stability's nested samples are the index bootstrap's own draws,
    tallied per distinct row; on scores in halves and quarters every sum is exact, so the arm means
    at every size equal the index bootstrap's bit for bit (the rank intervals are read from the full size)."""
    rng = np.random.default_rng(n_arms)
    matrix = rng.integers(0, levels, size=(1_500, n_arms)) / step
    monkeypatch.setattr(_counts, "COUNTS_FROM_DRAWS", 1 << 62)
    by_index = stability_draws(matrix, n_resamples=300, seed=2)
    monkeypatch.setattr(_counts, "COUNTS_FROM_DRAWS", 0)
    monkeypatch.setattr(_counts, "UNITS_PER_DISTINCT", 1)
    found = _counts.distinct_units(matrix, 300)
    assert found is not None and _counts.tallies_draws(found, by_index.sizes)
    tallied = stability_draws(matrix, n_resamples=300, seed=2)
    assert tallied.means.tobytes() == by_index.means.tobytes()
    assert tallied.checking([(0, 1)]).p_order == by_index.checking([(0, 1)]).p_order


def test_few_distinct_rows_draw_multinomial_counts():
    rng = np.random.default_rng(5)
    matrix = (rng.random((100_000, 3)) < 0.6).astype(float)  # 8 distinct rows
    found = _counts.distinct_units(matrix, 1000)
    assert found is not None and not _counts.tallies_draws(found, np.arange(1, 11) * 10_000)


@pytest.mark.parametrize("kind", ["pass_fail", "levels", "negative", "negative_zero", "nan", "continuous", "sums_sizes"])
def test_distinct_rows_are_numpys_unique_rows_bit_for_bit(kind):
    """The distinct rows the count draws start from, coded as integers, are np.unique's (axis=0): the
    same rows in the same order with the same counts and the same row for every unit, so the draws are the same."""
    rng = np.random.default_rng(4)
    units = {
        "pass_fail": lambda: (rng.random((5_000, 10)) < 0.6).astype(float),
        "levels": lambda: rng.integers(0, 3, size=(5_000, 10)) / 2,
        "negative": lambda: -rng.integers(0, 4, size=(5_000, 6)) / 3,
        "negative_zero": lambda: -(rng.random((5_000, 4)) < 0.5).astype(float),
        "nan": lambda: np.where(rng.random((500, 3)) < 0.1, np.nan, rng.integers(0, 2, size=(500, 3))),
        "continuous": lambda: rng.random((500, 10)),  # too many values for one integer key
        "sums_sizes": lambda: np.stack([rng.integers(0, 9, 3_000), rng.integers(1, 4, 3_000)], axis=1).astype(float),
    }[kind]()
    distinct, counts, inverse = _counts._distinct_rows(units)
    expected_rows, expected_inverse, expected_counts = np.unique(units, axis=0, return_inverse=True, return_counts=True)
    assert distinct.tobytes() == expected_rows.tobytes()
    assert np.array_equal(counts, expected_counts) and np.array_equal(inverse, expected_inverse.ravel())


@pytest.mark.parametrize("rows", [1, 3, 17])
def test_tallied_means_are_each_resamples_first_draws_counted_plainly(rows):
    """Each resample's mean at each size, from its first k draws counted one by one (continuous
    values: the tallies must be exact, not just the sums)."""
    rng = np.random.default_rng(rows)
    units = rng.integers(0, 40, size=(600, 4)) / 7.0
    found = _counts._distinct_rows(units)
    drawn = rng.integers(0, units.shape[0], size=(rows, 500))
    sizes = np.array([1, 50, 51, 300, 500])
    means = _counts.tallied_means(found, drawn, sizes)
    for index, size in enumerate(sizes.tolist()):
        tallies = np.zeros((rows, found.rows.shape[0]))  # the same product as the code's (a vector's may round otherwise)
        for resample in range(rows):
            for unit in drawn[resample, :size].tolist():
                tallies[resample, found.inverse[unit]] += 1
        assert means[:, index].tobytes() == ((tallies @ found.rows) / size).tobytes()
