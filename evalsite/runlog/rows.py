"""What the run log contract says about an eval row and a recorded case, shared by every layer
that reads one: whether a row is critical, the order of item ids, what counts as a number."""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any


def is_critical(row: dict[str, Any]) -> bool:
    """A row marked ``metadata.critical: true`` (exactly ``true``) must pass."""
    metadata = row.get("metadata")
    return isinstance(metadata, dict) and metadata.get("critical") is True


def case_critical(case: Mapping[str, Any], dataset_critical: Mapping[str, bool] | None = None) -> bool | None:
    """Whether a recorded case's row is critical: the ``critical`` flag the case recorded (every
    run since the flag exists records it), else the dataset's rows when the caller still has
    the very rows the run scored (``dataset_critical``: item id → :func:`is_critical`), else
    None (unknown)."""
    recorded = case.get("critical")
    if isinstance(recorded, bool):
        return recorded
    if dataset_critical is None:
        return None
    return dataset_critical.get(str(case.get("item_id")), False)


_DIGITS = re.compile(r"(\d+)")


def item_order(item_id: str) -> tuple[str | int | LongNumber, ...]:
    """Natural order of item ids: ``q2`` before ``q10``, ``9`` before ``10``.

    Text and numbers alternate in the key (text at even places, numbers at odd ones), so two
    keys always compare. A digit run longer than ``int()`` reads from text (4,300 digits by
    default) is a :class:`LongNumber`, never an error."""
    split = _DIGITS.split(str(item_id))
    parts: list[str | int | LongNumber] = list(split)
    try:
        parts[1::2] = map(int, split[1::2])  # the digit runs, as numbers
    except ValueError:  # (the slice is assigned only once every run is read)
        parts[1::2] = map(_number, split[1::2])
    return tuple(parts)


@functools.total_ordering
class LongNumber:
    """A digit run of more significant digits than ``int()`` reads from text: larger than any
    number read as an ``int``; two compare as numbers (by length, then digit by digit)."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits  # ASCII, no leading zero

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LongNumber) and self.digits == other.digits

    def __lt__(self, other: object) -> bool:
        if isinstance(other, LongNumber):
            return (len(self.digits), self.digits) < (len(other.digits), other.digits)
        if isinstance(other, int):
            return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.digits)

    def __repr__(self) -> str:
        return f"LongNumber({len(self.digits)} digits)"


def _number(digits: str) -> int | LongNumber:
    """A run of decimal digits (any script's) as a number, an ``int`` while ``int()`` reads it."""
    try:
        return int(digits)
    except ValueError:
        significant = "".join(str(unicodedata.decimal(digit)) for digit in digits).lstrip("0")
        try:
            return int(significant or "0")
        except ValueError:
            return LongNumber(significant)


def case_order(case: Mapping[str, Any]) -> tuple[tuple[str | int | LongNumber, ...], int]:
    """Cases by natural item order, then repeat."""
    return item_order(str(case.get("item_id"))), repeat_of(case)


def repeat_of(case: Mapping[str, Any]) -> int:
    """A case's repeat index (0 when absent or not a whole number)."""
    value = case.get("repeat")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def finite_number(value: Any) -> float | None:
    """A recorded int or float as float when finite; anything else (bool, NaN, text, None) as None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def whole_number(value: Any) -> int | None:
    """A recorded whole number (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
