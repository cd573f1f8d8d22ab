"""Paired tests against independent references: brute force, scipy, integer convolution."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from evalsite.stats import EXACT_LIMIT, holm, mcnemar_exact, paired, sign_flip_test

IRRATIONAL_UNIT = math.pi / 1000  # integer × this is off every grid the test recognises


def brute_force_p(diffs, alternative="two-sided", rel_tol=1e-9):
    """Enumerate every sign pattern over all items, zeros included."""
    diffs = np.asarray(diffs, dtype=float)
    patterns = np.arange(2**diffs.size)[:, None] >> np.arange(diffs.size) & 1
    signs = 2.0 * patterns - 1.0
    totals = signs @ diffs
    observed = diffs.sum()
    tol = rel_tol * max(np.abs(diffs).sum(), 1e-300)
    if alternative == "greater":
        hits = totals >= observed - tol
    elif alternative == "less":
        hits = totals <= observed + tol
    else:
        hits = np.abs(totals) >= abs(observed) - tol
    return hits.mean()


def convolution_p(integers, alternative="two-sided"):
    """Exact p for integer differences: counts of each total by convolving the items one by one."""
    integers = [int(v) for v in integers]
    offset = sum(abs(v) for v in integers)
    counts = np.zeros(2 * offset + 1, dtype=object)  # Python ints: exact beyond 2**63
    counts[offset] = 1
    for value in integers:
        v = abs(value)
        counts = np.roll(counts, v) + np.roll(counts, -v)  # no wrap: the support fits the array
    totals = np.arange(-offset, offset + 1)
    observed = sum(integers)
    if alternative == "greater":
        hits = totals >= observed
    elif alternative == "less":
        hits = totals <= observed
    else:
        hits = np.abs(totals) >= abs(observed)
    return int(counts[hits].sum()) / 2 ** len(integers)


def scipy_paired_p(a, b, alternative):
    result = scipy_stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        alternative=alternative,
    )
    return result.pvalue


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sign_flip_matches_scipy_permutation_test_on_small_samples(alternative, seed):
    rng = np.random.default_rng(seed)
    n = 11
    a = rng.normal(size=n)
    b = a + rng.normal(0.4, 1.0, size=n)
    ours = sign_flip_test(a, b, alternative=alternative)
    assert ours.kind == "exact"
    assert ours.p_value == pytest.approx(scipy_paired_p(a, b, alternative), rel=1e-12)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_sign_flip_matches_brute_force_with_zeros_and_ties(alternative):
    diffs = np.array([0.5, 0.5, -0.25, 0.0, 0.75, 0.0, -0.5, 0.25, 1.0, 0.5, 0.0, -0.75, 0.5, 0.25])
    ours = sign_flip_test(diffs, np.zeros_like(diffs), alternative=alternative)
    assert ours.n == 14 and ours.n_nonzero == 11
    assert ours.p_value == pytest.approx(brute_force_p(diffs, alternative), rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_sign_flip_matches_brute_force_on_continuous_data_up_to_20_items(seed):
    rng = np.random.default_rng(seed)
    diffs = rng.normal(0.3, 1.0, size=17 + seed)
    diffs[rng.integers(0, diffs.size, size=3)] = 0.0
    ours = sign_flip_test(diffs, np.zeros_like(diffs))
    assert ours.method == "meet-in-the-middle enumeration"
    assert ours.p_value == pytest.approx(brute_force_p(diffs), rel=1e-12)


@pytest.mark.parametrize("n", [30, 36, 40, EXACT_LIMIT])
def test_enumeration_is_exact_at_large_n_with_many_tied_totals(n):
    integers = np.random.default_rng(n).integers(-6, 9, size=n)
    integers[integers == 0] = 1
    diffs = integers * IRRATIONAL_UNIT
    ours = sign_flip_test(diffs, np.zeros(n))
    assert ours.kind == "exact" and ours.method == "meet-in-the-middle enumeration"
    assert ours.p_value == pytest.approx(convolution_p(integers), rel=1e-12)


@pytest.mark.parametrize("alternative", ["greater", "less"])
def test_enumeration_one_sided_is_exact(alternative):
    integers = np.random.default_rng(7).integers(-3, 6, size=33)
    diffs = integers * IRRATIONAL_UNIT
    ours = sign_flip_test(diffs, np.zeros(33), alternative=alternative)
    assert ours.p_value == pytest.approx(convolution_p(integers, alternative), rel=1e-12)


@pytest.mark.parametrize("n", [30, 40])
def test_all_positive_distinct_differences_give_two_over_two_to_the_n(n):
    diffs = np.sqrt(np.arange(2, n + 2))  # distinct, irrational, all positive
    result = sign_flip_test(diffs, np.zeros(n))
    assert result.kind == "exact"
    assert result.p_value == 2 / 2**n
    assert sign_flip_test(diffs, np.zeros(n), alternative="greater").p_value == 1 / 2**n
    assert sign_flip_test(diffs, np.zeros(n), alternative="less").p_value == 1.0


def test_smallest_difference_negative_doubles_the_extreme_count():
    n = 35
    diffs = np.sqrt(np.arange(2, n + 2))
    diffs[0] = -diffs[0]  # only {} and {smallest} flip to a total at least as large
    assert sign_flip_test(diffs, np.zeros(n)).p_value == 4 / 2**n


def test_pass_fail_differences_use_the_grid_and_equal_the_exact_sign_test():
    rng = np.random.default_rng(3)
    a = rng.random(400) < 0.62
    b = rng.random(400) < 0.55
    result = sign_flip_test(a, b)
    wins, losses = int(np.sum(a & ~b)), int(np.sum(~a & b))
    assert result.kind == "exact" and result.method == "grid distribution"
    assert result.n_nonzero == wins + losses
    expected = scipy_stats.binomtest(wins, wins + losses, 0.5).pvalue
    assert result.p_value == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_grid_path_matches_convolution_on_repeat_means(alternative):
    rng = np.random.default_rng(11)
    a = rng.integers(0, 2, size=(120, 3)).astype(float)
    b = rng.integers(0, 2, size=(120, 3)).astype(float)
    result = sign_flip_test(a, b, alternative=alternative)
    integers = np.rint(a.sum(axis=1) - b.sum(axis=1)).astype(int)  # differences in thirds
    assert result.method == "grid distribution"
    assert result.p_value == pytest.approx(convolution_p(integers, alternative), rel=1e-9)


def test_monte_carlo_above_the_limit_is_within_a_few_standard_errors_of_exact():
    n = EXACT_LIMIT + 16
    integers = np.random.default_rng(5).integers(-4, 7, size=n)
    integers[integers == 0] = 2
    diffs = integers * IRRATIONAL_UNIT
    result = sign_flip_test(diffs, np.zeros(n), n_resamples=20_000, seed=3)
    exact = convolution_p(integers)
    assert result.kind == "monte-carlo" and result.n_resamples == 20_000
    assert result.std_error > 0
    assert abs(result.p_value - exact) < 4 * result.std_error + 1 / 20_001


def test_monte_carlo_is_reproducible_from_its_seed_and_bounded_below():
    diffs = np.sqrt(np.arange(2, 60))
    first = sign_flip_test(diffs, np.zeros(diffs.size), seed=9, n_resamples=2_000)
    again = sign_flip_test(diffs, np.zeros(diffs.size), seed=9, n_resamples=2_000)
    assert first == again
    assert first.p_value == 1 / 2_001  # no random pattern reaches the all-positive total



@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize(("values", "n"), [((-1, 1), 7), ((-2, -1, 1, 2), 64), ((-2, -1, 1, 2), 1_001),
                                           ((-4, -3, -1, 1, 2, 3), 523), ((1,), 100), ((-3, 1), 77)])
@pytest.mark.parametrize("unit", [1.0, 0.5, 0.25, 2.0**-20, 8.0])
def test_monte_carlo_counts_kept_bits_on_a_power_of_two_grid_with_the_tables_own_p_value(alternative, values, n, unit):
    """The popcount sums (a grid of a power-of-two unit: halves, quarters) give bit for bit the
    table sums' totals, so the same p-value from the same seed, ties at the observed total included."""
    rng = np.random.default_rng(n)
    integers = rng.choice(values, size=n)
    if n == 64:
        integers[:32], integers[32:] = 2, -2  # observed total 0: every pattern ties or exceeds it
    nonzero = integers * unit
    assert paired._kept_sums_by_popcount(nonzero, integers) is not None
    by_popcount = paired._monte_carlo_p_value(nonzero, alternative, 3_000, np.random.default_rng(7), integers)
    by_tables = paired._monte_carlo_p_value(nonzero, alternative, 3_000, np.random.default_rng(7), None)
    assert by_popcount == by_tables



