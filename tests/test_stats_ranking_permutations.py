"""The Friedman permutation counts on int64 ranks are those of the int32 shuffle, and the tie
correction from one sort is the one from max and min ranks.

``_permutation_hits`` shuffles the doubled ranks as int64 (numpy's fast path for 8-byte elements);
numpy's shuffle draws the same numbers whatever the element size, so every count (and every
p-value) must equal the straightforward int32 version kept here as the reference, chunked as it was
(4M cells a chunk).
"""

from __future__ import annotations

import numpy as np
import pytest

from evalsite.stats.distributions import rankdata
from evalsite.stats.ranking import _FIRST_LOOK, _clear_of, _permutation_hits, _tied_cubes, snap_ties, within_item_ranks


def reference_hits(ranks: np.ndarray, budget: int, alpha: float | None, rng: np.random.Generator) -> tuple[int, int]:
    """The int32 shuffle of the doubled ranks (the code before narrow types)."""
    doubled = np.rint(2 * ranks).astype(np.int32)
    doubled = doubled[np.any(doubled != doubled[:, :1], axis=1)]
    observed = int(np.sum(doubled.sum(axis=0, dtype=np.int64) ** 2))
    per_chunk = max(1, (1 << 22) // doubled.size)
    hits = drawn = 0
    look = _FIRST_LOOK
    while drawn < budget:
        rows = min(per_chunk, budget - drawn, max(1, look - drawn))
        shuffled = rng.permuted(np.broadcast_to(doubled, (rows, *doubled.shape)), axis=2)
        rank_sums = shuffled.sum(axis=1, dtype=np.int64)
        hits += int(np.count_nonzero(np.sum(rank_sums**2, axis=1) >= observed))
        drawn += rows
        if drawn >= look:
            if alpha is not None and _clear_of(hits, drawn, alpha):
                break
            look *= 2
    return hits, drawn


def random_ranks(seed: int, n_items: int, n_arms: int, levels: int, shift: float) -> np.ndarray:
    """Ranks of scores with ties (``levels`` distinct values) and a drift across arms of ``shift``."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, levels, size=(n_items, n_arms)) + shift * np.arange(n_arms) * rng.random((n_items, 1))
    return within_item_ranks(scores)


@pytest.mark.parametrize(("n_items", "n_arms", "levels", "shift"), [
    (30, 2, 2, 0.0), (200, 3, 5, 0.3), (500, 10, 3, 0.05), (40, 63, 4, 0.0), (40, 64, 1000, 0.01), (25, 130, 6, 0.0),
])
@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize(("budget", "alpha"), [(300, None), (5_000, 0.05), (700, 0.5)])
def test_int64_shuffle_counts_equal_the_int32_shuffle(n_items, n_arms, levels, shift, seed, budget, alpha):
    ranks = random_ranks(seed, n_items, n_arms, levels, shift)
    expected = reference_hits(ranks, budget, alpha, np.random.default_rng(seed))
    assert _permutation_hits(ranks, budget, alpha, np.random.default_rng(seed)) == expected


def test_chunks_of_many_permutations_give_the_same_counts():
    """A small matrix takes many permutations per chunk: the draws still follow one another alike."""
    ranks = random_ranks(3, 12, 4, 3, 0.2)
    for seed in range(5):
        expected = reference_hits(ranks, 20_000, None, np.random.default_rng(seed))
        assert _permutation_hits(ranks, 20_000, None, np.random.default_rng(seed)) == expected


def reference_tied_cubes(values: np.ndarray) -> float:
    """The tie term as the correction computed it before: from max and min ranks, element by element."""
    tie_sizes = rankdata(values, method="max") - rankdata(values, method="min") + 1
    return float(np.sum(tie_sizes**2 - 1))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("n_items", "n_arms", "levels"), [(1, 2, 1), (50, 2, 2), (300, 10, 3), (80, 40, 5), (20, 7, 10**6)])
def test_tie_term_from_one_sort_equals_the_rank_difference_one(seed, n_items, n_arms, levels):
    rng = np.random.default_rng(seed)
    values = snap_ties(rng.integers(0, levels, size=(n_items, n_arms)) / 3.0)
    assert float(_tied_cubes(values)) == reference_tied_cubes(values)
