"""How a p-value and a count read, one way on every surface: CLI text, markdown and CI summaries,
and the site (its ``pvalue`` and ``p_clause`` Jinja filters call these).

A p-value below 0.001 prints as ``< 0.001``: a Monte Carlo p is never exactly 0 and an exact
one as small as 1e-11 says no more than "far below any α" at the precision the tests give, so
neither ``0.000`` nor ``0`` nor ``7.7e-11`` is ever printed. The raw number stays in every
``--json`` output and JSON download.
"""

from __future__ import annotations

import math

P_FLOOR = 0.001
MISSING = "—"


def p_text(value: float | None) -> str:
    """``0.071``, ``1.000``, ``< 0.001``; ``—`` when there is no p-value (None or NaN)."""
    if value is None or math.isnan(value):
        return MISSING
    return f"< {P_FLOOR:g}" if value < P_FLOOR else f"{value:.3f}"


def p_clause(value: float | None, name: str = "p") -> str:
    """``p = 0.071`` or ``p < 0.001`` (``name`` replaces ``p``, e.g. ``Holm p``)."""
    text = p_text(value)
    return f"{name} {text}" if text.startswith("<") else f"{name} = {text}"


def is_p_column(name: str) -> bool:
    """A table column that holds p-values (``p``, ``p_value``, ``holm_p``, ``Holm p``…): its cells print
    by :func:`p_text` in text and markdown tables, never as ``0.000``."""
    return name in ("p", "holm_p", "noise_p") or name.endswith(("p_value", " p"))


def count_of(n: int, singular: str, plural: str | None = None) -> str:
    """``1 pair``, ``3 pairs``: a count with its noun in the right number."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"