def reference_monte_carlo(nonzero, alternative, n_resamples, seed, cells):
    """The Monte Carlo as first written: rng.integers' bytes, byte tables, in chunks of ``cells``."""
    rng = np.random.default_rng(seed)
    observed, tolerance = float(nonzero.sum()), paired.RELATIVE_TOLERANCE * float(np.abs(nonzero).sum())
    tables = paired._byte_sum_tables(nonzero)
    groups = np.arange(tables.shape[0])
    count, rows_per_chunk = 0, max(1, cells // tables.shape[0])
    for start in range(0, n_resamples, rows_per_chunk):
        kept_bits = rng.integers(0, 256, size=(min(rows_per_chunk, n_resamples - start), groups.size), dtype=np.uint8)
        totals = 2.0 * tables[groups, kept_bits].sum(axis=1) - observed
        if alternative == "greater":
            count += int(np.count_nonzero(totals >= observed - tolerance))
        elif alternative == "less":
            count += int(np.count_nonzero(totals <= observed + tolerance))
        else:
            count += int(np.count_nonzero(np.abs(totals) >= abs(observed) - tolerance))
    return (count + 1) / (n_resamples + 1)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n", [9, 57, 130])
def test_monte_carlo_p_value_is_the_one_rng_integers_bytes_give(monkeypatch, alternative, n):
    """Bytes taken from the raw draws are rng.integers' bytes: chunks of odd word counts (a half
    draw carried to the next chunk) and both ways of adding give the p-value of the first code."""
    monkeypatch.setattr(paired, "_MONTE_CARLO_CELLS", 7 * 13)
    rng = np.random.default_rng(n)
    for nonzero in (rng.choice([-2.0, -1.0, 1.0, 2.0], size=n) * 0.5, rng.normal(size=n), rng.choice([-1.0, 1.0], size=n)):
        grid = paired._grid_integers(nonzero)
        for seed in (0, 11):
            expected = reference_monte_carlo(nonzero, alternative, 500, seed, 7 * 13)
            assert paired._monte_carlo_p_value(nonzero, alternative, 500, np.random.default_rng(seed), grid) == expected
            assert paired._monte_carlo_p_value(nonzero, alternative, 500, np.random.default_rng(seed), None) == expected

def test_monte_carlo_adds_tables_where_counting_bits_would_not_be_exact():
    integers = np.array([1, -2, 3, 1, -1] * 20)
    assert paired._kept_sums_by_popcount(integers / 3, integers) is None  # thirds: no power-of-two unit
    assert paired._kept_sums_by_popcount(integers * IRRATIONAL_UNIT, integers) is None
    many = np.arange(1, 11)  # more distinct differences than are counted apart
    assert paired._kept_sums_by_popcount(many * 0.5, many) is None

def test_exact_limit_switches_to_monte_carlo():
    diffs = np.sqrt(np.arange(2, 14))
    assert sign_flip_test(diffs, 0 * diffs, exact_limit=12).kind == "exact"
    assert sign_flip_test(diffs, 0 * diffs, exact_limit=11).kind == "monte-carlo"


def test_all_zero_differences_give_p_one():
    result = sign_flip_test([0.5, 0.25, 1.0], [0.5, 0.25, 1.0])
    assert result.p_value == 1.0 and result.kind == "exact" and result.n_nonzero == 0


def test_rounding_noise_between_equal_scores_is_not_a_difference():
    a = np.full(12, 0.3)
    b = np.full(12, 0.1 + 0.2)  # 0.30000000000000004
    result = sign_flip_test(a, b)
    assert result.p_value == 1.0 and result.n_nonzero == 0 and result.mean_diff == 0.0
    repeats = np.array([[0.1, 0.2, 0.3]] * 12)
    reordered = repeats[:, ::-1]  # same repeats summed in another order
    assert sign_flip_test(repeats, reordered).n_nonzero == 0


def test_huge_integer_differences_skip_the_grid_without_overflow():
    diffs = np.array([3e20, -1e20, 2e20, 5e20])
    assert sign_flip_test(diffs, np.zeros(4)).p_value == pytest.approx(brute_force_p(diffs))


def test_two_dimensional_inputs_average_finite_repeats_per_item():
    a = np.array([[1.0, 0.0, np.nan], [1.0, 1.0, 1.0], [0.0, np.nan, np.nan], [1.0, 0.0, 1.0]])
    b = np.array([0.0, 0.5, 0.0, 1.0])
    two_d = sign_flip_test(a, b)
    one_d = sign_flip_test(np.nanmean(a, axis=1), b)
    assert two_d.p_value == one_d.p_value
    assert two_d.mean_diff == pytest.approx(np.mean(np.nanmean(a, axis=1) - b))


def test_swapping_arms_mirrors_the_alternative():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=25), rng.normal(size=25)
    assert sign_flip_test(a, b).p_value == sign_flip_test(b, a).p_value
    assert sign_flip_test(a, b, alternative="greater").p_value == sign_flip_test(
        b, a, alternative="less"
    ).p_value


