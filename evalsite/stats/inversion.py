"""The interval of the paired sign-flip test's own inversion, and Holm's per-pair levels.

A verdict decides a pair with the sign-flip test at a Holm level; beside that decision it shows
the set of shifts δ the same test does not reject at the same level: the sign-flip test of the
per-item differences d − δ (whole clusters flip when items declare one, a cluster's total then
shifting by δ × its size). "The interval excludes 0" and "the pair is separated" are then one
statement, not two that happen to agree (Hartigan 1969; Garthwaite 1996 for permutation tests).

Every p(δ) counts one fixed set of sign patterns — all 2^n when there are at most
:data:`EXACT_UNITS` units, else ``n_resamples`` seeded random ones — so p(δ) is one consistent
function of δ. The statistic of a pattern s is linear in δ, Σ s_c t_c − δ Σ s_c n_c, so each
p(δ) costs one pass over the patterns and each bound is found by bisection.

At δ = 0 the verdict's own decision is used (``zero_accepted``): the p-value there comes from
the exact engines of :func:`~evalsite.stats.paired.sign_flip_test`, which random patterns only
estimate. Each bound is searched on the side of 0 the decision puts it, so the interval holds 0
exactly when the decision does not reject, whatever the Monte Carlo error elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from evalsite.stats.paired import RELATIVE_TOLERANCE, holm
from evalsite.stats.proportions import Interval

#: Units up to which every sign pattern is enumerated (2^16 patterns).
EXACT_UNITS = 16
_BISECTIONS = 60
_WIDENINGS = 60
_PATTERN_CELLS = 1 << 20


@dataclass(frozen=True)
class HolmLevels:
    """Holm's step-down at ``alpha`` read as one level per p-value (in the order given).

    With m p-values of which r are rejected, the rejected one at step j (1 = smallest raw p) is
    tested at α / (m − j + 1) and every other at α / (m − r): a raw p lies below its level
    exactly when Holm rejects it, so an interval at confidence 1 − level agrees with the
    decision. ``adjusted`` are Holm's adjusted p-values (:func:`~evalsite.stats.paired.holm`)."""

    adjusted: tuple[float, ...]
    levels: tuple[float, ...]
    rejected: tuple[bool, ...]


def holm_levels(p_values: Sequence[float], alpha: float) -> HolmLevels:
    """Holm's decisions (adjusted p < α) on raw ``p_values`` and the level each was tested at."""
    adjusted = holm(list(p_values)) if len(p_values) else []
    m = len(adjusted)
    rejected = [p < alpha for p in adjusted]
    kept = m - sum(rejected)
    order = sorted(range(m), key=lambda i: p_values[i])  # stable: Holm's step order
    levels = [alpha / max(1, kept)] * m
    for step, index in enumerate(order, start=1):
        if rejected[index]:
            levels[index] = alpha / (m - step + 1)
    return HolmLevels(tuple(adjusted), tuple(levels), tuple(rejected))


