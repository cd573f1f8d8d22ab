"""What the run log contract says about an eval row and a recorded case, shared by every layer
that reads one: whether a row is critical, the order of item ids, what counts as a number."""

from __future__ import annotations

import math
import re
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


def item_order(item_id: str) -> tuple[str | int, ...]:
    """Natural order of item ids: ``q2`` before ``q10``, ``9`` before ``10``.

    Text and numbers alternate in the key (text at even places, numbers at odd ones), so two
    keys always compare."""
    parts: list[str | int] = list(_DIGITS.split(str(item_id)))
    parts[1::2] = map(int, parts[1::2])  # the digit runs, as numbers
    return tuple(parts)


def case_order(case: Mapping[str, Any]) -> tuple[tuple[str | int, ...], int]:
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