@pytest.mark.parametrize(
    "a, b, message",
    [
        ([1.0, 2.0], [1.0], "same items"),
        ([1.0, np.nan], [1.0, 2.0], "finite"),
        ([[np.nan, np.nan], [1.0, 0.0]], [1.0, 0.0], "no finite repeat"),
        ([], [], "no items"),
    ],
)
def test_sign_flip_refuses_unpaired_or_missing_values(a, b, message):
    with pytest.raises(ValueError, match=message):
        sign_flip_test(a, b)


def test_sign_flip_refuses_an_unknown_alternative_or_an_unaffordable_exact_limit():
    with pytest.raises(ValueError, match="alternative"):
        sign_flip_test([1.0], [0.0], alternative="bigger")
    with pytest.raises(ValueError, match="exact_limit"):
        sign_flip_test([1.0], [0.0], exact_limit=60)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-4, 4), min_size=1, max_size=12), st.sampled_from(["two-sided", "greater", "less"]))
def test_grid_and_enumeration_agree_with_brute_force(integers, alternative):
    reference = convolution_p(integers, alternative)
    on_grid = sign_flip_test(np.array(integers) * 0.25, np.zeros(len(integers)), alternative=alternative)
    off_grid = sign_flip_test(
        np.array(integers) * IRRATIONAL_UNIT, np.zeros(len(integers)), alternative=alternative
    )
    assert on_grid.p_value == pytest.approx(reference, rel=1e-12)
    assert off_grid.p_value == pytest.approx(reference, rel=1e-12)


