"""Shape and validity checks shared by the statistics modules.

Every public function accepts plain sequences or numpy arrays; these helpers turn them into
float arrays of a known shape and refuse missing values where a method cannot honour them.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def per_item_values(values: ArrayLike, name: str = "values") -> np.ndarray:
    """One value per item: 1-D as given, 2-D items × repeats averaged over the finite repeats."""
    array = np.asarray(values, dtype=float)
    if array.ndim == 1:
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name}: every item needs a finite value (found NaN or inf)")
        return array
    if array.ndim == 2:
        return _mean_over_last_axis(array, name, what="item")
    raise ValueError(f"{name}: expected 1-D (items) or 2-D (items × repeats), got {array.ndim}-D")


def arm_matrix(matrix: ArrayLike, name: str = "matrix") -> np.ndarray:
    """Items × arms: 2-D as given, 3-D items × arms × repeats averaged over finite repeats."""
    array = np.asarray(matrix, dtype=float)
    if array.ndim == 2:
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name}: every (item, arm) cell needs a finite value")
        result = array
    elif array.ndim == 3:
        result = _mean_over_last_axis(array, name, what="(item, arm) cell")
    else:
        raise ValueError(
            f"{name}: expected 2-D (items × arms) or 3-D (items × arms × repeats), "
            f"got {array.ndim}-D"
        )
    if result.shape[0] < 1 or result.shape[1] < 2:
        raise ValueError(f"{name}: need at least 1 item and 2 arms, got shape {result.shape}")
    return result


def repeat_matrix(matrix: ArrayLike, name: str = "matrix") -> np.ndarray:
    """Items × repeats with NaN for a missing repeat; every item needs one finite repeat."""
    array = np.asarray(matrix, dtype=float)
    if array.ndim != 2:
        raise ValueError(f"{name}: expected 2-D (items × repeats), got {array.ndim}-D")
    _require_a_finite_value_per_row(array, name, what="item")
    return array


def paired_per_item(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Per-item values of two arms measured on the same items, in the same item order."""
    a_items = per_item_values(a, "a")
    b_items = per_item_values(b, "b")
    if a_items.shape != b_items.shape:
        raise ValueError(
            f"a and b must hold the same items: "
            f"{a_items.shape[0]} items in a, {b_items.shape[0]} in b"
        )
    return a_items, b_items


def _mean_over_last_axis(array: np.ndarray, name: str, what: str) -> np.ndarray:
    if np.any(np.isinf(array)):
        raise ValueError(f"{name}: infinite values cannot be averaged")
    _require_a_finite_value_per_row(array, name, what)
    return np.asarray(np.nanmean(array, axis=-1))


def _require_a_finite_value_per_row(array: np.ndarray, name: str, what: str) -> None:
    empty = ~np.any(np.isfinite(array), axis=-1)
    if np.any(empty):
        first = tuple(int(i) for i in np.argwhere(empty)[0])
        where = first[0] if len(first) == 1 else first
        raise ValueError(f"{name}: {what} {where} has no finite repeat")
