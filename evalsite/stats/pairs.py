"""One pair of arms, on items or on clusters of items: the paired difference every verdict reads.

:func:`paired_difference` is the single primitive behind "is A really ahead of B": the mean of
the per-item differences, its bootstrap interval, the two-sided paired sign-flip p-value and the
smallest difference the comparison could detect. When items come in clusters (several questions
about one document, one conversation, one template) they are not independent, so the *cluster*
is the unit: the sign-flip test flips the sign of a whole cluster's summed difference at once,
and the interval resamples whole clusters. Flipping items one by one when they are correlated
within a cluster rejects a true null far more often than α (Miller 2024, "Adding error bars to
evals"; tests/test_verdict_stats.py measures it).

:func:`letter_groups` turns "which pairs are separated" into a compact letter display: two arms
share a letter exactly when the tests do not separate them.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from evalsite.stats._inputs import paired_per_item
from evalsite.stats.intervals import IntervalMemo, paired_bootstrap_ci
from evalsite.stats.inversion import inverted_interval, shift_test
from evalsite.stats.paired import SignFlipResult, _differences, sign_flip_test
from evalsite.stats.power import min_detectable_effect
from evalsite.stats.proportions import Interval
from evalsite.stats.ranking import TiedGroups, labelled_groups

Unit = Literal["item", "cluster"]


@dataclass(frozen=True)
class PairedDifference:
    """mean(a − b) over items, with the test and interval on the independent ``unit``.

    ``p_value`` is the two-sided sign-flip p (``kind`` exact or monte-carlo); ``interval`` the
    raw (unadjusted) bootstrap interval of the mean difference; ``mde`` the smallest |Δ| detected
    with power 0.8 at ``mde_alpha`` (:mod:`evalsite.stats.power`, calibrated on this test over
    these units; approximate below ~30 units); ``n_units`` counts items, or clusters when ``unit`` is
    ``cluster``; ``test`` is the sign-flip result over the units (its own ``mean_diff`` is the
    mean unit total, not the mean per item)."""

    mean_diff: float
    interval: Interval
    p_value: float
    kind: str
    unit: Unit
    n_items: int
    n_units: int
    mde: float
    mde_alpha: float
    test: SignFlipResult
    method: str


def paired_difference(
    a: ArrayLike, b: ArrayLike, *, groups: Iterable[Hashable] | None = None, seed: int = 0,
    confidence: float = 0.95, mde_alpha: float = 0.05, n_resamples: int = 9999, memo: IntervalMemo | None = None,
) -> PairedDifference:
    """Paired comparison of a and b (1-D per item, or items × repeats averaged per item).

    ``groups`` gives one cluster label per item; without it each item is its own unit. ``memo``
    keeps the interval (:func:`~evalsite.stats.intervals.bootstrap_ci`)."""
    a_items, b_items = paired_per_item(a, b)
    labels = None if groups is None else list(groups)
    units = unit_totals(_differences(a_items, b_items), labels)  # rounding noise of equal scores is zero
    n_items = a_items.size
    test = sign_flip_test(units, np.zeros_like(units), seed=seed)
    interval = paired_bootstrap_ci(a_items, b_items, confidence=confidence, seed=seed, n_resamples=n_resamples,
                                   groups=labels, memo=memo)
    mde = min_detectable_effect(_per_item_scale(units, n_items), alpha=mde_alpha).effect if units.size >= 2 else math.inf
    unit: Unit = "item" if labels is None else "cluster"
    method = f"two-sided paired sign-flip over {unit}s ({test.method}); {interval.method} bootstrap over {unit}s"
    return PairedDifference(
        mean_diff=float((a_items - b_items).mean()), interval=interval, p_value=test.p_value, kind=test.kind,
        unit=unit, n_items=int(n_items), n_units=int(units.size), mde=float(mde), mde_alpha=mde_alpha, test=test,
        method=method,
    )


def unit_differences(a: ArrayLike, b: ArrayLike, *, groups: Iterable[Hashable] | None = None) -> np.ndarray:
    """One value per unit the test flips: per-item a − b, or each cluster's total scaled by
    (clusters / items), whose mean is the mean per-item difference — the values the power of
    the comparison is computed from (:mod:`evalsite.stats.power`, with n = units)."""
    a_items, b_items = paired_per_item(a, b)
    units = unit_totals(_differences(a_items, b_items), None if groups is None else list(groups))
    return _per_item_scale(units, a_items.size)


def _per_item_scale(units: np.ndarray, n_items: int) -> np.ndarray:
    return np.asarray(units * units.size / n_items)


def inverted_pair_interval(
    a: ArrayLike, b: ArrayLike, level: float, *, zero_accepted: bool, groups: Iterable[Hashable] | None = None,
    seed: int = 0, n_resamples: int = 9999,
) -> Interval:
    """The mean differences a − b the sign-flip test (over the same units as
    :func:`paired_difference`) does not reject at ``level``; whether 0 is accepted is the
    caller's decision (the exact p of :func:`paired_difference` against its level), so the
    interval excludes 0 exactly when that decision rejects (:mod:`evalsite.stats.inversion`)."""
    a_items, b_items = paired_per_item(a, b)
    test = shift_test(_differences(a_items, b_items), None if groups is None else list(groups), seed=seed,
                      n_resamples=n_resamples)
    return inverted_interval(test, level, zero_accepted=zero_accepted)


def unit_totals(diffs: np.ndarray, groups: Sequence[Hashable] | None) -> np.ndarray:
    """Per-item differences (no groups), or their sums per cluster in order of first appearance."""
    if groups is None:
        return np.asarray(diffs, dtype=float)
    if len(groups) != diffs.size:
        raise ValueError(f"groups needs one label per item: {len(groups)} labels for {diffs.size} items")
    index: dict[Hashable, int] = {}
    codes = np.array([index.setdefault(label, len(index)) for label in groups])
    return np.bincount(codes, weights=diffs, minlength=len(index))


def letter_groups(order: Sequence[int], separated: np.ndarray) -> TiedGroups:
    """Maximal cliques of the "not separated" graph (Bron–Kerbosch), labelled a, b, … by the
    position of their best member in ``order``; ``separated`` is a symmetric arms × arms bool."""
    n_arms = len(order)
    position = {arm: place for place, arm in enumerate(order)}
    joined = {arm: {other for other in range(n_arms) if other != arm and not separated[arm, other]} for arm in range(n_arms)}
    cliques: list[tuple[int, ...]] = []
    # Pivoting (Tomita) keeps the search polynomial when many arms tie (without it, n arms none of which
    # is separated took 2^n steps: 30 arms, minutes); a stack, not recursion, as a clique may hold 1,000s.
    stack: list[tuple[set[int], set[int], set[int]]] = [(set(), set(range(n_arms)), set())]
    while stack:
        chosen, candidates, excluded = stack.pop()
        if not candidates and not excluded:
            cliques.append(tuple(sorted(chosen, key=position.__getitem__)))
            continue
        pivot = max(candidates | excluded, key=lambda arm: (len(candidates & joined[arm]), -position[arm]))
        for arm in sorted(candidates - joined[pivot], key=position.__getitem__):
            stack.append((chosen | {arm}, candidates & joined[arm], excluded & joined[arm]))
            candidates = candidates - {arm}
            excluded = excluded | {arm}
    cliques.sort(key=lambda clique: [position[arm] for arm in clique])
    return labelled_groups(order, cliques, n_arms)
