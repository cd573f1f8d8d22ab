"""Friedman's within-item permutations drawn as counts, for large inputs with few kinds of item.

A within-item shuffle gives each item's rank row to its arms in a uniformly random order, and the
permutation statistic depends on the shuffled rows only through the arms' rank sums. Items whose
rows hold the same multiset of ranks (a *class*: with pass/fail scores and k arms, the number of
arms that passed) are exchangeable, so the rank sums can be drawn class by class without visiting
items: arm after arm, an item whose remaining multiset is r gives the next arm each rank v with
probability r_v / |r| (the chain rule of a uniform random arrangement of a multiset), so the m
items sharing a remaining multiset split among its ranks as Multinomial(m, r / |r|), and each part
goes on with one v fewer. That is the shuffle's joint distribution of rank sums exactly, at a cost
of one multinomial per remaining multiset and arm, whatever the number of items (a few hundred
multisets for 10 arms of pass/fail items: ~0.1 s for the 200 permutations an early stop draws at
100,000 items, against ~2.5 s of shuffling). The random stream is another than the shuffle's, so
a p-value agrees with the shuffle's within Monte Carlo error, not to the last digit
(tests/test_stats_rank_counts.py checks the sampler against the exact null distribution, the
shuffle and scipy); small inputs, and inputs with too many multisets (many arms without ties),
keep the shuffle. The same idea as :mod:`evalsite.stats._counts` for the bootstrap.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

#: Counts are drawn only from this many ranked cells (items with an untied arm × arms) ...
COUNTS_FROM_CELLS = 1 << 16
#: ... and when there is at most one remaining multiset per this many items.
ITEMS_PER_STATE = 16

State = tuple[int, tuple[int, ...]]  # (class, how many of each of its ranks are still to give)
RankSums = Callable[[np.random.Generator, int], np.ndarray]


def rank_sum_sampler(doubled: np.ndarray) -> tuple[RankSums, int] | None:
    """(a sampler of ``rows`` permutations' rank sums (rows × arms) of the items × arms ``doubled``
    rank rows, the permutations to draw at a time), or None when shuffling is cheap enough or the
    multisets are too many to gain from counts."""
    if doubled.size < COUNTS_FROM_CELLS:
        return None
    ordered = np.ascontiguousarray(np.sort(doubled, axis=1))
    keys = ordered.view(np.dtype((np.void, ordered.itemsize * ordered.shape[1]))).ravel()
    _, first, sizes = np.unique(keys, return_index=True, return_counts=True)
    classes = [np.unique(ordered[row], return_counts=True) for row in first.tolist()]
    states = sum(math.prod(int(count) + 1 for count in counts.tolist()) for _, counts in classes)
    if states * ITEMS_PER_STATE > doubled.shape[0]:
        return None
    values = [ranks for ranks, _ in classes]
    start = {
        (index, tuple(counts.tolist())): int(size) for index, ((_, counts), size) in enumerate(zip(classes, sizes))
    }

    def draw(rng: np.random.Generator, rows: int) -> np.ndarray:
        level = {state: np.full(rows, size, dtype=np.int64) for state, size in start.items()}
        sums = np.zeros((rows, doubled.shape[1]), dtype=np.int64)
        for arm in range(doubled.shape[1]):
            level = _give_arm(level, values, sums[:, arm], rng)
        return sums

    return draw, max(1, (1 << 21) // states)


def _give_arm(
    level: dict[State, np.ndarray], values: list[np.ndarray], sums: np.ndarray, rng: np.random.Generator
) -> dict[State, np.ndarray]:
    """One arm's ranks from every remaining multiset (added to ``sums``); the multisets left after it."""
    following: dict[State, np.ndarray] = {}
    for (index, remaining), items in level.items():
        present = [rank for rank, count in enumerate(remaining) if count]
        if len(present) == 1:
            taken = items[:, None]
        else:
            shares = np.array([remaining[rank] for rank in present], dtype=float) / sum(remaining)
            taken = rng.multinomial(items, shares)
        sums += taken @ values[index][present]
        for column, rank in enumerate(present):
            left = (index, remaining[:rank] + (remaining[rank] - 1,) + remaining[rank + 1 :])
            following[left] = following[left] + taken[:, column] if left in following else taken[:, column]
    return following