@dataclass(frozen=True)
class ShiftTest:
    """The sign-flip test of every shift δ of the mean per-item difference, on fixed patterns.

    ``totals`` are the units' summed differences, ``sizes`` their item counts; ``exact`` when
    every pattern is enumerated."""

    totals: np.ndarray
    sizes: np.ndarray
    flipped_totals: np.ndarray
    flipped_sizes: np.ndarray
    exact: bool

    @cached_property
    def items(self) -> bool:
        """Every unit one item (no clusters)."""
        return bool(np.all(self.sizes == 1.0))

    @cached_property
    def _magnitudes(self) -> tuple[float, float]:
        return float(np.abs(self.totals).sum()), float(self.sizes.sum())

    def _tolerance_bound(self, delta: float) -> float:
        """At least RELATIVE_TOLERANCE × sum |totals − δ × sizes| (that sum is at most
        sum |totals| + |δ| × sum sizes; the factor covers the rounding of all three sums)."""
        magnitude, size = self._magnitudes
        return RELATIVE_TOLERANCE * (magnitude + abs(delta) * size) * 1.001

    @property
    def estimate(self) -> float:
        return float(self.totals.sum() / self.sizes.sum())

    @cached_property
    def _total(self) -> float:
        """The units' totals summed once (the shifted sums of every δ follow from it, within a bound)."""
        return float(self.totals.sum())

    def p_value(self, delta: float) -> float:
        """Two-sided p of "mean per-item difference = δ" over the patterns."""
        statistics = np.abs(self.flipped_totals - delta * self.flipped_sizes)
        count = self._count_without_pass(statistics, delta) if self.items else None
        if count is None:
            count = self._count(statistics, delta)
        if self.exact:
            return count / self.flipped_totals.size
        return (count + 1) / (self.flipped_totals.size + 1)

    def _count(self, statistics: np.ndarray, delta: float) -> int:
        """The patterns whose statistic reaches the observed one, less the tolerance."""
        shifted = self.totals - delta if self.items else self.totals - delta * self.sizes  # δ × 1.0 is δ
        observed = abs(float(shifted.sum()))
        # the tolerance lies between 0 and a bound known without another pass over the units:
        # when both ends count the same patterns, so does the tolerance itself
        count = int(np.count_nonzero(statistics >= observed))
        if count != np.count_nonzero(statistics >= observed - self._tolerance_bound(delta)):
            tolerance = RELATIVE_TOLERANCE * float(np.abs(shifted).sum())
            count = int(np.count_nonzero(statistics >= observed - tolerance))
        return count

    def _count_without_pass(self, statistics: np.ndarray, delta: float) -> int | None:
        """:meth:`_count` for items without a pass over them, or None when it cannot be sure of it.

        :meth:`_count` sums the n shifted items in floating point; the items' sum minus n × δ
        differs from that by at most ``slack``: each of the two is within (n + 1) u × M of the exact
        sum of the shifted items, where M = Σ|item| + n|δ| and u = 2⁻⁵³ (any order of n additions errs
        by at most (n − 1) u × the sum of magnitudes, each subtraction and product by u × its own), and
        ``slack`` is (2n + 8) u × M. When the patterns counted at the far ends of that range, tolerance
        included, are the same, :meth:`_count` counts them too, whatever its rounding."""
        n = self.totals.size
        magnitude = self._magnitudes[0] + abs(delta) * n
        slack = (2 * n + 8) * 2.0**-53 * magnitude * 1.01
        observed = abs(self._total - n * delta)
        fewest = np.count_nonzero(statistics >= observed + slack)
        most = np.count_nonzero(statistics >= observed - slack - self._tolerance_bound(delta))
        return int(fewest) if fewest == most else None


