"""The interval record every interval function returns, and the Wilson interval of a proportion.

Kept apart from the bootstrap (``intervals``) and free of scipy: a run's summary (flakiness over
repeats) needs only this, and the runner writes that summary without loading scipy.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from statistics import NormalDist


@dataclass(frozen=True)
class Interval:
    """A confidence interval that reads like the pair (low, high): it unpacks, indexes and
    converts (``low, high = ci``, ``ci[0]``, ``tuple(ci)``), and ``method`` says how it was
    obtained, including the fallbacks for degenerate data.
    """

    low: float
    high: float
    confidence: float
    method: str

    def __iter__(self) -> Iterator[float]:
        return iter((self.low, self.high))

    def __getitem__(self, index: int) -> float:
        return (self.low, self.high)[index]

    def __len__(self) -> int:
        return 2


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion; (nan, nan) when n is 0."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return Interval(math.nan, math.nan, confidence, "wilson score")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    rate = successes / n
    shrink = 1 + z * z / n
    center = (rate + z * z / (2 * n)) / shrink
    half_width = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / shrink
    low = 0.0 if successes == 0 else center - half_width  # exact bounds, free of rounding
    high = 1.0 if successes == n else center + half_width
    return Interval(low, high, confidence, "wilson score")
