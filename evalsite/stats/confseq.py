"""Anytime-valid confidence sequences for the mean of a bounded paired difference (``stop_when``).

A confidence sequence (CS) is a sequence of intervals C_1, C_2, … such that, with probability at
least 1 − α, *every* interval holds the true mean at once. So the intervals may be looked at after
every item and the run stopped whenever it looks decided, by any rule, without the inflation of
false positives a fixed-n p-value suffers under peeking.

The method is the predictable plug-in empirical-Bernstein CS of Waudby-Smith & Ramdas (2023,
JRSS-B, "Estimating means of bounded random variables by betting", Theorem 2), on values rescaled
to [0, 1]: with bets λ_i chosen from the items before i only (predictable),

    centre_t = Σ λ_i x_i / Σ λ_i,   radius_t = (log(2/α) + Σ v_i ψ_E(λ_i)) / Σ λ_i,
    v_i = 4 (x_i − μ̂_{i−1})²,       ψ_E(λ) = (−log(1 − λ) − λ) / 4,

where μ̂ and σ̂² are the paper's regularised running mean and variance. Any predictable λ in
[0, 1) gives a valid CS; the paper's default λ_t = √(2 log(2/α) / (σ̂²_{t−1} t log(1 + t))) ∧ c
spreads the tightness over all t, and the fixed-horizon variant, t log(1 + t) replaced by
max(t, ``horizon``) (``horizon`` the planned number of units, fixed before any data), makes the CS
tightest near that horizon — still valid at every t, before and after it. It is closed form, O(n)
and deterministic. (The running intersection can only be empty on the event, of probability at
most α, that the sequence has missed the mean.)
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike

METHOD = "predictable plug-in empirical-Bernstein confidence sequence (Waudby-Smith & Ramdas 2023)"
#: Largest bet: λ ≤ 1/2 keeps ψ_E small (the paper suggests 1/2 or 3/4).
BET_CAP = 0.5


def confidence_sequence(
    values: ArrayLike, *, alpha: float, lower: float = -1.0, upper: float = 1.0, horizon: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Running (low, high) after each of the first t values, t = 1..n: with probability >= 1 - alpha
    every interval of the sequence holds the true mean at once (valid at every look, any stopping rule).
    The running intersection is taken, so low is non-decreasing and high non-increasing.

    ``values`` are independent draws (in the order they arrived) of a quantity in [lower, upper]
    with a common mean; a 2-D array holds one such sequence per row (the result has its shape).
    ``horizon``, fixed before the data is seen (never from it), is the number of
    values at which the sequence should be tightest; None spreads its tightness over every t."""
    x = _unit_values(values, lower, upper)
    _check_alpha(alpha)
    if horizon is not None and (isinstance(horizon, bool) or not isinstance(horizon, numbers.Integral) or horizon < 1):
        raise ValueError(f"horizon must be a whole number >= 1, got {horizon!r}")
    if x.shape[-1] == 0:
        return np.empty(x.shape), np.empty(x.shape)
    low, high = _eb_bounds(x, alpha, horizon)
    span = upper - lower
    return lower + span * np.maximum.accumulate(low, axis=-1), lower + span * np.minimum.accumulate(high, axis=-1)


def decide(low: float, high: float, *, margin: float | None) -> str | None:
    """'separated' when the interval excludes 0, 'equivalent' when margin is given and it lies inside
    (-margin, margin), else None. An interval that does both (a real difference smaller than the
    margin) is 'separated': that the arms differ is the stronger statement."""
    separated, equivalent = decisions(np.asarray(low), np.asarray(high), margin=margin)
    return "separated" if separated else "equivalent" if equivalent else None


def decisions(low: np.ndarray, high: np.ndarray, *, margin: float | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`decide` over arrays of intervals: boolean arrays (separated, equivalent), never both."""
    if margin is not None and not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a finite number > 0, got {margin}")
    separated = (low > 0) | (high < 0)
    inside = (low > -margin) & (high < margin) if margin is not None else np.zeros_like(separated)
    return separated, inside & ~separated


def family_alpha(alpha: float, pairs: int) -> float:
    """The alpha each of ``pairs`` confidence sequences gets so that, with probability >= 1 - alpha,
    every pair's sequence holds its true difference at every look at once: Bonferroni, alpha / pairs.

    The union bound needs no assumption about how the pairs depend on one another (they share items
    and arms) nor about the stopping rule, and each sequence is already valid at every look, so no
    closed or step-down procedure (Holm over CSs) is needed for validity; one could only buy a
    little power with it."""
    _check_alpha(alpha)
    if isinstance(pairs, bool) or not isinstance(pairs, numbers.Integral) or pairs < 1:
        raise ValueError(f"pairs must be a whole number >= 1, got {pairs!r}")
    return float(alpha / pairs)


def _eb_bounds(x: np.ndarray, alpha: float, horizon: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The unintersected PrPl-EB bounds on [0, 1] after each of the n values."""
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    means = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)  # μ̂_t, t = 1..n
    previous_means = _shifted(means, 0.5)  # μ̂_{t−1}
    variances = (0.25 + np.cumsum((x - means) ** 2, axis=-1)) / (t + 1)  # σ̂²_t
    previous_variances = _shifted(variances, 0.25)
    log_term = math.log(2 / alpha)
    spread = t * np.log1p(t) if horizon is None else np.maximum(t, float(horizon))
    bets = np.minimum(np.sqrt(2 * log_term / (previous_variances * spread)), BET_CAP)
    v = 4 * (x - previous_means) ** 2
    psi = (-np.log1p(-bets) - bets) / 4
    weight = np.cumsum(bets, axis=-1)
    centre = np.cumsum(bets * x, axis=-1) / weight
    radius = (log_term + np.cumsum(v * psi, axis=-1)) / weight
    return np.maximum(centre - radius, 0.0), np.minimum(centre + radius, 1.0)


def _shifted(running: np.ndarray, start: float) -> np.ndarray:
    """The running estimate before each value: ``start``, then running[..., :-1]."""
    first = np.full(running.shape[:-1] + (1,), start)
    return np.concatenate((first, running[..., :-1]), axis=-1)


def _unit_values(values: ArrayLike, lower: float, upper: float) -> np.ndarray:
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        raise ValueError(f"lower and upper must be finite with lower < upper, got [{lower}, {upper}]")
    array = np.asarray(values, dtype=float)
    if array.ndim not in (1, 2):
        raise ValueError(f"values: expected 1-D (one value per item, in arrival order) or 2-D, got {array.ndim}-D")
    bad = ~np.isfinite(array) | (array < lower) | (array > upper)
    if np.any(bad):
        first = np.unravel_index(int(np.argmax(bad)), array.shape)
        where = ", ".join(str(int(i)) for i in first)
        raise ValueError(
            f"values: {int(bad.sum())} outside [{lower:g}, {upper:g}] or not finite "
            f"(first: value [{where}] = {array[first]:g})"
        )
    return (array - lower) / (upper - lower)


def _check_alpha(alpha: float) -> None:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
