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


def signed(value: float) -> str:
    """``+0.08``, ``-0.004`` (three significant digits below 0.01): a difference as every verdict prints it."""
    return f"{value:+.3g}" if abs(value) < 0.01 and value != 0 else f"{value:+.2f}"


def bounds_text(low: float, high: float) -> str:
    """``[0.03, 0.13]``; ``[undefined]`` for an interval with no bounds."""
    if math.isnan(low):
        return "[undefined]"
    digits = 3 if max(abs(low), abs(high)) < 0.01 else 2
    return f"[{_bound(low, digits)}, {_bound(high, digits)}]"


def _bound(value: float, digits: int) -> str:
    """A bound to ``digits`` decimals, or to two significant digits when those would print a
    non-zero bound as 0 (a bound just above 0 is what says "separated")."""
    text = f"{value:.{digits}f}"
    return f"{value:.2g}" if value != 0 and math.isfinite(value) and float(text) == 0 else text


def sequence_phrase(*, used: int, planned: int | None, alpha: float, ahead: str, behind: str, difference: float,
                    low: float, high: float, decision: str | None, margin: float | None, half_width: float) -> str:
    """How a pair of a ``stop_when`` batch reads on every surface:
    ``decided after 240 of 1,000 items (anytime-valid, α 0.05): A > B by +0.08 [0.03, 0.13]``,
    ``… A ≈ B within ±0.02: +0.00 [-0.01, 0.01]``, or for a budget stop
    ``not decided after 1,000 of 1,000 items (…): A vs B +0.01 [-0.04, 0.06]; could still detect |Δ| ≥ 0.05``."""
    if decision == "separated" and difference < 0:  # said the way round that reads as a win
        ahead, behind, difference, low, high = behind, ahead, -difference, -high, -low
    of = f" of {planned:,}" if planned is not None else ""
    head = f"after {used:,}{of} items (anytime-valid, α {alpha:g})"
    shown = f"{signed(difference)} {bounds_text(low, high)}"
    if decision == "separated":
        return f"decided {head}: {ahead} > {behind} by {shown}"
    if decision == "equivalent":
        return f"decided {head}: {ahead} ≈ {behind} within ±{margin:g}: {shown}"
    return f"not decided {head}: {ahead} vs {behind} {shown}; could still detect |Δ| ≥ {half_width:.2g}"
