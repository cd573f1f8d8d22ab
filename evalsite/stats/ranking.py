"""Many arms on the same items: is there an order at all, and which arms are tied.

Matrices are items × arms with higher = better (or items × arms × repeats, averaged over the
finite repeats of each cell). Ranks follow Demšar (2006): within each item the best arm gets
rank 1 and tied arms share the average of their ranks.
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evalsite.stats._inputs import arm_matrix
from evalsite.stats._rank_counts import RankSums, rank_sum_sampler
from evalsite.stats.distributions import (
    binom_cdf,
    binom_sf,
    chi2_sf,
    rankdata,
    studentized_range_ppf,
    studentized_range_sf,
)

_PERMUTATION_CELLS = 1 << 21  # int64 cells of shuffled ranks per chunk (16 MB)
_FIRST_LOOK = 100  # permutations before the first early-stopping check; doubles after each
_LOOK_ERROR = 1e-3  # chance, per check, that the p-value's interval misses it
RELATIVE_TOLERANCE = 1e-12  # values this close (relative to the row's largest) are ties


def within_item_ranks(matrix: np.ndarray) -> np.ndarray:
    """Rank of each arm within each item: 1 = best, ties share their average rank.

    Values within ``1e-12`` (relative) of each other tie, as in the sign-flip test: means of the
    same repeats summed in another order differ in the last bits and are not a win."""
    return rankdata(-snap_ties(matrix))


def snap_ties(matrix: ArrayLike) -> np.ndarray:
    """Each row with values closer than the float tolerance to their sorted neighbour set equal."""
    values = np.asarray(matrix, dtype=float)
    scale = RELATIVE_TOLERANCE * np.maximum(1.0, np.abs(values).max(axis=1, keepdims=True))
    order = np.argsort(values, axis=1, kind="stable")
    ascending = np.take_along_axis(values, order, axis=1)
    starts = np.concatenate([np.ones((values.shape[0], 1), dtype=bool), np.diff(ascending, axis=1) > scale], axis=1)
    first = np.maximum.accumulate(np.where(starts, np.arange(values.shape[1]), 0), axis=1)
    snapped = np.empty_like(values)
    np.put_along_axis(snapped, order, np.take_along_axis(ascending, first, axis=1), axis=1)
    return snapped


@dataclass(frozen=True)
class FriedmanResult:
    """Outcome of :func:`friedman_test`.

    ``statistic`` is Friedman's chi-square with the tie correction (as
    ``scipy.stats.friedmanchisquare``). ``p_value`` is a seeded permutation p-value (arms'
    values shuffled within each item) from the ``n_resamples`` permutations actually drawn
    (at most the budget; fewer when the test stopped early, see :func:`friedman_test`),
    ``std_error`` its Monte Carlo standard error, and ``p_value_chi2`` the asymptotic
    chi-square p-value on n_arms - 1 degrees of freedom.
    """

    statistic: float
    p_value: float
    p_value_chi2: float
    std_error: float
    mean_ranks: tuple[float, ...]
    n_items: int
    n_arms: int
    n_resamples: int
    seed: int
    kind: str = "permutation"
    method: str = "Friedman chi-square with tie correction; p by within-item permutation"


def friedman_test(
    matrix: ArrayLike, *, seed: int = 0, n_resamples: int = 5_000, alpha: float | None = 0.05
) -> FriedmanResult:
    """Friedman test that all arms perform alike, with a within-item permutation p-value.

    ``n_resamples`` is the permutation budget. With ``alpha`` set, the permutations are drawn
    in rounds (100, 200, 400, ... permutations) and stop as soon as a Clopper-Pearson interval
    for the permutation p-value, at level 1 - 0.001 per look, lies wholly above or below
    ``alpha``: the verdict "p <= alpha" is then the one the full budget would give, except with
    probability below 0.001 per look (at most ~0.006 for the default budget). The reported p is
    (hits + 1) / (drawn + 1) over the permutations drawn, a valid permutation p-value for that
    count. ``alpha=None`` always draws the whole budget (for a finely resolved p-value).
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if alpha is not None and not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    values = snap_ties(arm_matrix(matrix))
    n_items, n_arms = values.shape
    ranks = within_item_ranks(values)
    statistic = _friedman_chi_square(values, ranks)

    def result(p_value: float, p_value_chi2: float, drawn: int) -> FriedmanResult:
        return FriedmanResult(
            statistic=statistic, p_value=p_value, p_value_chi2=p_value_chi2,
            std_error=math.sqrt(p_value * (1 - p_value) / drawn),
            mean_ranks=tuple(ranks.mean(axis=0).tolist()),
            n_items=n_items, n_arms=n_arms, n_resamples=drawn, seed=seed,
        )

    if not math.isfinite(statistic):  # every item ties all arms: no evidence of any order
        return result(1.0, 1.0, n_resamples)
    hits, drawn = _permutation_hits(ranks, n_resamples, alpha, np.random.default_rng(seed))
    p_value_chi2 = chi2_sf(statistic, n_arms - 1)
    return result((hits + 1) / (drawn + 1), p_value_chi2, drawn)


