"""An arm's own noise across repeats, and per-item flakiness of pass/fail outcomes."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evalsite.stats._inputs import repeat_matrix
from evalsite.stats.proportions import wilson_interval


@dataclass(frozen=True)
class RepeatNoise:
    """Spread of an arm's score across repeats of the whole dataset.

    ``repeat_means[r]`` is the mean over items of repeat r (items missing in that repeat are
    left out of it); ``std`` is their standard deviation (ddof=1, NaN with fewer than two
    repeats). A difference between two arms smaller than this spread is indistinguishable from
    rerunning the same arm.
    """

    repeat_means: tuple[float, ...]
    std: float
    n_items: int
    n_repeats: int
    method: str = "std (ddof=1) of per-repeat means"


def repeat_noise(matrix: ArrayLike) -> RepeatNoise:
    """Noise of one arm from its items × repeats score matrix (NaN = case missing)."""
    array = np.asarray(matrix, dtype=float)
    if array.ndim != 2:
        raise ValueError(f"matrix: expected 2-D (items × repeats), got {array.ndim}-D")
    recorded = np.isfinite(array)
    present = recorded.any(axis=0)
    totals = np.where(recorded, array, 0.0).sum(axis=0)[present]
    means = totals / recorded.sum(axis=0)[present]
    std = float(np.std(means, ddof=1)) if means.size >= 2 else math.nan
    return RepeatNoise(
        repeat_means=tuple(means.tolist()),
        std=std,
        n_items=array.shape[0],
        n_repeats=int(means.size),
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased chance that at least one of k repeats drawn from n (c passing) passes.

    1 - C(n - c, k) / C(n, k) (Chen et al. 2021); NaN when k > n.
    """
    _check_counts(n, c, k)
    return math.nan if k > n else 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased chance that all k repeats drawn from n (c passing) pass: C(c, k) / C(n, k)."""
    _check_counts(n, c, k)
    return math.nan if k > n else math.comb(c, k) / math.comb(n, k)


def _check_counts(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"need 0 <= c <= n and k >= 1, got n={n}, c={c}, k={k}")


@dataclass(frozen=True)
class Flakiness:
    """Per-item pass/fail behaviour across repeats (all tuples are indexed by item).

    ``pass_at_k`` / ``pass_hat_k`` are NaN for an item with fewer than k recorded repeats.
    ``flaky_items`` lists the items that both passed and failed.
    """

    k: int
    n_runs: tuple[int, ...]
    n_passed: tuple[int, ...]
    pass_rate: tuple[float, ...]
    wilson: tuple[tuple[float, float], ...]
    pass_at_k: tuple[float, ...]
    pass_hat_k: tuple[float, ...]
    flaky_items: tuple[int, ...]
    confidence: float
    method: str = "Wilson score intervals; unbiased pass@k and pass^k"

    @property
    def mean_pass_at_k(self) -> float:
        return _mean_of_defined(self.pass_at_k)

    @property
    def mean_pass_hat_k(self) -> float:
        return _mean_of_defined(self.pass_hat_k)


def flakiness(
    pass_matrix: ArrayLike, *, k: int | None = None, confidence: float = 0.95
) -> Flakiness:
    """Pass rate, Wilson interval, pass@k and pass^k of every item from items × repeats outcomes.

    ``pass_matrix`` holds booleans or 0/1, NaN for a repeat that was not recorded. ``k``
    defaults to the fewest repeats any item has, so every item gets a value.
    """
    outcomes = repeat_matrix(pass_matrix, "pass_matrix")
    recorded = np.isfinite(outcomes)
    if np.any((outcomes[recorded] != 0) & (outcomes[recorded] != 1)):
        raise ValueError("pass_matrix: outcomes must be booleans or 0/1 (NaN for a missing repeat)")
    runs = recorded.sum(axis=1).tolist()
    passed = np.where(recorded, outcomes, 0.0).sum(axis=1).astype(int).tolist()
    chosen_k = min(runs) if k is None else k
    intervals = [wilson_interval(c, n, confidence) for c, n in zip(passed, runs)]
    return Flakiness(
        k=chosen_k,
        n_runs=tuple(runs),
        n_passed=tuple(passed),
        pass_rate=tuple(c / n for c, n in zip(passed, runs)),
        wilson=tuple((interval.low, interval.high) for interval in intervals),
        pass_at_k=tuple(pass_at_k(n, c, chosen_k) for c, n in zip(passed, runs)),
        pass_hat_k=tuple(pass_hat_k(n, c, chosen_k) for c, n in zip(passed, runs)),
        flaky_items=tuple(i for i, (c, n) in enumerate(zip(passed, runs)) if 0 < c < n),
        confidence=confidence,
    )


def _mean_of_defined(values: tuple[float, ...]) -> float:
    defined = [v for v in values if not math.isnan(v)]
    return sum(defined) / len(defined) if defined else math.nan