def test_mcnemar_hand_computed_case():
    a = np.array([1] * 20 + [1] * 1 + [0] * 9 + [0] * 5, dtype=bool)
    b = np.array([1] * 20 + [0] * 1 + [1] * 9 + [0] * 5, dtype=bool)
    result = mcnemar_exact(a, b)
    assert (result.b, result.c, result.n_discordant, result.n) == (1, 9, 10, 35)
    assert result.p_value == pytest.approx(2 * 11 / 1024)  # 2 × P(X <= 1), X ~ Bin(10, 1/2)


def test_mcnemar_without_discordant_pairs_is_one():
    assert mcnemar_exact([1, 0, 1], [1, 0, 1]).p_value == 1.0


def test_mcnemar_two_dimensional_passes_an_item_only_when_every_repeat_passed():
    a = [[1, 1, 1], [0, 0, 1], [1, np.nan, 1], [1, 0, np.nan]]  # pass, fail, pass (missing repeat ignored), fail
    b = [0, 1, 0, 0]
    result = mcnemar_exact(a, b)
    assert (result.b, result.c) == (2, 1)


def test_mcnemar_refuses_scores_that_are_not_pass_fail():
    with pytest.raises(ValueError, match="0/1"):
        mcnemar_exact([0.5, 1.0], [1.0, 0.0])