def shift_test(
    diffs: ArrayLike, groups: Sequence[Hashable] | None = None, *, seed: int = 0, n_resamples: int = 9999,
) -> ShiftTest:
    """The patterns of the units of per-item ``diffs`` (one cluster label per item in ``groups``)."""
    values = np.asarray(diffs, dtype=float).ravel()
    totals, sizes = _unit_totals_and_sizes(values, groups)
    exact = totals.size <= EXACT_UNITS
    signs = _all_signs(totals.size) if exact else None
    if signs is not None:
        return ShiftTest(totals, sizes, signs @ totals, signs @ sizes, True)
    rng = np.random.default_rng(seed)
    units, counts = _distinct_units(totals, sizes)
    if units.shape[0] <= totals.size // 4:  # few distinct units (pass/fail items): draw sign counts per value
        return ShiftTest(totals, sizes, *_counted_flips(units, counts, n_resamples, rng), False)
    flipped_totals, flipped_sizes = np.empty(n_resamples), np.empty(n_resamples)
    per_chunk = max(1, _PATTERN_CELLS // totals.size)
    for start in range(0, n_resamples, per_chunk):
        rows = min(per_chunk, n_resamples - start)
        chunk = rng.integers(0, 2, size=(rows, totals.size), dtype=np.int8) * 2 - 1
        flipped_totals[start:start + rows] = chunk @ totals
        flipped_sizes[start:start + rows] = chunk @ sizes
    return ShiftTest(totals, sizes, flipped_totals, flipped_sizes, False)


def _distinct_units(totals: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (total, size) rows in sorted order and how many units have each. Items
    (every size 1) need only their totals' distinct values: the same rows in the same order as
    the two-column sort, which costs ~20× more on 100,000 items."""
    if np.all(sizes == 1.0):
        values, counts = np.unique(totals, return_counts=True)
        return np.column_stack([values, np.ones(values.size)]), counts
    return np.unique(np.column_stack([totals, sizes]), axis=0, return_counts=True)


def _counted_flips(
    units: np.ndarray, counts: np.ndarray, n_resamples: int, rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Random sign patterns of units that repeat: of the c units equal to one (total, size), a
    Binomial(c, 1/2) number keep their sign, so the pattern's sums are drawn without listing it."""
    net = np.empty((n_resamples, units.shape[0]))
    per_chunk = max(1, _PATTERN_CELLS // units.shape[0])
    for start in range(0, n_resamples, per_chunk):
        rows = min(per_chunk, n_resamples - start)
        net[start:start + rows] = 2.0 * rng.binomial(counts, 0.5, size=(rows, counts.size)) - counts
    return net @ units[:, 0], net @ units[:, 1]


def _unit_totals_and_sizes(values: np.ndarray, groups: Sequence[Hashable] | None) -> tuple[np.ndarray, np.ndarray]:
    if groups is None:
        return values, np.ones(values.size)
    if len(groups) != values.size:
        raise ValueError(f"groups needs one label per item: {len(groups)} labels for {values.size} items")
    index: dict[Hashable, int] = {}
    codes = np.array([index.setdefault(label, len(index)) for label in groups])
    return (np.bincount(codes, weights=values, minlength=len(index)),
            np.bincount(codes, minlength=len(index)).astype(float))


def _all_signs(n: int) -> np.ndarray:
    patterns = np.arange(1 << n)[:, None] >> np.arange(n)[None, :] & 1
    return np.asarray(patterns * 2 - 1, dtype=float)


def inverted_interval(test: ShiftTest, level: float, *, zero_accepted: bool) -> Interval:
    """Shifts not rejected at ``level`` around the estimate: each bound by bisection between an
    accepted and a rejected δ, on the side of 0 that ``zero_accepted`` (the decision) puts it.
    A bound no finite shift reaches (too few units for ``level``) is infinite."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    estimate = test.estimate

    def accepted(delta: float) -> bool:
        return zero_accepted if delta == 0 else test.p_value(delta) >= level

    spread = float(np.max(np.abs(test.totals / test.sizes))) if test.totals.size else 0.0
    step = max(abs(estimate), spread, 1e-9)
    low = _bound(accepted, estimate, -1.0, step)
    high = _bound(accepted, estimate, 1.0, step)
    how = "every sign pattern" if test.exact else f"{test.flipped_totals.size:,} seeded sign patterns"
    return Interval(low, high, 1 - level, f"sign-flip test inversion at level {level:.3g} ({how})")


def _bound(accepted: Callable[[float], bool], estimate: float, direction: float, step: float) -> float:
    """The last accepted shift from ``estimate`` in ``direction`` (bisection to float precision)."""
    inside = estimate
    if estimate * direction < 0:  # 0 lies this way: its decision is a known point of the search
        if accepted(0.0):
            inside = 0.0
        else:
            return _bisect(accepted, estimate, 0.0)
    outside = None
    for _ in range(_WIDENINGS):
        candidate = inside + direction * step
        if not accepted(candidate):
            outside = candidate
            break
        inside, step = candidate, step * 2
    if outside is None:
        return direction * math.inf
    return _bisect(accepted, inside, outside)


def _bisect(accepted: Callable[[float], bool], inside: float, outside: float) -> float:
    for _ in range(_BISECTIONS):
        middle = (inside + outside) / 2
        if middle in (inside, outside):
            break
        if accepted(middle):
            inside = middle
        else:
            outside = middle
    return inside
