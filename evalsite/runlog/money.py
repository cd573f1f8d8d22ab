"""Dollar amounts as people read them: significant digits, never float noise."""

from __future__ import annotations

import math


def format_usd(value: float | None, digits: int = 3) -> str:
    """``$0.0027`` for 0.0027000000000000053, ``$12.3`` for 12.3456, ``$0.00000683`` for
    6.83e-06 (never exponent notation), ``$1,235`` for 1234.5, ``$0`` for 0; "unknown" for None."""
    if value is None or not math.isfinite(value):
        return "unknown"
    if value == 0:
        return "$0"
    if abs(value) >= 10 ** digits:
        return f"${value:,.0f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    shown = f"{value:.{decimals}f}"
    return "$" + (shown.rstrip("0").rstrip(".") if "." in shown else shown)