def _friedman_chi_square(values: np.ndarray, ranks: np.ndarray) -> float:
    """Chi-square with tie correction; NaN when every item ties all arms (0/0)."""
    n_items, n_arms = values.shape
    rank_sums = ranks.sum(axis=0)
    scale = 12.0 / (n_items * n_arms * (n_arms + 1))
    uncorrected = scale * float(np.sum(rank_sums**2)) - 3.0 * n_items * (n_arms + 1)
    correction = 1.0 - float(_tied_cubes(values)) / (n_items * n_arms * (n_arms**2 - 1))
    if correction <= 0:
        return math.nan
    return float(uncorrected / correction)


def _tied_cubes(values: np.ndarray) -> int:
    """Sum over every item's groups of t tied arms of t^3 - t, from one sort of each row (an
    integer: the float sum of the same terms is exact, so the correction is the same either way)."""
    ordered = np.sort(values, axis=1)
    starts = np.ones(ordered.shape, dtype=bool)
    np.not_equal(ordered[:, 1:], ordered[:, :-1], out=starts[:, 1:])
    first = np.flatnonzero(starts)  # every row begins a group, so no group spans two rows
    sizes = np.diff(first, append=starts.size)
    return int(np.sum(sizes**3 - sizes))


def _permutation_hits(
    ranks: np.ndarray, budget: int, alpha: float | None, rng: np.random.Generator
) -> tuple[int, int]:
    """How many within-item shuffles reach the observed sum of squared rank sums, of how many.

    Shuffling an item's values shuffles its ranks, and the tie correction is the same for every
    shuffle, so the rank rows themselves are permuted. Ranks are doubled to integers (average
    ranks are multiples of 1/2), so the comparison is exact. Items whose arms all tie add the
    same amount to every rank sum under any shuffle, which shifts the statistic by a constant,
    so they are left out (often half of the items of pass/fail data). Large inputs with few
    kinds of rank row draw the shuffled rank sums as counts (:mod:`._rank_counts`).
    """
    doubled = np.rint(2 * ranks).astype(np.int64)
    doubled = doubled[np.any(doubled != doubled[:, :1], axis=1)]
    observed = int(np.sum(doubled.sum(axis=0, dtype=np.int64) ** 2))
    draw, per_chunk = rank_sum_sampler(doubled) or _shuffled_rank_sums(doubled)
    hits = drawn = 0
    look = _FIRST_LOOK
    while drawn < budget:
        rows = min(per_chunk, budget - drawn, max(1, look - drawn))
        rank_sums = draw(rng, rows)
        hits += int(np.count_nonzero(np.sum(rank_sums**2, axis=1) >= observed))
        drawn += rows
        if drawn >= look:
            if alpha is not None and _clear_of(hits, drawn, alpha):
                break
            look *= 2
    return hits, drawn


