"""How small a difference a paired comparison can detect, and how many items a target needs.

Normal approximation for a two-sided paired test at level alpha: an effect delta (mean of the
per-item differences) is detected with probability ``power`` when
    delta >= (z_{1 - alpha/2} + z_{power}) × sd / sqrt(n),
sd the standard deviation of the per-item differences. It ignores the t correction (it is
optimistic below ~30 items) and the discreteness of the sign-flip test, except for one hard
floor: with n non-zero differences the smallest two-sided sign-flip p-value is 2 / 2^n, so no
effect is detectable with fewer items than ``min_items_for_alpha(alpha)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats

from evalsite.stats._inputs import per_item_values


@dataclass(frozen=True)
class PowerAnalysis:
    """An effect size and a number of items that go together at ``alpha`` and ``power``."""

    effect: float
    n: int
    sd: float
    alpha: float
    power: float
    min_items_for_alpha: int
    method: str = "normal approximation, two-sided paired test"


def min_items_for_alpha(alpha: float) -> int:
    """Fewest items with which a two-sided sign-flip test can reach p <= alpha at all."""
    _check_level("alpha", alpha)
    n = 1
    while 2.0 / 2.0**n > alpha:
        n += 1
    return n


def min_detectable_effect(
    diffs: ArrayLike, *, alpha: float = 0.05, power: float = 0.8
) -> PowerAnalysis:
    """Smallest mean difference detectable with these per-item differences' spread and count.

    ``diffs`` are per-item differences a - b (2-D items × repeats is averaged per item first).
    The effect is infinite when there are fewer items than ``min_items_for_alpha(alpha)``.
    """
    _check_level("alpha", alpha)
    _check_level("power", power)
    values = per_item_values(diffs, "diffs")
    if values.size < 2:
        raise ValueError("diffs: need at least 2 items to estimate their spread")
    sd = float(np.std(values, ddof=1))
    floor = min_items_for_alpha(alpha)
    effect = math.inf if values.size < floor else _z_sum(alpha, power) * sd / math.sqrt(values.size)
    return PowerAnalysis(effect, int(values.size), sd, alpha, power, floor)


def required_n(
    diffs_or_sd: ArrayLike | float, effect: float, *, alpha: float = 0.05, power: float = 0.8
) -> PowerAnalysis:
    """Items needed to detect a mean difference ``effect`` (its sign is ignored).

    ``diffs_or_sd`` is either pilot per-item differences (their ddof=1 std is used) or the
    standard deviation itself. The answer is never below ``min_items_for_alpha(alpha)``.
    """
    _check_level("alpha", alpha)
    _check_level("power", power)
    if not math.isfinite(effect) or effect == 0:
        raise ValueError(f"effect must be a finite non-zero difference, got {effect}")
    sd = _spread(diffs_or_sd)
    floor = min_items_for_alpha(alpha)
    exact = (_z_sum(alpha, power) * sd / abs(effect)) ** 2
    n = max(floor, math.ceil(exact - 1e-9))  # 1e-9: 31.000000000001 items means 31
    return PowerAnalysis(float(abs(effect)), n, sd, alpha, power, floor)


def _spread(diffs_or_sd: ArrayLike | float) -> float:
    array = np.asarray(diffs_or_sd, dtype=float)
    if array.ndim == 0:
        if not math.isfinite(float(array)) or float(array) < 0:
            raise ValueError(f"sd must be a finite number >= 0, got {float(array)}")
        return float(array)
    values = per_item_values(array, "diffs")
    if values.size < 2:
        raise ValueError("diffs: need at least 2 items to estimate their spread")
    return float(np.std(values, ddof=1))


def _z_sum(alpha: float, power: float) -> float:
    return float(scipy_stats.norm.ppf(1 - alpha / 2) + scipy_stats.norm.ppf(power))


def _check_level(name: str, value: float) -> None:
    if not 0 < value < 1:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value}")
