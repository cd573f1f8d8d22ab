"""Bootstrap and Wilson intervals against scipy, hand values and naive reference loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsite.stats import Interval, bootstrap_ci, paired_bootstrap_ci, wilson_interval

pytestmark = pytest.mark.filterwarnings("error")  # no warning may leak out of an interval


def scipy_interval(data, statistic, **options):
    options = {"n_resamples": 9999, "method": "BCa", "confidence_level": 0.95, **options}
    seed = options.pop("seed", 0)
    result = scipy_stats.bootstrap(data, statistic, rng=np.random.default_rng(seed), **options)
    return tuple(float(bound) for bound in result.confidence_interval)


@pytest.mark.parametrize("method", ["BCa", "percentile", "basic"])
@pytest.mark.parametrize("seed", [0, 17])
def test_mean_interval_equals_scipy_bootstrap(method, seed):
    values = np.random.default_rng(seed).exponential(size=60)
    ours = bootstrap_ci(values, seed=seed, method=method, confidence=0.9, n_resamples=4000)
    reference = scipy_interval(
        (values,), np.mean, seed=seed, method=method, confidence_level=0.9, n_resamples=4000
    )
    assert tuple(ours) == pytest.approx(reference, rel=1e-12)
    assert ours.method == method and ours.confidence == 0.9


def test_callable_statistic_equals_scipy_bootstrap():
    values = np.random.default_rng(2).normal(size=45)
    ours = bootstrap_ci(values, statistic=np.median, n_resamples=2000, seed=3)
    assert tuple(ours) == pytest.approx(scipy_interval((values,), np.median, n_resamples=2000, seed=3))


def micro_f1(rows):
    tp, fp, fn = np.asarray(rows, dtype=float).sum(axis=0)
    return 2 * tp / (2 * tp + fp + fn)


def test_corpus_level_metric_resamples_items_like_scipy_paired_bootstrap():
    rng = np.random.default_rng(4)
    counts = rng.integers(0, 5, size=(70, 3))  # per item: true positives, false positives, false negatives
    ours = bootstrap_ci(counts, statistic=micro_f1, n_resamples=1500, seed=1)
    reference = scipy_interval(
        tuple(counts.T),
        lambda tp, fp, fn: 2 * tp.sum() / (2 * tp.sum() + fp.sum() + fn.sum()),
        paired=True, vectorized=False, n_resamples=1500, seed=1,
    )
    assert tuple(ours) == pytest.approx(reference, rel=1e-12)


def test_cluster_bootstrap_of_copied_items_equals_item_bootstrap_of_clusters():
    per_cluster = np.random.default_rng(5).normal(size=25)
    copies = np.repeat(per_cluster, 4)
    labels = [f"doc-{i}" for i in np.repeat(np.arange(25), 4)]
    clustered = bootstrap_ci(copies, groups=labels, n_resamples=3000)
    assert tuple(clustered) == pytest.approx(tuple(bootstrap_ci(per_cluster, n_resamples=3000)), rel=1e-12)
    assert clustered.method == "cluster BCa"
    naive = bootstrap_ci(copies, n_resamples=3000)
    assert naive.high - naive.low < clustered.high - clustered.low  # copies are not independent


def test_cluster_bootstrap_with_one_item_per_cluster_is_the_item_bootstrap():
    values = np.random.default_rng(6).normal(size=30)
    assert tuple(bootstrap_ci(values, groups=range(30), n_resamples=999)) == pytest.approx(
        tuple(bootstrap_ci(values, n_resamples=999)), rel=1e-12
    )
    by_cluster = bootstrap_ci(values, statistic=np.median, groups=range(30), n_resamples=999)
    assert tuple(by_cluster) == pytest.approx(
        tuple(bootstrap_ci(values, statistic=np.median, n_resamples=999)), rel=1e-12
    )


def test_items_by_repeats_are_averaged_per_item_then_items_are_resampled_like_scipy():
    rng = np.random.default_rng(7)
    matrix = (rng.random((30, 4)) < rng.random((30, 1))).astype(float)
    matrix[3, 1:] = np.nan
    ours = bootstrap_ci(matrix, n_resamples=4000, seed=1)
    reference = scipy_interval((np.nanmean(matrix, axis=1),), np.mean, n_resamples=4000, seed=1)
    assert ours.method == "BCa"
    assert tuple(ours) == pytest.approx(reference, rel=1e-12)


@pytest.mark.slow
def test_the_item_bootstrap_of_repeat_means_covers_the_true_mean_at_its_level():
    """Seeded simulation: item effects plus large repeat noise, 3 repeats; the 90 % interval of
    the mean of item means covers the true mean about 90 % of the time (resampling repeats as
    well, the old two-level bootstrap, covered far more: too wide)."""
    rng = np.random.default_rng(21)
    trials, covered = 300, 0
    for _ in range(trials):
        matrix = rng.normal(0, 1, size=(40, 1)) + rng.normal(0, 2, size=(40, 3))
        low, high = bootstrap_ci(matrix, confidence=0.9, n_resamples=999, method="percentile", seed=int(rng.integers(1 << 30)))
        covered += low <= 0.0 <= high
    assert 0.85 <= covered / trials <= 0.95


def test_groups_combine_with_repeats_averaged_per_item():
    rng = np.random.default_rng(2)
    matrix = rng.random((20, 3))
    groups = np.arange(20) // 4
    assert tuple(bootstrap_ci(matrix, groups=groups, n_resamples=999)) == tuple(
        bootstrap_ci(matrix.mean(axis=1), groups=groups, n_resamples=999))


def test_one_repeat_per_item_is_the_item_bootstrap():
    values = np.random.default_rng(9).normal(size=50)
    ours = bootstrap_ci(values[:, None], n_resamples=2000, seed=4)
    reference = scipy_interval((values,), np.mean, n_resamples=2000, seed=4)
    assert tuple(ours) == pytest.approx(reference, rel=1e-12)


def test_paired_mean_interval_is_the_interval_of_differences():
    rng = np.random.default_rng(10)
    a, b = rng.normal(size=35), rng.normal(size=35)
    assert paired_bootstrap_ci(a, b, n_resamples=2000) == bootstrap_ci(a - b, n_resamples=2000)


def test_paired_callable_resamples_both_arms_jointly_like_scipy():
    rng = np.random.default_rng(11)
    a, b = rng.random(40) < 0.7, rng.random(40) < 0.5
    ours = paired_bootstrap_ci(a, b, statistic=lambda x, y: x.mean() - y.mean(), n_resamples=1500)
    reference = scipy_interval(
        (a.astype(float), b.astype(float)), lambda x, y: x.mean() - y.mean(),
        paired=True, vectorized=False, n_resamples=1500,
    )
    assert tuple(ours) == pytest.approx(reference, rel=1e-12)


def test_paired_items_by_repeats_average_each_arm_per_item_and_accept_one_dimensional_arm():
    rng = np.random.default_rng(12)
    a = (rng.random((25, 3)) < 0.7).astype(float)
    b = (rng.random(25) < 0.5).astype(float)
    ours = paired_bootstrap_ci(a, b, n_resamples=4000)
    assert ours == bootstrap_ci(a.mean(axis=1) - b, n_resamples=4000)


def test_paired_clusters_resample_clusters_of_differences():
    rng = np.random.default_rng(13)
    a, b = rng.normal(size=40), rng.normal(size=40)
    groups = np.arange(40) // 5
    assert paired_bootstrap_ci(a, b, groups=groups, n_resamples=999) == bootstrap_ci(
        a - b, groups=groups, n_resamples=999
    )


def test_degenerate_inputs_give_point_or_undefined_intervals_without_warnings():
    assert tuple(bootstrap_ci([0.1, 0.1, 0.1])) == (0.1, 0.1)
    assert bootstrap_ci([0.1, 0.1, 0.1]).method == "degenerate: all values equal"
    assert all(math.isnan(bound) for bound in bootstrap_ci([3.0]))
    assert all(math.isnan(bound) for bound in bootstrap_ci([1.0, 2.0], groups=["x", "x"]))
    assert all(math.isnan(bound) for bound in bootstrap_ci(np.ones((1, 3))))
    constant = bootstrap_ci([1.0, 2.0, 3.0], statistic=lambda v: 7.0, n_resamples=200)
    assert tuple(constant) == (7.0, 7.0) and constant.method.startswith("degenerate")


def test_bca_undefined_falls_back_to_percentile_and_says_so():
    # Every leave-one-out maximum of [0, 1, 1] is 1, so BCa's acceleration is 0/0.
    result = bootstrap_ci([0.0, 1.0, 1.0], statistic=np.max, n_resamples=500)
    assert result.method == "percentile (BCa undefined for this data)"
    assert 0.0 <= result.low <= result.high == 1.0


def test_interval_reads_like_a_pair():
    interval = Interval(0.25, 0.75, 0.95, "BCa")
    low, high = interval
    assert (low, high) == (0.25, 0.75) == tuple(interval)
    assert interval[0] == 0.25 and interval[-1] == 0.75 and len(interval) == 2
    assert np.asarray(interval).tolist() == [0.25, 0.75]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: bootstrap_ci([1.0, 2.0], confidence=1.0), "confidence"),
        (lambda: bootstrap_ci([1.0, 2.0], method="studentized"), "method"),
        (lambda: bootstrap_ci([1.0, 2.0], statistic="median"), "statistic"),
        (lambda: bootstrap_ci([1.0, 2.0], n_resamples=0), "n_resamples"),
        (lambda: bootstrap_ci([1.0, 2.0], groups=[1]), "one label per item"),
        (lambda: bootstrap_ci(np.arange(6.0).reshape(3, 2), groups=[1, 2]), "one label per item"),
        (lambda: paired_bootstrap_ci([1.0, 2.0], [1.0]), "same items"),
        (lambda: paired_bootstrap_ci(np.ones((3, 2)), np.ones((2, 2))), "same items"),
    ],
)
def test_interval_options_are_validated(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_wilson_interval_hand_values():
    assert tuple(wilson_interval(8, 10)) == pytest.approx((0.4902, 0.9433), abs=5e-5)
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=5e-5)
    low, high = wilson_interval(10, 10)
    assert high == 1.0 and low == pytest.approx(1 - 0.2775, abs=5e-5)
    assert wilson_interval(8, 10).method == "wilson score"


def test_wilson_interval_at_other_confidence_matches_the_closed_form():
    z = scipy_stats.norm.ppf(0.995)
    n, k = 40, 13
    p = k / n
    center = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    assert tuple(wilson_interval(k, n, confidence=0.99)) == pytest.approx((center - half, center + half))


def test_wilson_interval_edge_cases():
    assert all(math.isnan(bound) for bound in wilson_interval(0, 0))
    with pytest.raises(ValueError):
        wilson_interval(5, 4)