def _shuffled_rank_sums(doubled: np.ndarray) -> tuple[RankSums, int]:
    """The rank sums of ``rows`` within-item shuffles of the doubled ranks (rows × arms), and how many
    shuffles to draw at a time.

    The doubled ranks are shuffled as int64: numpy's shuffle swaps elements of a pointer's size
    (8 bytes) in a specialised loop, about 40 % faster than int32's, and it draws the same numbers in
    the same order whatever the element size, so the shuffles and every count are those of an int32
    shuffle (tests/test_stats_ranking_permutations.py keeps that version and compares).
    """

    def draw(rng: np.random.Generator, rows: int) -> np.ndarray:
        shuffled = rng.permuted(np.broadcast_to(doubled, (rows, *doubled.shape)), axis=2)
        rank_sums: np.ndarray = shuffled.sum(axis=1, dtype=np.int64)
        return rank_sums

    return draw, max(1, _PERMUTATION_CELLS // doubled.size)


def _clear_of(hits: int, drawn: int, alpha: float) -> bool:
    """Whether the Clopper-Pearson interval of hits / drawn lies wholly on one side of alpha."""
    tail = _LOOK_ERROR / 2
    # Its bounds are Beta quantiles, and a Beta(a, b) CDF at integer a, b is a binomial tail:
    # upper bound < alpha iff P(Bin(drawn, alpha) <= hits) < tail; lower bound > alpha iff
    # P(Bin(drawn, alpha) >= hits) < tail (hits = 0 and hits = drawn: bounds 0 and 1, never clear).
    return binom_cdf(hits, drawn, alpha) < tail or binom_sf(hits - 1, drawn, alpha) < tail


@dataclass(frozen=True)
class NemenyiResult:
    """Outcome of :func:`nemenyi`: all-pairs p-values (arms × arms, read-only) and Demšar's CD.

    ``q_alpha`` is the studentized range quantile at infinite degrees of freedom divided by
    sqrt(2) (Demšar 2006, table 5a); two arms differ at level ``alpha`` when their mean ranks
    differ by more than ``critical_difference``.
    """

    p_values: np.ndarray
    critical_difference: float
    q_alpha: float
    mean_ranks: tuple[float, ...]
    alpha: float
    n_items: int
    n_arms: int
    method: str = "Nemenyi (studentized range, infinite df)"


def nemenyi(matrix: ArrayLike, alpha: float = 0.05) -> NemenyiResult:
    """Nemenyi all-pairs post-hoc test on mean ranks (read it after :func:`friedman_test`).

    With k arms and N items, SE = sqrt(k (k + 1) / (6 N)); a pair's p-value is
    P(Q >= sqrt(2) |R_i - R_j| / SE) for Q the studentized range of k normals, and
    CD = q_alpha × SE, so p < alpha exactly when |R_i - R_j| > CD.
    """
    values = arm_matrix(matrix)
    return nemenyi_of_ranks(within_item_ranks(values).mean(axis=0), values.shape[0], alpha)


def nemenyi_of_ranks(mean_ranks: np.ndarray, n_items: int, alpha: float = 0.05) -> NemenyiResult:
    """:func:`nemenyi` from the arms' mean within-item ranks over ``n_items`` items (those of
    :func:`friedman_test`, so the items are ranked once for both)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    n_arms = mean_ranks.size
    standard_error = math.sqrt(n_arms * (n_arms + 1) / (6.0 * n_items))
    q_alpha = studentized_range_ppf(1 - alpha, n_arms) / math.sqrt(2)
    gaps = np.abs(mean_ranks[:, None] - mean_ranks[None, :])
    p_values = np.ones_like(gaps)
    upper = np.triu_indices(n_arms, k=1)
    p_values[upper] = [studentized_range_sf(q, n_arms) for q in (math.sqrt(2) * gaps[upper] / standard_error).tolist()]
    p_values = np.minimum(p_values, p_values.T)  # mirror the upper triangle
    p_values.setflags(write=False)
    return NemenyiResult(
        p_values=p_values, critical_difference=q_alpha * standard_error, q_alpha=q_alpha,
        mean_ranks=tuple(mean_ranks.tolist()), alpha=alpha, n_items=n_items, n_arms=n_arms,
    )


@dataclass(frozen=True)
class TiedGroups:
    """Compact letter display: arms no two of which the data separates, as letters.

    ``order`` lists arms best first. ``groups`` are the maximal sets of arms no two of which are
    separated — for :func:`tied_groups` runs of that order whose mean ranks span at most the
    critical difference, for :func:`evalsite.stats.pairs.letter_groups` cliques of the paired
    tests' "not separated" graph — best group first; group i is labelled with the i-th letter
    ('a', 'b', ..., 'z', 'aa', 'ab', ...). ``letters[arm]`` joins the labels of the arm's groups
    (with ',' between them once labels have two letters). Two arms share a letter exactly when
    the data does not separate them.
    """

    order: tuple[int, ...]
    groups: tuple[tuple[int, ...], ...]
    letters: tuple[str, ...]

    @property
    def strict_order_supported(self) -> bool:
        """True when every arm is separated from every other: the full order may be printed."""
        return all(len(group) == 1 for group in self.groups)

    @property
    def tied_with_best(self) -> tuple[int, ...]:
        """Arms the data cannot separate from the best arm (the best arm included)."""
        return self.groups[0]


def tied_groups(mean_ranks: ArrayLike, critical_difference: float) -> TiedGroups:
    """Group arms that are not significantly different (|R_i - R_j| <= critical difference).

    Distances on a line make the "not different" relation an interval graph, so its maximal
    cliques are runs of consecutive arms in rank order, found in one sweep.
    """
    ranks = np.asarray(mean_ranks, dtype=float)
    if ranks.ndim != 1 or ranks.size == 0 or not np.all(np.isfinite(ranks)):
        raise ValueError("mean_ranks must be a non-empty 1-D sequence of finite numbers")
    if not math.isfinite(critical_difference) or critical_difference < 0:
        raise ValueError(
            f"critical_difference must be a finite number >= 0, got {critical_difference}"
        )
    order = np.argsort(ranks, kind="stable")
    sorted_ranks = ranks[order]
    groups: list[tuple[int, ...]] = []
    last_end = -1
    for start in range(order.size):
        reach = sorted_ranks[start] + critical_difference
        end = int(np.searchsorted(sorted_ranks, reach, side="right"))
        if end - 1 > last_end:  # not contained in the previous run
            groups.append(tuple(int(arm) for arm in order[start:end]))
            last_end = end - 1
    return labelled_groups([int(arm) for arm in order], groups, ranks.size)


def labelled_groups(order: Sequence[int], groups: Sequence[tuple[int, ...]], n_arms: int) -> TiedGroups:
    """The letter display of ``groups`` (best first) over ``n_arms`` arms listed in ``order``."""
    labels = [_group_label(i) for i in range(len(groups))]
    separator = "" if len(groups) <= 26 else ","
    letters = tuple(
        separator.join(label for label, group in zip(labels, groups) if arm in group) for arm in range(n_arms)
    )
    return TiedGroups(order=tuple(order), groups=tuple(groups), letters=letters)


def _group_label(index: int) -> str:
    """'a'..'z', then 'aa', 'ab', ... like spreadsheet columns."""
    label = ""
    index += 1
    while index:
        index, remainder = divmod(index - 1, 26)
        label = string.ascii_lowercase[remainder] + label
    return label
