"""Friedman, Nemenyi, tied groups, rank stability and holdout checks against independent references."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from evalsite.stats import (
    friedman_test,
    holdout_check,
    nemenyi,
    rank_stability,
    tied_groups,
    within_item_ranks,
)

# Demšar (2006), table 6: AUC of C4.5, C4.5+m, C4.5+cf, C4.5+m+cf on 14 data sets.
DEMSAR_AUC = np.array(
    [
        [0.763, 0.768, 0.771, 0.798], [0.599, 0.591, 0.590, 0.569],
        [0.954, 0.971, 0.968, 0.967], [0.628, 0.661, 0.654, 0.657],
        [0.882, 0.888, 0.886, 0.898], [0.936, 0.931, 0.916, 0.931],
        [0.661, 0.668, 0.609, 0.685], [0.583, 0.583, 0.563, 0.625],
        [0.775, 0.838, 0.866, 0.875], [1.000, 1.000, 1.000, 1.000],
        [0.940, 0.962, 0.965, 0.962], [0.619, 0.666, 0.614, 0.669],
        [0.972, 0.981, 0.975, 0.975], [0.957, 0.978, 0.946, 0.970],
    ]
)


def demsar_unrounded():
    """The paper ranks unrounded AUCs: on 'voting' C4.5+cf beats C4.5+m+cf (0.975 vs 0.975 printed)."""
    table = DEMSAR_AUC.copy()
    table[12, 2] += 1e-4
    return table


def test_friedman_statistic_equals_scipy_on_demsar_table():
    for table in (DEMSAR_AUC, demsar_unrounded()):
        ours = friedman_test(table)
        reference = scipy_stats.friedmanchisquare(*table.T)
        assert ours.statistic == pytest.approx(reference.statistic, rel=1e-12)
        assert ours.p_value_chi2 == pytest.approx(reference.pvalue, rel=1e-12)
        assert ours.kind == "permutation" and ours.n_items == 14 and ours.n_arms == 4


def test_mean_ranks_reproduce_demsar_with_rank_one_best():
    assert friedman_test(demsar_unrounded()).mean_ranks == pytest.approx(
        [3.143, 2.000, 2.893, 1.964], abs=5e-4
    )
    # As printed (rounded), 'voting' ties C4.5+cf and C4.5+m+cf.
    assert friedman_test(DEMSAR_AUC).mean_ranks == pytest.approx([44 / 14, 2.0, 41 / 14, 27 / 14])


def test_nemenyi_reproduces_demsar_critical_differences():
    at_05 = nemenyi(demsar_unrounded(), alpha=0.05)
    at_10 = nemenyi(demsar_unrounded(), alpha=0.10)
    assert at_05.q_alpha == pytest.approx(2.569, abs=5e-4)
    assert at_10.q_alpha == pytest.approx(2.291, abs=5e-4)
    assert round(at_05.critical_difference, 2) == 1.25
    assert round(at_10.critical_difference, 2) == 1.12
    # Demšar: at 0.10 only C4.5 vs C4.5+m and C4.5 vs C4.5+m+cf differ; at 0.05 nothing does.
    significant = {
        (i, j) for i, j in itertools.combinations(range(4), 2) if at_10.p_values[i, j] < 0.10
    }
    assert significant == {(0, 1), (0, 3)}
    assert np.all(at_05.p_values >= 0.05)


@pytest.mark.parametrize("k, q", [(2, 1.960), (3, 2.343), (5, 2.728), (7, 2.949), (10, 3.164)])
def test_nemenyi_q_alpha_matches_demsar_table_5a(k, q):
    matrix = np.random.default_rng(k).normal(size=(8, k))
    # The paper's table is truncated, not rounded, in places (k=3: 2.3437 printed as 2.343).
    assert nemenyi(matrix).q_alpha == pytest.approx(q, abs=1e-3)


def test_nemenyi_p_values_agree_with_the_critical_difference():
    matrix = np.random.default_rng(1).normal(size=(40, 6)) + np.linspace(0, 1.2, 6)
    result = nemenyi(matrix, alpha=0.05)
    ranks = np.array(result.mean_ranks)
    gaps = np.abs(ranks[:, None] - ranks[None, :])
    assert np.array_equal(result.p_values < 0.05, gaps > result.critical_difference)
    assert np.allclose(result.p_values, result.p_values.T)
    assert np.all(np.diag(result.p_values) == 1.0)
    assert not result.p_values.flags.writeable


def test_tied_groups_on_demsar_at_010():
    result = nemenyi(demsar_unrounded(), alpha=0.10)
    groups = tied_groups(result.mean_ranks, result.critical_difference)
    assert groups.order == (3, 1, 2, 0)
    assert groups.groups == ((3, 1, 2), (2, 0))
    assert groups.letters == ("b", "a", "ab", "a")
    assert groups.tied_with_best == (3, 1, 2)
    assert not groups.strict_order_supported


def test_tied_groups_strict_order_when_every_gap_exceeds_cd():
    groups = tied_groups([1.0, 3.0, 2.0], critical_difference=0.5)
    assert groups.order == (0, 2, 1)
    assert groups.letters == ("a", "c", "b")
    assert groups.strict_order_supported


def test_tied_groups_refuses_a_negative_or_missing_critical_difference():
    with pytest.raises(ValueError, match="critical_difference"):
        tied_groups([1.0, 2.0], -0.1)
    with pytest.raises(ValueError, match="critical_difference"):
        tied_groups([1.0, 2.0], float("nan"))


def test_tied_groups_label_beyond_26_groups():
    groups = tied_groups(np.arange(30, dtype=float), critical_difference=0.1)
    assert groups.letters[0] == "a" and groups.letters[25] == "z" and groups.letters[26] == "aa"
    overlapping = tied_groups(np.arange(30, dtype=float) / 2, critical_difference=0.5)
    assert overlapping.letters[1] == "a,b"


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(1.0, 8.0, allow_nan=False), min_size=1, max_size=12),
    st.floats(0.0, 3.0, allow_nan=False),
)
def test_arms_share_a_letter_exactly_when_within_the_critical_difference(ranks, cd):
    groups = tied_groups(ranks, cd)
    for i, j in itertools.combinations(range(len(ranks)), 2):
        shares = any(i in group and j in group for group in groups.groups)
        assert shares == (abs(ranks[i] - ranks[j]) <= cd)
    assert all(groups.letters)  # every arm belongs to at least one group


def exact_friedman_permutation_p(matrix):
    """Enumerate every within-row permutation (k!^n patterns) of the rank rows."""
    ranks = scipy_stats.rankdata(-matrix, axis=1)
    observed = np.sum(ranks.sum(axis=0) ** 2)
    row_options = [list(itertools.permutations(row)) for row in ranks]
    hits = total = 0
    for rows in itertools.product(*row_options):
        total += 1
        hits += np.sum(np.sum(rows, axis=0) ** 2) >= observed - 1e-9
    return hits / total


def test_friedman_permutation_p_is_close_to_full_enumeration():
    matrix = np.array([[3.0, 1.0, 2.0], [2.0, 1.0, 1.0], [3.0, 2.0, 1.0], [2.0, 0.0, 1.0]])
    exact = exact_friedman_permutation_p(matrix)
    result = friedman_test(matrix, n_resamples=20_000, seed=2)
    assert abs(result.p_value - exact) < 4 * result.std_error + 1 / 20_001


def test_within_item_ranks_give_rank_one_to_the_best_and_average_ties():
    ranks = within_item_ranks(np.array([[0.2, 0.9, 0.5], [1.0, 1.0, 0.0]]))
    assert ranks.tolist() == [[3.0, 1.0, 2.0], [1.5, 1.5, 3.0]]


def test_items_where_all_arms_tie_do_not_change_the_permutation_p_value():
    matrix = (np.random.default_rng(6).random((40, 4)) < [0.4, 0.5, 0.6, 0.7]).astype(float)
    informative = matrix[np.ptp(matrix, axis=1) > 0]
    padded = np.vstack([informative, np.ones((25, 4)), np.zeros((10, 4))])
    assert friedman_test(padded).p_value == friedman_test(informative).p_value


def test_friedman_is_seeded_and_reproducible():
    matrix = np.random.default_rng(0).normal(size=(30, 4))
    assert friedman_test(matrix, seed=5) == friedman_test(matrix, seed=5)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.integers(3, 6), st.integers(0, 10_000))
def test_friedman_statistic_matches_scipy_with_ties(n_items, n_arms, seed):
    matrix = np.random.default_rng(seed).integers(0, 3, size=(n_items, n_arms)).astype(float)
    ours = friedman_test(matrix, n_resamples=10)
    if np.all(matrix == matrix[:, :1]):
        assert math.isnan(ours.statistic) and ours.p_value == 1.0
        return
    assert ours.statistic == pytest.approx(scipy_stats.friedmanchisquare(*matrix.T).statistic, rel=1e-9)


def test_friedman_with_every_item_tied_reports_no_evidence():
    result = friedman_test(np.ones((5, 3)))
    assert math.isnan(result.statistic)
    assert result.p_value == 1.0 and result.p_value_chi2 == 1.0
    assert result.mean_ranks == (2.0, 2.0, 2.0)


def test_friedman_accepts_repeats_as_a_third_axis():
    rng = np.random.default_rng(3)
    cube = rng.normal(size=(20, 3, 4))
    cube[0, 0, 1] = np.nan
    assert friedman_test(cube).statistic == friedman_test(np.nanmean(cube, axis=2)).statistic


def test_friedman_refuses_a_single_arm_or_missing_cells():
    with pytest.raises(ValueError, match="2 arms"):
        friedman_test(np.ones((4, 1)))
    with pytest.raises(ValueError, match="finite"):
        friedman_test([[1.0, np.nan], [0.0, 1.0]])


def test_rank_stability_of_separated_constant_arms_is_certain():
    matrix = np.tile([0.2, 0.9, 0.5], (50, 1))
    result = rank_stability(matrix, pairs=[(1, 2), (1, 0), (2, 0)], n_resamples=50)
    assert result.sizes == (5, 10, 15, 20, 25, 30, 35, 40, 45, 50)
    assert result.full_order == (1, 2, 0) and result.top_arms == (1,)
    assert set(result.p_order) == {1.0} and set(result.p_top) == {1.0}
    assert result.min_size_order == 5 and result.min_size_top == 5 and result.min_size_pairs == 5
    assert result.rank_intervals == ((3.0, 3.0), (1.0, 1.0), (2.0, 2.0))


def exact_bootstrap_shares(matrix, size, pairs, top):
    """Share of all n^k ordered bootstrap samples of k items keeping every pair / the top arm ahead."""
    kept_pairs = kept_top = total = 0
    others = [arm for arm in range(matrix.shape[1]) if arm != top]
    for sample in itertools.product(range(matrix.shape[0]), repeat=size):
        means = matrix[list(sample)].mean(axis=0)
        total += 1
        kept_pairs += all(means[a] - means[b] > 1e-9 for a, b in pairs)
        kept_top += all(means[top] - means[o] > 1e-9 for o in others)
    return kept_pairs / total, kept_top / total


def test_rank_stability_shares_match_enumeration_of_all_bootstrap_samples():
    matrix = np.array([[1, 0, 1], [1, 1, 0], [0, 0, 1], [1, 0, 0], [1, 1, 1], [1, 0, 1]], dtype=float)
    pairs = [(0, 1), (0, 2)]
    result = rank_stability(matrix, pairs=pairs, sizes=[3, 5], n_resamples=8_000, seed=4)
    for index, size in enumerate((3, 5)):
        pair_share, top_share = exact_bootstrap_shares(matrix, size, pairs, top=0)
        se = 0.5 / math.sqrt(8_000)
        assert abs(result.p_order[index] - pair_share) < 4 * se
        assert abs(result.p_top[index] - top_share) < 4 * se


def test_rank_stability_reports_nothing_for_pairs_the_tests_do_not_separate():
    matrix = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    result = rank_stability(matrix, sizes=[4], n_resamples=10)
    assert result.top_arms == (0, 1)
    assert result.p_order == () and result.p_top == ()
    assert result.min_size_order is None and result.min_size_pairs is None and result.min_size_top is None
    partial = rank_stability(matrix, pairs=[(0, 2)], sizes=[4], n_resamples=10)
    assert partial.p_top == () and partial.min_size_order is None


def test_rank_stability_reports_none_when_level_is_never_reached():
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(60, 4))  # no real differences
    result = rank_stability(matrix, pairs=[(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)], n_resamples=200, level=0.99)
    assert result.min_size_order is None
    assert all(0.0 <= share < 0.99 for share in result.p_order)
    for low, high in result.rank_intervals:
        assert 1.0 <= low <= high <= 4.0


def test_rank_stability_validates_sizes_and_level():
    matrix = np.random.default_rng(0).normal(size=(10, 3))
    with pytest.raises(ValueError, match="sizes"):
        rank_stability(matrix, sizes=[0, 5])
    with pytest.raises(ValueError, match="sizes"):
        rank_stability(matrix, sizes=[11])
    with pytest.raises(ValueError, match="level"):
        rank_stability(matrix, level=1.0)


def test_holdout_check_same_order_and_reversed_order():
    pilot = np.array([[0.9, 0.5, 0.1], [0.8, 0.6, 0.2]])
    same = holdout_check(pilot, pilot[::-1] + 0.01)
    assert same.order_holds and same.top_holds and same.kendall_tau == pytest.approx(1.0)
    reversed_ = holdout_check(pilot, pilot[:, ::-1])
    assert not reversed_.order_holds and not reversed_.top_holds
    assert reversed_.kendall_tau == pytest.approx(-1.0)
    assert reversed_.pilot_order == (0, 1, 2) and reversed_.holdout_order == (2, 1, 0)


def test_holdout_check_tau_equals_scipy_and_top_can_hold_alone():
    rng = np.random.default_rng(8)
    pilot = rng.normal(size=(30, 5)) + [2.0, 0.1, 0.2, 0.3, 0.4]
    holdout = rng.normal(size=(25, 5)) + [2.0, 0.4, 0.3, 0.2, 0.1]
    result = holdout_check(pilot, holdout)
    reference = scipy_stats.kendalltau(pilot.mean(axis=0), holdout.mean(axis=0))
    assert result.kendall_tau == pytest.approx(reference.statistic)
    assert result.kendall_p_value == pytest.approx(reference.pvalue)
    assert result.top_holds and not result.order_holds


def test_holdout_check_refuses_different_arms_and_handles_constant_means():
    with pytest.raises(ValueError, match="same arms"):
        holdout_check(np.ones((3, 2)), np.ones((3, 3)))
    flat = holdout_check(np.ones((3, 2)), np.ones((4, 2)))
    assert flat.order_holds and flat.top_holds and math.isnan(flat.kendall_tau)


def test_nemenyi_from_friedmans_mean_ranks_is_nemenyi_of_the_matrix():
    """The verdict ranks the items once: Nemenyi from Friedman's mean ranks (near-ties snapped the
    same way) is the Nemenyi of the matrix."""
    from evalsite.stats.ranking import nemenyi_of_ranks

    rng = np.random.default_rng(21)
    matrix = rng.integers(0, 3, size=(500, 6)) / 2.0
    matrix[:, 1] = matrix[:, 0] + 1e-15 * rng.random(500)  # rounding noise of equal scores: ties
    friedman = friedman_test(matrix, seed=2)
    of_ranks = nemenyi_of_ranks(np.array(friedman.mean_ranks), friedman.n_items, alpha=0.01)
    direct = nemenyi(matrix, alpha=0.01)
    assert of_ranks.mean_ranks == direct.mean_ranks
    assert np.array_equal(of_ranks.p_values, direct.p_values)
    assert of_ranks.critical_difference == direct.critical_difference
