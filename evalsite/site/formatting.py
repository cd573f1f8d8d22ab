"""Jinja filters that turn numbers into text; one place decides how every number reads."""

from __future__ import annotations

import math
from typing import Any

from evalsite.analysis.wording import p_clause, p_text

DASH = "—"


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def number(value: Any, digits: int = 3) -> str:
    if _missing(value):
        return DASH
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def pvalue(value: Any) -> str:
    """A p-value as every surface prints it (:func:`evalsite.analysis.wording.p_text`): ``0.071``, ``< 0.001``."""
    return DASH if _missing(value) else p_text(value)


def p_is(value: Any) -> str:
    """``p = 0.071`` or ``p < 0.001`` (:func:`evalsite.analysis.wording.p_clause`)."""
    return p_clause(None if _missing(value) else value)


def percent(value: Any, digits: int = 1) -> str:
    return DASH if _missing(value) else f"{value * 100:.{digits}f}%"


def usd(value: Any) -> str:
    """Dollars with enough digits to tell small per-item costs apart; unknown is never $0."""
    if _missing(value):
        return "unknown"
    if value == 0:
        return "$0"
    digits = 2 if abs(value) >= 1 else min(8, 2 + max(0, -math.floor(math.log10(abs(value)))))
    return f"${value:.{digits}f}"


def milliseconds(value: Any) -> str:
    if _missing(value):
        return DASH
    return f"{value / 1000:.2f} s" if value >= 10_000 else f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def when(value: Any) -> str:
    """An ISO timestamp as ``2026-05-01 12:34 UTC`` (the time the input recorded, not the build's)."""
    if not value:
        return DASH
    text = str(value)
    if len(text) >= 16 and text[10] == "T":
        return f"{text[:10]} {text[11:16]} UTC" if text.endswith("Z") else f"{text[:10]} {text[11:16]}"
    return text


def sort_key(value: Any) -> str:
    """The ``data-sort`` attribute of a cell: numbers sort numerically, missing values last."""
    if _missing(value):
        return ""
    if isinstance(value, bool):
        return str(int(value))
    return repr(float(value)) if isinstance(value, (int, float)) else str(value)


FILTERS = {
    "number": number,
    "percent": percent,
    "pvalue": pvalue,
    "p_is": p_is,
    "usd": usd,
    "ms": milliseconds,
    "when": when,
    "sort_key": sort_key,
}
