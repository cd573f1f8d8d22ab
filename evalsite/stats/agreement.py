"""Agreement between two raters on binary labels (a judge and the human reviewers): Cohen's κ,
raw agreement, their 2 × 2 confusion counts, and percentile bootstrap intervals over the rated
cases.

κ = (p_o − p_e) / (1 − p_e), with p_o the share of cases both raters label alike and p_e the share
expected by chance from each rater's own pass rate (Cohen 1960). When both raters give one and the
same label to every case, p_e = 1 and κ is undefined (nan), as ``sklearn.metrics.cohen_kappa_score``
gives it. The interval resamples cases with replacement (seeded); a resample on which κ is undefined
is left out of κ's interval and counted (``undefined``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evalsite.stats.proportions import Interval

INTERVAL_METHOD = "percentile bootstrap over cases"


@dataclass(frozen=True)
class Confusion:
    """Counts of (first rater, second rater) labels: ``both_pass`` = both said pass, ``first_only``
    = the first said pass and the second fail, and so on."""

    both_pass: int
    first_only: int
    second_only: int
    both_fail: int

    @property
    def n(self) -> int:
        return self.both_pass + self.first_only + self.second_only + self.both_fail


@dataclass(frozen=True)
class Agreement:
    """Agreement of two raters over ``n`` cases, with intervals."""

    n: int
    agreed: int
    raw: float
    kappa: float
    confusion: Confusion
    raw_interval: Interval
    kappa_interval: Interval
    n_resamples: int
    seed: int
    undefined: int  # resamples on which κ was undefined (left out of its interval)


def confusion(first: ArrayLike, second: ArrayLike) -> Confusion:
    """The 2 × 2 counts of two equal-length boolean label vectors."""
    a, b = _labels(first, second)
    return Confusion(int(np.sum(a & b)), int(np.sum(a & ~b)), int(np.sum(~a & b)), int(np.sum(~a & ~b)))


def cohen_kappa(first: ArrayLike, second: ArrayLike) -> float:
    """Cohen's κ of two boolean label vectors (nan when undefined or empty)."""
    a, b = _labels(first, second)
    kappa = _kappa(a.sum(), b.sum(), (a == b).sum(), np.asarray(a.size))
    return float(kappa)


def agreement(first: ArrayLike, second: ArrayLike, *, confidence: float = 0.95, seed: int = 0,
              n_resamples: int = 2000) -> Agreement:
    """κ and raw agreement of two boolean label vectors, each with its bootstrap interval."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    a, b = _labels(first, second)
    n = a.size
    counts = confusion(a, b)
    agreed = counts.both_pass + counts.both_fail
    raw = agreed / n if n else math.nan
    kappa = cohen_kappa(a, b)
    if n < 2:
        nan = Interval(math.nan, math.nan, confidence, INTERVAL_METHOD)
        return Agreement(n, agreed, raw, kappa, counts, nan, nan, n_resamples, seed, 0)
    chosen = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    picked_a, picked_b = a[chosen], b[chosen]
    same = (picked_a == picked_b).sum(axis=1)
    kappas = _kappa(picked_a.sum(axis=1), picked_b.sum(axis=1), same, np.full(n_resamples, n))
    defined = kappas[np.isfinite(kappas)]
    return Agreement(
        n=n, agreed=agreed, raw=raw, kappa=kappa, confusion=counts,
        raw_interval=_percentile(same / n, confidence),
        kappa_interval=_percentile(defined, confidence),
        n_resamples=n_resamples, seed=seed, undefined=int(n_resamples - defined.size),
    )


def _labels(first: ArrayLike, second: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(first, dtype=bool).ravel(), np.asarray(second, dtype=bool).ravel()
    if a.shape != b.shape:
        raise ValueError(f"the two raters label different numbers of cases ({a.size} and {b.size})")
    return a, b


def _kappa(passes_a: np.ndarray, passes_b: np.ndarray, same: np.ndarray, n: np.ndarray) -> np.ndarray:
    """κ from each rater's pass count, the count of equal labels and n (elementwise; nan when undefined)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        n = n.astype(float)
        observed = same / n
        chance = (passes_a * passes_b + (n - passes_a) * (n - passes_b)) / (n * n)
        kappa = (observed - chance) / (1 - chance)
    return np.where(np.isclose(chance, 1.0, rtol=0, atol=1e-12) | (n == 0), np.nan, kappa)


def _percentile(values: np.ndarray, confidence: float) -> Interval:
    if values.size == 0:
        return Interval(math.nan, math.nan, confidence, INTERVAL_METHOD)
    tail = (1 - confidence) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return Interval(float(low), float(high), confidence, INTERVAL_METHOD)