def test_holm_hand_computed_case():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([]) == []


def holm_by_definition(p_values):
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted, running = [0.0] * m, 0.0
    for position, index in enumerate(order):
        running = max(running, (m - position) * p_values[index])
        adjusted[index] = min(1.0, running)
    return adjusted


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
def test_holm_is_monotone_at_least_raw_and_at_most_one(p_values):
    adjusted = holm(p_values)
    assert adjusted == pytest.approx(holm_by_definition(p_values))
    for raw, adj in zip(p_values, adjusted):
        assert raw <= adj <= 1.0
    for i, j in itertools.permutations(range(len(p_values)), 2):
        if p_values[i] <= p_values[j]:
            assert adjusted[i] <= adjusted[j]


def test_holm_refuses_values_outside_zero_one():
    with pytest.raises(ValueError):
        holm([0.2, 1.5])


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_few_sizes_beyond_the_grid_budget_are_exact_binomial_sums(alternative, monkeypatch):
    """Beyond the item-by-item budget, differences of a few sizes are summed as binomials: the
    same exact p as integer convolution (Python ints), never a Monte Carlo estimate."""
    import evalsite.stats.paired as paired

    rng = np.random.default_rng(17)
    for sizes in ([1, 2], [1, 2, 3], [2, 5, 7], [4]):
        integers = rng.choice(sizes, size=300) * rng.choice([-1, 1], size=300, p=[0.42, 0.58])
        if len(sizes) > 1:  # the item-by-item grid just over budget: the binomial sums must answer
            monkeypatch.setattr(paired, "GRID_BUDGET", integers.size * int(np.abs(integers).sum()) - 1)
        result = sign_flip_test(integers / 2, np.zeros(300), alternative=alternative)
        monkeypatch.undo()
        assert result.kind == "exact", sizes
        assert result.method == ("grid distribution" if len(sizes) == 1 else "grid distribution as binomials by size")
        assert result.p_value == pytest.approx(convolution_p(integers, alternative), rel=1e-10, abs=0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 2, 3, 7, 20]), min_size=1, max_size=14))
def test_grid_distribution_by_sizes_equals_every_subset_enumerated(magnitudes):
    """Built size by size (a residue convolution when a size repeats often, shifted adds when
    not), the distribution is the one listing all 2^m subsets gives."""
    values = np.array(magnitudes)
    patterns = np.arange(2**values.size)[:, None] >> np.arange(values.size) & 1
    expected = np.bincount(patterns @ values, minlength=values.sum() + 1) / 2**values.size
    distribution = paired._subset_sum_distribution(values)
    assert distribution.shape == expected.shape
    np.testing.assert_allclose(distribution, expected, rtol=1e-13, atol=0)


@pytest.mark.parametrize("count", [0, 1, 2, 7, 64, 333, 3_349])
def test_half_binomial_keeps_every_tail_probability_to_the_last_digits(count):
    """Against exact fractions C(n, j) / 2^n and scipy: the doubling keeps ~1e-15 relative error
    even where the probability is 1e-300."""
    pmf = paired._half_binomial(count)
    js = np.arange(count + 1)
    exact = np.array([math.comb(count, j) / 2**count for j in js.tolist()])  # Python ints: correctly rounded
    shown = exact > 1e-290  # below, doubles lose digits to subnormals
    np.testing.assert_allclose(pmf[shown], exact[shown], rtol=2e-14, atol=0)
    np.testing.assert_allclose(pmf, scipy_stats.binom.pmf(js, count, 0.5), rtol=1e-11, atol=1e-300)


def test_thousands_of_items_of_two_sizes_have_the_exact_p_value():
    """The realistic leaderboard pair: ~5,000 non-zero differences of half and whole points, p from
    far in the tail to near 1, against the exact sum of C(c1, i) C(c2, j) / 2^m in Python ints."""
    rng = np.random.default_rng(30)
    for lean in (0.5, 0.51, 0.55, 0.6):
        sizes = rng.choice([1, 2], size=5_000, p=[1 / 3, 2 / 3])
        integers = sizes * rng.choice([-1, 1], size=sizes.size, p=[1 - lean, lean])
        result = sign_flip_test(integers / 2, np.zeros(integers.size))
        assert result.method == "grid distribution"
        assert result.p_value == pytest.approx(_two_sizes_exact_p(integers), rel=1e-13, abs=0)


