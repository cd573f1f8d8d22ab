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

    ``repeat_means[r]`` is the mean of repeat r over the ``n_items`` items recorded in *every*
    repeat (``items_left_out`` more lack some repeat): taking each repeat's mean over its own
    items would count item difficulty as noise whenever a repeat is incomplete. ``std`` is the
    standard deviation of those means (ddof=1; NaN with fewer than two repeats or no item in
    every repeat).
    """

    repeat_means: tuple[float, ...]
    std: float
    n_items: int
    n_repeats: int
    items_left_out: int = 0
    method: str = "std (ddof=1) of per-repeat means over the items present in every repeat"


def repeat_noise(matrix: ArrayLike) -> RepeatNoise:
    """Noise of one arm from its items × repeats score matrix (NaN = case missing)."""
    array = np.asarray(matrix, dtype=float)
    if array.ndim != 2:
        raise ValueError(f"matrix: expected 2-D (items × repeats), got {array.ndim}-D")
    recorded = np.isfinite(array)
    columns = recorded.any(axis=0)
    complete = recorded[:, columns].all(axis=1)
    means = array[complete][:, columns].mean(axis=0) if complete.any() else np.array([])
    std = float(np.std(means, ddof=1)) if means.size >= 2 else math.nan
    return RepeatNoise(
        repeat_means=tuple(means.tolist()),
        std=std,
        n_items=int(complete.sum()),
        n_repeats=int(columns.sum()),
        items_left_out=int((~complete & recorded.any(axis=1)).sum()),
    )


@dataclass(frozen=True)
class NoiseTest:
    """Is Δ between two arms larger than rerunning them moves their mean?

    A two-sample t-test of the two arms' per-repeat means (pooled variance, ``df`` = repeats of
    both − 2) over the ``n_items`` items present in every repeat of both; with a ``given``
    noise σ, a z-test with that σ per repeat. ``p_value`` < α says Δ is beyond the
    repeat-to-repeat spread: for two runs of the same arm that happens in α of comparisons
    (normal per-repeat means assumed). ``spread`` is the pooled (or given) σ of one repeat's
    mean. Zero spread in both arms makes any Δ beyond noise (p = 0) and Δ = 0 within (p = 1)."""

    delta: float
    spread: float
    p_value: float
    n_items: int
    repeats: tuple[int, int]
    df: float
    method: str


def repeat_noise_test(a: ArrayLike, b: ArrayLike, *, given: float | None = None) -> NoiseTest | None:
    """The noise test of two items × repeats score matrices on the same items (NaN = missing);
    None when there is no spread to test against (fewer than three repeats in all, no given σ,
    or no item present in every repeat of both)."""
    a_array, b_array = (np.asarray(m, dtype=float) for m in (a, b))
    a_array = a_array[:, np.isfinite(a_array).any(axis=0)]
    b_array = b_array[:, np.isfinite(b_array).any(axis=0)]
    complete = np.isfinite(a_array).all(axis=1) & np.isfinite(b_array).all(axis=1)
    if not complete.any():
        return None
    a_means, b_means = a_array[complete].mean(axis=0), b_array[complete].mean(axis=0)
    repeats = (a_means.size, b_means.size)
    delta = float(a_means.mean() - b_means.mean())
    scale = math.sqrt(1 / repeats[0] + 1 / repeats[1])
    if given is not None:
        spread, df, method = float(given), math.inf, "z-test of Δ against the given noise σ per repeat"
    elif sum(repeats) >= 3:
        squares = float(((a_means - a_means.mean()) ** 2).sum() + ((b_means - b_means.mean()) ** 2).sum())
        df = float(sum(repeats) - 2)
        spread, method = math.sqrt(squares / df), "two-sample t-test of per-repeat means (pooled variance)"
    else:
        return None
    tolerance = 1e-12 * max(1.0, float(np.abs(a_means).max()), float(np.abs(b_means).max()))
    if spread <= tolerance:
        p_value = 1.0 if abs(delta) <= tolerance else 0.0
    else:
        statistic = abs(delta) / (spread * scale)
        from evalsite.stats.distributions import norm_sf, t_sf  # here, not at import: a run's summary reads this module

        p_value = 2 * (norm_sf(statistic) if math.isinf(df) else t_sf(statistic, df))
    return NoiseTest(delta, spread, min(1.0, p_value), int(complete.sum()), repeats, df, method)


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
