"""Plain descriptive summaries that the reports quote (latency and cost percentiles)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike


def nearest_rank_percentile(values: ArrayLike, p: float) -> float:
    """The p-th percentile by the nearest-rank definition: an observed value, never interpolated.

    Sorting n values ascending, the answer is the one at rank ceil(p / 100 × n) (1-based), and
    the smallest value for p = 0. ``p`` is read as the decimal it prints as, so p=99.9 with
    n=1000 is rank 999, not 1000 from the binary rounding of 99.9.
    """
    array = np.asarray(values, dtype=float).ravel()
    if array.size == 0:
        raise ValueError("nearest_rank_percentile needs at least one value")
    if not np.all(np.isfinite(array)):
        raise ValueError("nearest_rank_percentile: values must be finite")
    if not 0 <= p <= 100:
        raise ValueError(f"p must lie between 0 and 100, got {p}")
    rank = max(1, math.ceil(Fraction(str(p)) * array.size / 100))
    return float(np.sort(array)[rank - 1])
