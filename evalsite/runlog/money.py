"""Dollar amounts as people read them: significant digits, never float noise."""

from __future__ import annotations

import math


def format_usd(value: float | None, digits: int = 3) -> str:
    """``$0.0027`` for 0.0027000000000000053, ``$12.3`` for 12.3456, ``$0`` for 0; "unknown" for None."""
    if value is None or not math.isfinite(value):
        return "unknown"
    if value == 0:
        return "$0"
    return f"${value:.{digits}g}" if abs(value) < 10 ** digits else f"${value:,.0f}"
