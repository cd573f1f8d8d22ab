"""Bootstrap resamples drawn as counts of distinct values, for large inputs with few of them.

Resampling n units with replacement chooses each distinct unit value v a number of times that
is jointly Multinomial(n, share of units equal to v); a statistic that depends on the chosen
units only through those counts (a mean, a ratio of sums, arm means over items) therefore has
exactly the index bootstrap's distribution when the counts are drawn instead of the indices.
That costs O(distinct values) per resample instead of O(n): pass/fail items, means over a few
repeats and their paired differences take a handful of values however many items there are.
The random stream is another than scipy's, so results agree with the index bootstrap within
Monte Carlo error (tests/test_stats_counts.py), not to the last digit; small inputs keep the
index bootstrap, which reproduces scipy exactly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: Counts are drawn only above this many index draws (units × resamples × columns) ...
COUNTS_FROM_DRAWS = 1 << 26
#: ... and when there is at most one distinct unit value per this many units.
UNITS_PER_DISTINCT = 16
_COUNT_CELLS = 1 << 22


def distinct_units(units: np.ndarray, n_resamples: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(distinct rows, how many units have each) of an n × k array of unit values, or None when
    the index bootstrap is cheap enough or the distinct rows are too many to gain from counts."""
    n = units.shape[0]
    if n * n_resamples * units.shape[1] <= COUNTS_FROM_DRAWS:
        return None
    if units.shape[1] == 1:
        values, counts = np.unique(units[:, 0], return_counts=True)
        distinct = values[:, None]
    else:
        distinct, counts = _distinct_rows(units)
    if distinct.shape[0] * UNITS_PER_DISTINCT > n:
        return None
    return distinct, counts


def _distinct_rows(units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(units, axis=0, return_counts=True)``, the same rows in the same order, ~8x faster:
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
        _, first, counts = np.unique(key, return_index=True, return_counts=True)
        return units[first], counts
    distinct, counts = np.unique(units, axis=0, return_counts=True)
    return distinct, counts


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
    distinct, counts = found
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


def nested_count_means(
    distinct: np.ndarray, counts: np.ndarray, sizes: np.ndarray, rows: int, rng: np.random.Generator
) -> np.ndarray:
    """Column means over nested bootstrap samples (rows × sizes × columns): the first k of n
    draws with replacement, for every size k, drawn as counts size after size (the draws
    between two sizes are a multinomial sample of the difference)."""
    chosen = np.zeros((rows, distinct.shape[0]))
    means = np.empty((rows, sizes.size, distinct.shape[1]))
    previous = 0
    for index, size in enumerate(sizes.tolist()):
        chosen += draw_counts(rng, size - previous, counts, rows)
        means[:, index, :] = (chosen @ distinct) / size
        previous = size
    return means
