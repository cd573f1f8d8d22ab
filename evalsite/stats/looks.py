"""Looks at a ``stop_when`` batch: the seeded item order, the blocks, and each pair's confidence
sequence at every look — one function for the runner (which stops on it) and the verdict (which
judges the stopped runs by it), so both read the same numbers from the same cases.

Items are drawn in the order of ``sha256(seed, item_id)``, so any reader can rebuild the order of
the items a run holds from its header's seed alone; when items declare clusters, whole clusters
are drawn (by ``sha256(seed, cluster)``) and a block never splits one. The sequence of a pair is
over units (items, or clusters) in that order, each unit's value the mean over its items of the
per-item difference of the two arms' mean-over-repeats scores (:mod:`evalsite.stats.confseq`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalsite.stats.confseq import confidence_sequence, decide


@dataclass(frozen=True)
class Look:
    """One pair's sequence after a block: ``items`` and ``units`` seen, its interval, and what it decides."""

    items: int
    units: int
    low: float
    high: float
    decision: str | None


def _key(seed: int, text: str) -> bytes:
    return hashlib.sha256(f"{seed}\0{text}".encode()).digest()


def draw_order(item_ids: Sequence[str], seed: int, clusters: Sequence[str] | None = None) -> list[int]:
    """Indices of ``item_ids`` in the seeded order (whole clusters together when ``clusters`` is given)."""
    if clusters is None:
        return sorted(range(len(item_ids)), key=lambda i: _key(seed, item_ids[i]))
    return sorted(range(len(item_ids)), key=lambda i: (_key(seed, "\0cluster\0" + clusters[i]), _key(seed, item_ids[i])))


def block_ends(units: Sequence[str] | None, n_items: int, check_every: int) -> list[int]:
    """How many items (of ``n_items`` in draw order) each look has seen: every ``check_every``
    items, a block extended to the end of its last cluster (``units``: each item's cluster in
    draw order), and the last look at ``n_items``."""
    ends: list[int] = []
    since = 0
    for index in range(n_items):
        since += 1
        cluster_ends = units is None or index + 1 == n_items or units[index + 1] != units[index]
        if since >= check_every and cluster_ends:
            ends.append(index + 1)
            since = 0
    if n_items and (not ends or ends[-1] != n_items):
        ends.append(n_items)
    return ends


def unit_values(item_differences: np.ndarray, units: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray]:
    """Per-unit mean differences in draw order, and how many items precede each unit's end."""
    differences = np.asarray(item_differences, dtype=float)
    if units is None:
        return differences, np.arange(1, differences.size + 1)
    ends = [i + 1 for i in range(len(units)) if i + 1 == len(units) or units[i + 1] != units[i]]
    starts = [0, *ends[:-1]]
    return np.array([differences[s:e].mean() for s, e in zip(starts, ends)]), np.array(ends)


def pair_looks(item_differences: np.ndarray, units: Sequence[str] | None, ends: Sequence[int], *, alpha: float,
               margin: float | None, horizon: int | None = None) -> list[Look]:
    """The pair's sequence at each look (``ends``: items seen), at level 1 − ``alpha`` (already the
    pair's share of the family's α)."""
    values, unit_ends = unit_values(item_differences, units)
    low, high = confidence_sequence(values, alpha=alpha, horizon=horizon)
    looks = []
    for end in ends:
        seen = int(np.searchsorted(unit_ends, end, side="right"))
        if seen == 0:
            continue
        a, b = float(low[seen - 1]), float(high[seen - 1])
        looks.append(Look(int(end), seen, a, b, decide(a, b, margin=margin)))
    return looks
