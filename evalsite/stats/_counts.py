"""Bootstrap resamples drawn as counts of distinct values, for large inputs with few of them.

Resampling n units with replacement chooses each distinct unit value v a number of times that
is jointly Multinomial(n, share of units equal to v); a statistic that depends on the chosen
units only through those counts (a mean, a ratio of sums, arm means over items) therefore has
exactly the index bootstrap's distribution when the counts are drawn instead of the indices.
That costs O(distinct values) per resample instead of O(n): pass/fail items, means over a few
repeats and their paired differences take a handful of values however many items there are.
The random stream is another than scipy's, so results agree with the index bootstrap within
Monte Carlo error (tests/test_stats_counts.py), not to the last digit; small inputs keep the
index bootstrap, which reproduces scipy exactly. Where the distinct values are many against the
draws (rank stability's nested samples of ~2,000 distinct item rows), the index draws themselves are
tallied per distinct value instead: the index bootstrap's samples, summed as tallies × values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

#: Counts are drawn only above this many index draws (units × resamples × columns) ...
COUNTS_FROM_DRAWS = 1 << 26
#: ... and when there is at most one distinct unit value per this many units.
UNITS_PER_DISTINCT = 16
_COUNT_CELLS = 1 << 22
#: A multinomial draw costs about this many index draws per distinct unit (~85 against ~11 ns).
DRAWS_PER_CATEGORY = 8


class Distinct(NamedTuple):
    """The distinct unit rows of an n × k array (sorted), how many units have each, and each unit's row."""

    rows: np.ndarray
    counts: np.ndarray
    inverse: np.ndarray


def distinct_units(units: np.ndarray, n_resamples: int) -> Distinct | None:
    """The distinct rows of an n × k array of unit values, or None when the index bootstrap is
    cheap enough or the distinct rows are too many to gain from counts."""
    n = units.shape[0]
    if n * n_resamples * units.shape[1] <= COUNTS_FROM_DRAWS:
        return None
    if units.shape[1] == 1:
        values, inverse, counts = np.unique(units[:, 0], return_inverse=True, return_counts=True)
        found = Distinct(values[:, None], counts, inverse)
    else:
        found = _distinct_rows(units)
    return None if found.rows.shape[0] * UNITS_PER_DISTINCT > n else found


def _distinct_rows(units: np.ndarray) -> Distinct:
    """``np.unique(units, axis=0, return_inverse=True, return_counts=True)``, the same rows in the same order, ~6x faster:
    each column's values coded by their sorted position, the codes of a row read as one integer
    (first column most significant, so the integers sort as the rows do). Rows it could not code
    exactly alike (NaN, -0.0, or too many values for one integer) go to ``np.unique``."""
    key = np.zeros(units.shape[0], dtype=np.int64)
    radix = 1
    for column in units.T:
        if not np.all(np.isfinite(column)) or np.any(np.signbit(column[column == 0])):
            break
        values, codes = np.unique(column, return_inverse=True)
        radix *= values.size
        if radix >= 1 << 62:
            break
        key = key * values.size + codes
    else:
        _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
        return Distinct(units[first], counts, inverse)
    distinct, inverse, counts = np.unique(units, axis=0, return_inverse=True, return_counts=True)
    return Distinct(distinct, counts, inverse.ravel())


def draw_counts(rng: np.random.Generator, n: int, counts: np.ndarray, rows: int) -> np.ndarray:
    """``rows`` resamples of n units: how often each distinct unit is chosen (rows × distinct)."""
    return rng.multinomial(n, counts / counts.sum(), size=rows).astype(float)


def counts_resampler(
    sums: np.ndarray, sizes: np.ndarray, n_resamples: int
) -> Callable[[np.random.Generator], tuple[np.ndarray, float]] | None:
    """The bootstrap distribution of sum(sums) / sum(sizes) over units and the estimate, drawn
    by counts (None when the index bootstrap applies). The estimate is computed from the
    observed counts the same way, so a resample equal to the sample ties with it exactly (BCa
    counts ties as half)."""
    found = distinct_units(np.stack([sums, sizes], axis=1) if np.ptp(sizes) else sums[:, None], n_resamples)
    if found is None:
        return None
    distinct, counts, _ = found
    unit_sums = distinct[:, 0]
    unit_sizes = distinct[:, 1] if distinct.shape[1] > 1 else np.full(distinct.shape[0], float(sizes[0]))

    def resample(rng: np.random.Generator) -> tuple[np.ndarray, float]:
        rows = max(1, _COUNT_CELLS // distinct.shape[0])
        chunks = []
        for start in range(0, n_resamples, rows):
            chosen = draw_counts(rng, sums.size, counts, min(rows, n_resamples - start))
            chunks.append((chosen @ unit_sums) / (chosen @ unit_sizes))
        observed = counts.astype(float)
        return np.concatenate(chunks), float((observed @ unit_sums) / (observed @ unit_sizes))

    return resample


def nested_count_means(distinct: Distinct, sizes: np.ndarray, rows: int, rng: np.random.Generator) -> np.ndarray:
    """Column means over nested bootstrap samples (rows × sizes × columns): the first k of n
    draws with replacement, for every size k, drawn as counts size after size (the draws
    between two sizes are a multinomial sample of the difference)."""
    chosen = np.zeros((rows, distinct.rows.shape[0]))
    means = np.empty((rows, sizes.size, distinct.rows.shape[1]))
    previous = 0
    for index, size in enumerate(sizes.tolist()):
        chosen += draw_counts(rng, size - previous, distinct.counts, rows)
        means[:, index, :] = (chosen @ distinct.rows) / size
        previous = size
    return means


def tallies_draws(distinct: Distinct, sizes: np.ndarray) -> bool:
    """Whether nested samples of these sizes are cheaper tallied from index draws than drawn as
    multinomial counts: when the distinct rows are more than one per :data:`DRAWS_PER_CATEGORY`
    draws between two sizes (a multinomial costs every distinct row, an index draw one tally)."""
    return int(distinct.rows.shape[0]) * sizes.size * DRAWS_PER_CATEGORY > int(sizes[-1])


def tallied_means(distinct: Distinct, drawn: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Column means over nested bootstrap samples of drawn unit indices (rows × draws), the first k
    draws for every size k (rows × sizes × columns), from how often each distinct row was drawn: the
    index bootstrap's own samples, summed as tallies × rows (equal to its sums whenever they are exact,
    e.g. on scores in halves)."""
    rows, kinds = drawn.shape[0], distinct.rows.shape[0]
    which = np.take(distinct.inverse, drawn)
    chosen = np.zeros((rows, kinds))
    means = np.empty((rows, sizes.size, distinct.rows.shape[1]))
    previous = 0
    for index, size in enumerate(sizes.tolist()):
        for row in range(rows):  # each resample's draws tallied from its own contiguous slice: no copy, no offsets
            chosen[row] += np.bincount(which[row, previous:size], minlength=kinds)
        means[:, index, :] = (chosen @ distinct.rows) / size
        previous = size
    return means
