"""The regression report's items as columns: one row per compared item, no Python object per item.

A report over 100,000 items holds its per-item figures as arrays (:class:`ItemChanges`): item id,
baseline and current score, Δ, classification, whether the baseline side was re-scored, and why a
``gt_changed`` item could not be. Consumers select rows by classification, order them by the size
of their change, and build one Python value per item only for what they print or write
(:meth:`ItemChanges.records` for ``--json``, iteration as :class:`ItemChange` rows for a listing).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

IMPROVED, REGRESSED, UNCHANGED, GT_CHANGED, UNSCORED = "improved", "regressed", "unchanged", "gt_changed", "unscored"
#: A row's classification is its index in this tuple (``ItemChanges.code``).
CLASSIFICATIONS = (IMPROVED, REGRESSED, UNCHANGED, GT_CHANGED, UNSCORED)
_NAMES = np.array(CLASSIFICATIONS, dtype=object)


@dataclass(frozen=True)
class ItemChange:
    """One item in both runs. ``rescored``: the baseline side was re-scored against the current
    expected value; ``note`` says why a ``gt_changed`` item could not be (its delta is for reference only)."""

    item_id: str
    baseline_score: float | None
    current_score: float | None
    delta: float | None
    classification: str
    rescored: bool = False
    note: str | None = None


@dataclass(frozen=True, eq=False)
class ItemChanges:
    """:class:`ItemChange` rows as columns of equal length: ``item_id`` and ``note`` object arrays
    (a note is None but for a ``gt_changed`` item that could not be re-scored), the scores and Δ
    float arrays (NaN: no value), ``code`` the classifications (indices into
    :data:`CLASSIFICATIONS`), ``rescored`` booleans."""

    item_id: np.ndarray
    baseline_score: np.ndarray
    current_score: np.ndarray
    delta: np.ndarray
    code: np.ndarray
    rescored: np.ndarray
    note: np.ndarray

    def __len__(self) -> int:
        return int(self.item_id.size)

    def __iter__(self) -> Iterator[ItemChange]:
        """The rows as :class:`ItemChange` values (for a listing that prints each)."""
        return map(ItemChange, *self.columns())

    def take(self, rows: np.ndarray | slice) -> ItemChanges:
        """The rows at these positions (or where this mask is true), in that order."""
        return ItemChanges(*(getattr(self, part.name)[rows] for part in fields(self)))

    def of(self, *classifications: str) -> ItemChanges:
        """The rows of these classifications, in their order here."""
        return self.take(np.isin(self.code, [CLASSIFICATIONS.index(name) for name in classifications]))

    def largest_first(self) -> ItemChanges:
        """The rows by the size of their change, largest first; rows of equal size (or no Δ, taken
        as 0) keep their order here."""
        return self.take(np.argsort(-np.abs(np.nan_to_num(self.delta, nan=0.0)), kind="stable"))

    def largest(self, limit: int) -> ItemChanges:
        """The ``limit`` rows of largest change, largest first, item ids in text order among equal
        sizes (the rows of Δ at least the ``limit``-th largest are the only ones sorted)."""
        size = np.abs(self.delta)
        rows = np.arange(size.size)
        if 0 < limit < size.size:
            rows = np.flatnonzero(size >= np.partition(size, size.size - limit)[size.size - limit])
        sizes, ids = size.tolist(), self.item_id
        return self.take(np.array(sorted(rows.tolist(), key=lambda row: (-sizes[row], ids[row]))[:limit], dtype=np.int64))

    @property
    def classification(self) -> list[str]:
        """Each row's classification by name."""
        names: list[str] = _NAMES[self.code].tolist()
        return names

    def item_ids(self) -> list[str]:
        ids: list[str] = self.item_id.tolist()
        return ids

    def records(self) -> list[dict[str, Any]]:
        """The rows as plain JSON data, one dict per row with :class:`ItemChange`'s fields in order
        (None for a missing score or Δ): what ``evalsite compare --json`` lists."""
        return [{"item_id": i, "baseline_score": b, "current_score": c, "delta": d, "classification": k, "rescored": r,
                 "note": n} for i, b, c, d, k, r, n in zip(*self.columns())]

    def columns(self) -> tuple[list[Any], ...]:
        """The columns as lists of Python values, in :class:`ItemChange`'s field order."""
        return (self.item_ids(), known(self.baseline_score), known(self.current_score), known(self.delta),
                self.classification, self.rescored.tolist(), self.note.tolist())


def item_changes(ids: np.ndarray, baseline: np.ndarray, current: np.ndarray, delta: np.ndarray, code: np.ndarray,
                 rescored: np.ndarray, notes: list[str | None] | None = None) -> ItemChanges:
    """The columns of these rows (``ids`` an object array); no note unless ``notes`` gives one a row."""
    note = np.full(ids.size, None, dtype=object)
    if notes is not None:
        note[:] = notes
    return ItemChanges(ids, baseline, current, delta, code.astype(np.int8), rescored.astype(bool), note)


def concatenated(parts: list[ItemChanges], order: np.ndarray) -> ItemChanges:
    """The rows of ``parts`` one after another, then taken in ``order``."""
    joined = ItemChanges(*(np.concatenate([getattr(part, name.name) for part in parts]) for name in fields(ItemChanges)))
    return joined.take(order)


def known(values: np.ndarray) -> list[float | None]:
    """The values as Python floats, None for NaN."""
    return [None if value != value else value for value in values.tolist()]
