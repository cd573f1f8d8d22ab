"""Option types the commands share."""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteRange(click.FloatRange):
    """:class:`click.FloatRange` refusing what is not a finite number. Click's range compares NaN
    with nothing, so ``nan`` passes every bound (``--alpha nan`` reached the statistics as a
    traceback), and ``inf`` passes any bound it has no side for."""

    name = "finite float range"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{number!r} is not a finite number", param, ctx)
        return number


#: Any finite number.
FINITE = FiniteRange()
#: A random generator's seed: numpy's generators refuse a negative one.
SEED = click.IntRange(min=0)
#: A level (significance, confidence): a number strictly between 0 and 1.
LEVEL = FiniteRange(0, 1, min_open=True, max_open=True)
#: A number above 0.
POSITIVE = FiniteRange(min=0, min_open=True)
#: A number of at least 0.
NOT_NEGATIVE = FiniteRange(min=0)
