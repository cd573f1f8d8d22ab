"""Rank stability tied to significance (issue 14, defect 3): on null data the items-needed figure
appears about as often as the paired test rejects, not for half of the datasets."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
from example_support import forget_project_modules
from scipy import stats as scipy_stats
from sitekit import case, write_run

import evalsite.stats._counts as _counts
import evalsite.stats.stability as stability
from evalsite.analysis import background
from evalsite.analysis.leaderboard import start_stability
from evalsite.analysis.verdict import verdict_of
from evalsite.stats import rank_stability
from evalsite.stats.stability import stability_draws


def null_dataset(rng: np.random.Generator) -> np.ndarray:
    """Two arms with the same true pass rate on 200 items."""
    return (rng.random((200, 2)) < 0.6).astype(float)


def test_null_datasets_rarely_get_an_items_needed_figure():
    rng = np.random.default_rng(2024)
    figures = separated = 0
    for _ in range(30):
        values = null_dataset(rng)
        verdict = verdict_of(values, ["a", "b"])
        stability = start_stability(values, verdict.metric)(verdict)
        separated += verdict.pairs[0].separated
        has_figure = stability.min_size_order is not None or stability.min_size_pairs is not None
        figures += has_figure
        assert has_figure <= verdict.pairs[0].separated  # a figure only for a separated pair
    assert figures <= 5


def test_a_real_difference_gets_a_figure_and_the_full_order_is_claimed_only_when_every_pair_is_separated():
    rng = np.random.default_rng(1)
    values = (rng.random((200, 3)) < [0.9, 0.5, 0.48]).astype(float)
    verdict = verdict_of(values, ["good", "mid", "low"])
    stability = start_stability(values, verdict.metric)(verdict)
    assert {(p.ahead, p.behind) for p in verdict.pairs if p.separated} == {(0, 1), (0, 2)}
    assert stability.min_size_pairs is not None and stability.min_size_order is None
    assert stability.min_size_top == stability.min_size_pairs


def test_rank_stability_json_says_null_when_the_order_is_not_supported(cli, tmp_path, monkeypatch):
    values = null_dataset(np.random.default_rng(7))
    for index, arm in enumerate("ab"):
        cases = [case(f"q{i:03d}", score=values[i, index], passed=bool(values[i, index])) for i in range(200)]
        write_run(tmp_path / "runs", f"2026010{index + 1}T000000Z-{arm}-000{index}", cases, arm=arm)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    forget_project_modules()
    report = cli.json("rank-stability")
    assert report["verdict"]["pairs"][0]["separated"] is False
    assert report["stability"]["min_size_order"] is None and report["stability"]["p_order"] == []
    text = cli("rank-stability").stdout
    assert "the paired tests separate no pair of arms, so no order is reported as stable" in text
    assert "needs ~" not in text
    forget_project_modules()


def test_rank_intervals_come_from_full_size_bootstrap_samples():
    values = (np.random.default_rng(0).random((100, 2)) < [0.8, 0.3]).astype(float)
    verdict = verdict_of(values, ["a", "b"])
    stability = start_stability(values, verdict.metric)(verdict)
    assert stability.sizes[-1] == 100
    assert stability.rank_intervals == ((1.0, 1.0), (2.0, 2.0))


def test_stability_drawn_in_a_thread_beside_the_verdict_is_the_one_drawn_in_line(monkeypatch):
    """A large matrix's resamples are drawn in a thread while the paired tests run: same figures."""
    values = np.random.default_rng(5).integers(0, 3, size=(400, 4)) / 2 + np.array([0.0, 0.05, 0.1, 0.3])
    verdict = verdict_of(values, ["a", "b", "c", "d"], seed=3)
    monkeypatch.setattr(background, "THREAD_CELLS", values.size + 1)
    in_line = start_stability(values, verdict.metric, seed=3)(verdict)
    threads = []

    def noted(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return stability_draws(*args, **kwargs)

    monkeypatch.setattr(background, "THREAD_CELLS", values.size)
    monkeypatch.setattr(sys.modules["evalsite.analysis.leaderboard"], "stability_draws", noted)
    threaded = start_stability(values, verdict.metric, seed=3)(verdict)
    assert threads and threads[0].startswith("evalsite-stability")
    assert threaded == in_line
    separated = [(p.ahead, p.behind) for p in verdict.pairs if p.separated]
    assert separated and in_line == rank_stability(values, pairs=separated, seed=3, level=0.95)


def test_nested_means_and_rank_intervals_are_the_plain_formulas_of_the_same_draws():
    """The draws-first sums add the same draws in the same order as the plain formulas (cumulative
    sums of the gathered rows; a full-size resample's mean): equal bit for bit on any floats."""
    values = np.random.default_rng(8).normal(size=(900, 5)) * [1.0, 3.0, 1e-3, 7.0, 1.0]
    values[:, 4] = values[:, 0]  # two identical arms tie in every resample
    draws = stability_draws(values, seed=6, n_resamples=70, level=0.9)
    rng = np.random.default_rng(6)
    sizes = np.array(draws.sizes)
    drawn = rng.integers(0, 900, size=(70, sizes[-1]))  # one chunk: what the function drew first
    expected = np.cumsum(values[drawn], axis=1)[:, sizes - 1, :] / sizes[None, :, None]
    assert np.array_equal(draws.means, expected)
    full = values[rng.integers(0, 900, size=(70, 900))].mean(axis=1)
    ranks = np.argsort(np.argsort(-full, axis=1, kind="stable"), axis=1) + 1.0
    ranks[:, [0, 4]] = ranks[:, [0, 4]].mean(axis=1, keepdims=True)  # the tie's average rank
    low, high = np.quantile(ranks, [0.05, 0.95], axis=0, method="inverted_cdf")
    assert draws.rank_intervals == tuple(zip(low.tolist(), high.tolist()))


def test_cluster_resamples_are_the_plain_formulas_of_the_same_draws():
    """Whole clusters drawn: each size's mean is the drawn clusters' summed values over their summed
    item counts, the cumulative sums of before, bit for bit."""
    rng = np.random.default_rng(12)
    values, groups = rng.normal(size=(600, 3)), rng.integers(0, 90, 600).tolist()
    draws = stability_draws(values, seed=4, n_resamples=40, level=0.9, groups=groups)
    codes = np.unique(groups, return_inverse=True)[1]
    order = {code: place for place, code in enumerate(dict.fromkeys(codes.tolist()))}  # first appearance
    renumbered = np.array([order[code] for code in codes.tolist()])
    totals = np.zeros((90, 3))
    np.add.at(totals, renumbered, values)
    sizes, drawn = np.bincount(renumbered).astype(float), np.random.default_rng(4).integers(0, 90, size=(40, 90))
    subset = np.array(draws.sizes) - 1
    expected = np.cumsum(totals[drawn], axis=1)[:, subset, :] / np.cumsum(sizes[drawn], axis=1)[:, subset][..., None]
    assert draws.unit == "cluster" and np.array_equal(draws.means, expected)


class _Memo(dict):
    """A caller's memo of arms' resample means (``stats.stability.DrawsMemo``)."""

    def put(self, key, value):
        self[key] = value


@pytest.fixture()
def small_chunks(monkeypatch):
    """Keep every matrix's arms (however few draws) and draw 3 resamples a chunk from 600 items × 5
    arms, so 49 resamples end on a chunk of one resample."""
    monkeypatch.setattr(stability, "KEPT_FROM_DRAWS", 0)
    monkeypatch.setattr(stability, "_RESAMPLE_CELLS", 3 * 600 * 5)


@pytest.mark.parametrize("changed", [[], [2], [4], [0, 3], [0, 1, 2, 3, 4]])
def test_kept_arms_resample_means_are_the_means_drawn_afresh(small_chunks, changed):
    """An arm's resample means depend on its column and the draws alone: the arms a memo keeps
    and the ones drawn again (one alone included, which numpy would add pairwise) give every mean
    and rank interval of the whole matrix drawn afresh, bit for bit, on floats of any scale."""
    rng = np.random.default_rng(21)
    values = rng.normal(size=(600, 5)) * 10.0 ** rng.uniform(-4, 4, size=(600, 5))
    memo = _Memo()
    first = stability_draws(values, seed=9, n_resamples=49, level=0.9, memo=memo)
    plain = stability_draws(values, seed=9, n_resamples=49, level=0.9)
    assert len(memo) == 5 and np.array_equal(first.means, plain.means) and first.rank_intervals == plain.rank_intervals
    new = values.copy()
    new[:, changed] = rng.normal(size=(600, len(changed)))
    afresh = stability_draws(new, seed=9, n_resamples=49, level=0.9)
    recalled = stability_draws(new, seed=9, n_resamples=49, level=0.9, memo=memo)
    assert len(memo) == 5 + len(changed)  # only the changed arms were drawn and kept
    assert np.array_equal(recalled.means, afresh.means) and recalled.rank_intervals == afresh.rank_intervals
    assert recalled.full_means.tolist() == afresh.full_means.tolist()


def test_kept_arms_and_a_lone_new_arm_are_the_plain_formulas_of_the_same_draws(monkeypatch):
    """With four arms kept and one drawn again, each nested mean is the cumulative sum of the drawn
    items' values (in draw order) over the size, as without a memo."""
    monkeypatch.setattr(stability, "KEPT_FROM_DRAWS", 0)
    values = np.random.default_rng(3).normal(size=(700, 5)) * [1.0, 1e5, 1e-5, 3.0, 1.0]
    memo = _Memo()
    stability_draws(values, seed=2, n_resamples=30, memo=memo)
    values[:, 1] = np.random.default_rng(4).normal(size=700)
    draws = stability_draws(values, seed=2, n_resamples=30, memo=memo)
    sizes = np.array(draws.sizes)
    drawn = np.random.default_rng(2).integers(0, 700, size=(30, sizes[-1]))  # one chunk
    expected = np.cumsum(values[drawn], axis=1)[:, sizes - 1, :] / sizes[None, :, None]
    assert np.array_equal(draws.means, expected)


def test_the_memo_is_read_only_where_an_arms_means_are_its_own_and_draws_are_many(monkeypatch):
    """Below :data:`KEPT_FROM_DRAWS` index draws, for clusters, and for matrices resampled as counts
    of their distinct rows where a sum may round (thirds) or the nested samples are multinomial counts
    (few distinct rows), no arm is kept (their means depend on the other arms or are cheap)."""
    values = np.random.default_rng(5).normal(size=(300, 3))
    memo = _Memo()
    stability_draws(values, n_resamples=40, memo=memo)
    monkeypatch.setattr(stability, "KEPT_FROM_DRAWS", 0)
    stability_draws(values, n_resamples=40, memo=memo, groups=list(range(100)) * 3)
    monkeypatch.setattr(_counts, "COUNTS_FROM_DRAWS", 0)
    thirds = np.random.default_rng(5).integers(0, 7, size=(6_000, 3)) / 3
    assert _counts.tallies_draws(_counts.distinct_units(thirds, 40), np.arange(1, 11) * 600)
    stability_draws(thirds, n_resamples=40, memo=memo)
    few_rows = np.random.default_rng(5).integers(0, 2, size=(3_000, 3)).astype(float)
    assert not _counts.tallies_draws(_counts.distinct_units(few_rows, 40), np.arange(1, 11) * 300)
    stability_draws(few_rows, n_resamples=40, memo=memo)
    assert memo == {}


@pytest.mark.parametrize("changed", [[], [2], [4], [0, 3], [0, 1, 2], [0, 1, 2, 3], [0, 1, 2, 3, 4]])
def test_kept_counted_arms_are_the_means_tallied_afresh(monkeypatch, changed):
    """Index draws tallied per distinct item row, on scores in halves and quarters (every sum exact):
    an arm's nested means are its column's alone, so the arms a memo keeps and the ones gathered
    again alone (up to GATHERED_ARMS of them; more are tallied together) give every mean and rank
    interval of the whole matrix tallied afresh without a memo, bit for bit."""
    monkeypatch.setattr(stability, "KEPT_FROM_DRAWS", 0)
    monkeypatch.setattr(stability, "_RESAMPLE_CELLS", 3 * 600 * 5)  # 49 resamples end on a chunk of one
    monkeypatch.setattr(_counts, "COUNTS_FROM_DRAWS", 0)
    monkeypatch.setattr(_counts, "UNITS_PER_DISTINCT", 1)
    rng = np.random.default_rng(40)
    values = rng.integers(0, 5, size=(600, 5)) / 4 - 0.5
    memo = _Memo()
    first = stability_draws(values, seed=9, n_resamples=49, level=0.9, memo=memo)
    plain = stability_draws(values, seed=9, n_resamples=49, level=0.9)
    found = _counts.distinct_units(values, 49)
    assert found is not None and _counts.tallies_draws(found, np.asarray(plain.sizes))  # the tallied path
    assert len(memo) == 5 and first.means.tobytes() == plain.means.tobytes()
    assert first.rank_intervals == plain.rank_intervals
    new = values.copy()
    new[:, changed] = rng.integers(0, 3, size=(600, len(changed))) / 2
    afresh = stability_draws(new, seed=9, n_resamples=49, level=0.9)
    recalled = stability_draws(new, seed=9, n_resamples=49, level=0.9, memo=memo)
    assert len(memo) == 5 + len(changed)  # only the changed arms were drawn and kept
    assert recalled.means.tobytes() == afresh.means.tobytes() and recalled.rank_intervals == afresh.rank_intervals


@pytest.mark.parametrize(("values", "exact"), [
    (np.array([[0.0, 0.5], [1.0, 0.25]]), True),
    (np.array([[-3.0, 2.0 ** -10], [7.0, 1.0]]), True),
    (np.array([[0.0, 1 / 3], [1.0, 0.5]]), False),  # a third rounds
    (np.array([[0.0, 0.1], [1.0, 0.5]]), False),
    (np.array([[np.nan, 0.5], [1.0, 0.5]]), False),
    (np.array([[np.inf, 0.5], [1.0, 0.5]]), False),
    (np.array([[2.0 ** 30, 0.5], [1.0, 0.5]]), False),  # 10^6 draws of 2^30 pass 2^53 steps of 2^-10
])
def test_exact_sums_are_told_from_sums_that_may_round(values, exact):
    assert stability._exact_sums(values, 1_000_000) is exact


def test_counted_rank_intervals_are_the_index_bootstraps_rank_frequencies(monkeypatch):
    """Where the distinct item rows are drawn as counts and the largest size is every item, the rank
    intervals are read from that size's resamples: each arm's frequency of each rank (1 = best, ties
    averaged) over them is a brute-force index bootstrap's (items drawn with replacement, arm means
    ranked by scipy) within Monte Carlo error, and the intervals are within a rank of its quantiles."""
    monkeypatch.setattr(_counts, "COUNTS_FROM_DRAWS", 0)
    values = (np.random.default_rng(50).random((2_000, 4)) < np.array([0.60, 0.61, 0.62, 0.66])).astype(float)
    resamples = 4_000
    draws = stability_draws(values, seed=3, n_resamples=resamples, level=0.9)
    assert draws.sizes[-1] == 2_000 and _counts.distinct_units(values, resamples) is not None
    brute = np.random.default_rng(77)
    reference = scipy_stats.rankdata(-np.array([values[brute.integers(0, 2_000, 2_000)].mean(axis=0)
                                                for _ in range(resamples)]), axis=1)
    ours = scipy_stats.rankdata(-draws.means[:, -1, :], axis=1)
    for arm in range(4):
        for rank in np.unique(np.concatenate([ours[:, arm], reference[:, arm]])):
            share, expected = np.mean(ours[:, arm] == rank), np.mean(reference[:, arm] == rank)
            spread = np.sqrt(max(expected * (1 - expected), 1 / resamples) * 2 / resamples)
            assert abs(share - expected) <= 5 * spread, (arm, rank, share, expected)
        low, high = np.quantile(reference[:, arm], [0.05, 0.95], method="inverted_cdf")
        assert abs(draws.rank_intervals[arm][0] - low) <= 1 and abs(draws.rank_intervals[arm][1] - high) <= 1
    assert len({interval for interval in draws.rank_intervals}) > 1  # the arms' ranks do move


def test_new_arms_keep_the_other_arms_resample_means(small_chunks):
    """A matrix with more arms draws in other chunks (5 resamples a chunk for 3 arms, 3 for 5: cells
    per chunk count the arms) but the same indices: the kept arms' means are the ones the wider matrix
    draws afresh, bit for bit."""
    values = np.random.default_rng(30).normal(size=(600, 5))
    memo = _Memo()
    stability_draws(values[:, :3], seed=1, n_resamples=49, memo=memo)
    wider = stability_draws(values, seed=1, n_resamples=49, memo=memo)
    afresh = stability_draws(values, seed=1, n_resamples=49)
    assert len(memo) == 5  # the new arms alone were drawn and kept
    assert np.array_equal(wider.means, afresh.means) and wider.rank_intervals == afresh.rank_intervals