def test_differences_that_are_rounding_noise_on_the_grid_leave_the_p_value_unchanged():
    """Cluster totals of items whose differences cancel can be 1e-17 instead of 0: on the grid they
    are 0 units and flip to nothing, so the p-value is the one without them (integer convolution)."""
    rng = np.random.default_rng(40)
    integers = rng.choice([-4, -1, 1, 2, 3, 5], size=60)
    noise = np.array([5.551115123125783e-17, -2.7755575615628914e-17, 1.1102230246251565e-16])
    with_noise = np.concatenate([integers / 3, noise])
    result = sign_flip_test(with_noise, np.zeros(with_noise.size))
    assert result.method == "grid distribution" and result.n_nonzero == 63
    assert result.p_value == pytest.approx(convolution_p(integers), rel=1e-12)


def test_rounding_noise_beside_binomials_by_size_is_left_out_not_an_error():
    """Beyond the grid budget, a few noise differences (0 grid units) beside 100,000 half points:
    the p-value of the half points alone (before, slicing by a size of 0 raised ValueError)."""
    rng = np.random.default_rng(3)
    halves = rng.choice([-1.0, -0.5, 0.5, 1.0], size=100_000, p=[0.2, 0.3, 0.25, 0.25])
    noisy = np.concatenate([halves, [5.5e-17, -2.7e-17]])
    result = sign_flip_test(noisy, np.zeros(noisy.size))
    assert result.method == "grid distribution as binomials by size"
    assert result.p_value == sign_flip_test(halves, np.zeros(halves.size)).p_value


def test_rounding_noise_as_the_most_frequent_size_is_left_out():
    """Beyond the grid budget, more noise differences (0 grid units) than differences of any one
    size: the p-value of the real differences alone (before, the closed-form tail divided by 0)."""
    rng = np.random.default_rng(4)
    halves = rng.choice([-1.0, -0.5, 0.5, 1.0], size=60_000, p=[0.2, 0.3, 0.25, 0.25])
    noise = rng.choice([5.5e-17, -2.7e-17], size=40_000)
    result = sign_flip_test(np.concatenate([halves, noise]), np.zeros(100_000))
    assert result.method == "grid distribution as binomials by size"
    assert result.p_value == sign_flip_test(halves, np.zeros(halves.size)).p_value


def _two_sizes_exact_p(integers):
    ones, twos = int(np.sum(np.abs(integers) == 1)), int(np.sum(np.abs(integers) == 2))
    total = ones + 2 * twos
    start = -(-(total + abs(int(integers.sum()))) // 2)  # S >= start, S the sum given a positive sign
    ones_tail = list(itertools.accumulate(math.comb(ones, i) for i in range(ones, -1, -1)))[::-1] + [0]
    count = sum(math.comb(twos, j) * ones_tail[min(ones + 1, max(0, start - 2 * j))] for j in range(twos + 1))
    return float(min(Fraction(1), Fraction(2 * count, 2 ** (ones + twos))))


def test_half_points_over_a_hundred_thousand_items_are_exact():
    """Scores of 0, 0.5 and 1 on 100,000 items (the realistic leaderboard): about 10^10 grid steps
    item by item, so before the binomial sums this was a 100,000-pattern Monte Carlo estimate."""
    rng = np.random.default_rng(2)
    a = rng.choice([0.0, 0.5, 1.0], size=100_000, p=[0.3, 0.3, 0.4])
    b = rng.choice([0.0, 0.5, 1.0], size=100_000, p=[0.305, 0.3, 0.395])
    result = sign_flip_test(a, b)
    assert result.kind == "exact" and result.method == "grid distribution as binomials by size"
    # the normal approximation of the same statistic (T moves in steps of 1: continuity-corrected)
    diffs = a - b
    z = (abs(diffs.sum()) - 0.5) / math.sqrt(np.sum(diffs**2))
    assert 1e-4 < result.p_value < 0.5
    assert result.p_value == pytest.approx(2 * scipy_stats.norm.sf(z), rel=2e-3)
