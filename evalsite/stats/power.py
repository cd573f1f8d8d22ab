"""How small a difference the paired sign-flip test can detect, and how many units a target needs.

The one answer, calibrated on the test the verdict really runs (checked by seeded simulation in
tests/test_power_calibration.py: 80% ± 3 points on pass/fail and continuous data, with and without
clusters). Two things make the textbook formula (z_{1−α/2} + z_power) × sd / √n wrong for it:

* the sign-flip test compares T = Σ d with √(Σ d²), the spread *including* the effect, which on
  pass/fail data (McNemar's situation) costs about 5 points of power at 80 items;
* its p-value is discrete: on a grid (pass/fail, a few repeats) T moves in whole steps.

So the alternative is modelled the way the test sees data: the units' observed magnitudes |d| with
signs tilted towards one arm (an exponential tilt, P(+a) ∝ e^{θa}; for normal differences this is
exactly a shift of the mean). For each tilt the power of "|T| − h ≥ t_{1−α/2, n−1} √(Σ d²)" is a normal
approximation of the ratio T / √(Σ d²) (delta method on the tilted moments), h half a grid unit when
the differences lie on one (a continuity correction; 0 otherwise). The detectable effect is the mean
difference of the tilt with 80% power; the units needed for an effect are the fewest with 80% power
at the tilt of that mean. With n non-zero differences the smallest two-sided sign-flip p-value is
2 / 2^n, so nothing is detectable below ``min_items_for_alpha(alpha)`` units.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from evalsite.stats._inputs import per_item_values
from evalsite.stats.distributions import norm_cdf, norm_ppf, t_ppf

METHOD = "sign-flip power: tilted signs of the observed magnitudes, delta-method normal approximation"
_BISECTIONS = 100
_MAX_DENOMINATOR = 60
_MAX_UNITS = 10**9


@dataclass(frozen=True)
class PowerAnalysis:
    """An effect size and a number of units that go together at ``alpha`` and ``power``.

    ``n`` counts the test's units (items, or clusters when the pair flips clusters); ``sd`` is
    the spread of the per-unit differences the answer was computed from."""

    effect: float
    n: int
    sd: float
    alpha: float
    power: float
    min_items_for_alpha: int
    method: str = METHOD


def min_items_for_alpha(alpha: float) -> int:
    """Fewest items with which a two-sided sign-flip test can reach p <= alpha at all."""
    _check_level("alpha", alpha)
    n = 1
    while 2.0 / 2.0**n > alpha:
        n += 1
    return n


def min_detectable_effect(diffs: ArrayLike, *, alpha: float = 0.05, power: float = 0.8) -> PowerAnalysis:
    """Smallest mean difference found with probability ``power`` with this many units like these.

    ``diffs`` are per-unit differences a - b (2-D units × repeats is averaged per unit first).
    The effect is infinite below ``min_items_for_alpha(alpha)`` units or when no tilt of these
    magnitudes reaches ``power``."""
    _check_level("alpha", alpha)
    _check_level("power", power)
    values = _at_least_two(per_item_values(diffs, "diffs"))
    model = _Tilts.of(values)
    floor = min_items_for_alpha(alpha)
    n = int(values.size)
    if n < floor or model.magnitudes.max() == 0 or model.power(math.inf, n, alpha) < power:
        return PowerAnalysis(math.inf, n, model.sd, alpha, power, floor)
    low, high = 0.0, 1.0 / model.scale
    while model.power(high, n, alpha) < power:
        low, high = high, 2 * high
    high = _bisect(lambda tilt: model.power(tilt, n, alpha) < power, low, high)
    return PowerAnalysis(model.mean(high), n, model.sd, alpha, power, floor)


def required_n(
    diffs_or_sd: ArrayLike | float, effect: float, *, alpha: float = 0.05, power: float = 0.8
) -> PowerAnalysis:
    """Units needed to detect a mean difference ``effect`` (its sign is ignored) with ``power``.

    ``diffs_or_sd`` is either pilot per-unit differences (their magnitudes are tilted to mean
    ``effect``) or a standard deviation (normal differences of that spread, shifted to ``effect``).
    Raises ValueError for an effect no tilt of the pilot's magnitudes reaches (|effect| at least
    the largest |difference| seen). The answer is never below ``min_items_for_alpha(alpha)``."""
    _check_level("alpha", alpha)
    _check_level("power", power)
    if not math.isfinite(effect) or effect == 0:
        raise ValueError(f"effect must be a finite non-zero difference, got {effect}")
    model = _model(diffs_or_sd)
    target = abs(effect)
    if target >= model.magnitudes.max():
        raise ValueError(f"effect {target:g} is not below the largest difference seen ({model.magnitudes.max():g})")
    tilt = model.tilt_for_mean(target)
    floor = min_items_for_alpha(alpha)
    low, high = floor - 1, floor
    while model.power(tilt, high, alpha) < power:
        if high > _MAX_UNITS:
            raise ValueError(f"effect {target:g} needs more than {_MAX_UNITS:,} units")
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if model.power(tilt, middle, alpha) < power else (low, middle)
    return PowerAnalysis(float(target), int(high), model.sd, alpha, power, floor)


@dataclass(frozen=True)
class _Tilts:
    """The signs of ``magnitudes`` tilted by θ: P(+a) ∝ e^{θa}, P(−a) ∝ e^{−θa} (equal weights
    per observed magnitude); ``half_unit`` the continuity correction of T. The magnitudes are kept
    as their distinct values with ``counts`` (pass/fail data has a handful), so each of the many
    powers a bisection asks for costs that handful, not one term per unit."""

    magnitudes: np.ndarray
    counts: np.ndarray
    sd: float
    half_unit: float

    @classmethod
    def of(cls, values: np.ndarray) -> _Tilts:
        return cls.of_magnitudes(np.abs(values), float(np.std(values, ddof=1)), _grid_unit(values) / 2)

    @classmethod
    def of_magnitudes(cls, magnitudes: np.ndarray, sd: float, half_unit: float) -> _Tilts:
        distinct, counts = np.unique(magnitudes, return_counts=True)
        return cls(distinct, counts.astype(float), sd, half_unit)

    @property
    def scale(self) -> float:
        return float(self.magnitudes.max())

    def _weights(self, tilt: float) -> tuple[np.ndarray, np.ndarray]:
        if math.isinf(tilt):  # every sign positive
            return self.counts / self.counts.sum(), np.zeros(self.magnitudes.size)
        top = tilt * self.magnitudes.max()
        plus = self.counts * np.exp(tilt * self.magnitudes - top)
        minus = self.counts * np.exp(-tilt * self.magnitudes - top)
        total = float((plus + minus).sum())
        return plus / total, minus / total

    def moments(self, tilt: float) -> tuple[float, float, float, float]:
        plus, minus = self._weights(tilt)
        a = self.magnitudes
        m1, m2, m3, m4 = (float((plus * a**k + minus * (-a) ** k).sum()) for k in (1, 2, 3, 4))
        return m1, m2, m3, m4

    def mean(self, tilt: float) -> float:
        return self.moments(tilt)[0]

    def power(self, tilt: float, n: int, alpha: float) -> float:
        """P(|T| − h ≥ z √Q) for n units drawn from the tilted signs (T's upper side)."""
        m1, m2, m3, m4 = self.moments(tilt)
        if m2 <= 0:
            return 0.0
        gx, gy = 1 / math.sqrt(m2), -m1 / (2 * m2**1.5)  # gradient of x / √y at (m1, m2)
        variance = gx * gx * (m2 - m1 * m1) + 2 * gx * gy * (m3 - m1 * m2) + gy * gy * (m4 - m2 * m2)
        centre = (n * m1 - self.half_unit) / math.sqrt(n * m2) - t_ppf(1 - alpha / 2, max(1, n - 1))
        if variance <= 1e-12:
            return 1.0 if centre >= 0 else 0.0
        return float(norm_cdf(centre / math.sqrt(variance)))

    def tilt_for_mean(self, target: float) -> float:
        low, high = 0.0, 1.0 / self.scale
        while self.mean(high) < target:
            low, high = high, 2 * high
        return _bisect(lambda tilt: self.mean(tilt) < target, low, high)


def _bisect(below: Callable[[float], bool], low: float, high: float) -> float:
    """The least ``high`` found in :data:`_BISECTIONS` halvings with ``below(high)`` false, from a
    ``low`` where it is true. Stops once the two ends are neighbouring floats: a midpoint equal to
    either end leaves both unchanged (``below`` is true at ``low``, false at ``high``), so the
    remaining halvings could not move them."""
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        low, high = (middle, high) if below(middle) else (low, middle)
    return high


def _model(diffs_or_sd: ArrayLike | float) -> _Tilts:
    array = np.asarray(diffs_or_sd, dtype=float)
    if array.ndim == 0:
        sd = float(array)
        if not math.isfinite(sd) or sd <= 0:
            raise ValueError(f"sd must be a finite number > 0, got {sd}")
        # normal differences of spread sd, by their quantiles: a tilt of N(0, sd²) is a shift of its mean
        quantiles = norm_ppf((np.arange(4000) + 0.5) / 4000) * sd
        return _Tilts.of_magnitudes(np.abs(quantiles), sd, 0.0)
    return _Tilts.of(_at_least_two(per_item_values(array, "diffs")))


def _at_least_two(values: np.ndarray) -> np.ndarray:
    if values.size < 2:
        raise ValueError("diffs: need at least 2 units to estimate their spread")
    return values


def _grid_unit(values: np.ndarray) -> float:
    """The common unit of the non-zero differences when they lie on a coarse grid (pass/fail,
    means over a few repeats), else 0: the step the continuity correction halves."""
    nonzero = np.abs(values[values != 0])
    if nonzero.size == 0:
        return 0.0
    scale = float(nonzero.max())
    fractions = [Fraction(float(v) / scale).limit_denominator(_MAX_DENOMINATOR) for v in np.unique(nonzero)]
    if any(abs(float(f) * scale - v) > 1e-9 * scale for f, v in zip(fractions, np.unique(nonzero))):
        return 0.0
    denominator = math.lcm(*(f.denominator for f in fractions))
    numerators = [f.numerator * (denominator // f.denominator) for f in fractions]
    return scale * math.gcd(*numerators) / denominator


def _check_level(name: str, value: float) -> None:
    if not 0 < value < 1:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value}")
