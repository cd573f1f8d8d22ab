"""The experiment matrix's rows as data scripts (``data/experiments/<name>/matrix-<n>.js``).

A row is ``[item id, anchor or null, bucket, outputs, cells]`` (``outputs``: its distinct outputs over
every repeat of every arm, :attr:`~evalsite.analysis.matrix.MatrixMarks.outputs`); a cell is ``[score, passed, tint,
flags, latency, tokens, cost]``, or null where the arm lacks the item (``static/matrix.js`` draws
them). All of a cell but its flags depends on its run alone, so each run's cells are written as
JSON text once (:func:`matrix_part`, kept in the site cache beside the run's
:class:`~evalsite.analysis.matrix.RunColumn`), and a build joins them with the flags its rows'
marks give (:func:`matrix_scripts`): the bytes ``json.dumps`` of the rows would give, without a
Python object per cell.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from json.encoder import encode_basestring

import numpy as np

from evalsite.analysis.matrix import MatrixMarks, RunColumn
from evalsite.site import paths
from evalsite.site.casedata import json_script

#: Matrix rows per data script.
MATRIX_PART_ROWS = 2000
#: A cell's flags in the matrix data (bits), and its tint's index.
OUTLIER, BEST, FASTEST, CHEAPEST, FEWEST_TOKENS = 1, 2, 4, 8, 16
TINTS = ("pass", "mixed", "fail", "missing")
_FLAGS = [str(flags) for flags in range(32)]
#: How a number that JSON cannot hold (``json.dumps`` with ``allow_nan``) is shown: as no value.
_NOT_FINITE = {"NaN": "null", "Infinity": "null", "-Infinity": "null"}


@dataclass(frozen=True)
class MatrixPart:
    """What the matrix needs of one run: its column (to decide the rows) and its cells as JSON
    text, per item of the column: ``items`` the row's first fields (``"id",anchor,"bucket"``),
    ``heads`` the cell's score, verdict and tint, ``tails`` its latency, tokens and cost, and
    ``snippets`` the start of the item's input (a JSON string or null), which the item index shows."""

    column: RunColumn
    items: list[str]
    heads: list[str]
    tails: list[str]
    snippets: list[str]


def matrix_part(column: RunColumn, snippets: Mapping[str, str] | None = None, items: list[str] | None = None) -> MatrixPart:
    """The run's cells as the matrix data writes them. The tint: pass (every repeat with a verdict
    passed), fail (none scored above 0), mixed (failed but partly right), missing (no verdict).
    ``items``: the row starts of the column's items when another part of the same items holds them
    (:meth:`SharedTexts.row_starts`), else they are written here."""
    passed, score = column.passed, column.score
    known = ~np.isnan(passed)
    tint = np.where(~known, 3, np.where(passed == 1.0, 0, np.where(~np.isnan(score) & (score != 0), 1, 2)))
    verdicts = np.where(known, np.where(passed == 1.0, "1", "0"), "null").tolist()
    heads = [f"{s},{v},{t}" for s, v, t in zip(_numbers(score), verdicts, tint.tolist())]
    tails = [",".join(cell) for cell in zip(*(_numbers(getattr(column, name)) for name in ("latency_ms", "tokens", "cost_usd")))]
    shown = snippets or {}
    return MatrixPart(column, [_row_start(item_id) for item_id in column.item_ids] if items is None else items, heads,
                      tails, [_text(shown[item_id]) if item_id in shown else "null" for item_id in column.item_ids])


class SharedTexts:
    """Runs of one dataset hold the same items, so their parts' item ids, row starts and (for the
    same inputs) snippets are equal sequences of up to a million strings each: :meth:`of` hands back
    a part whose equal sequences are the ones an earlier part holds, so a build keeps one copy."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, ...], tuple[tuple[str, ...], list[str], list[list[str]]]] = {}

    def row_starts(self, item_ids: tuple[str, ...]) -> list[str] | None:
        """The row starts of a part seen with these items, for :func:`matrix_part` (None: none seen)."""
        seen = self._seen.get(item_ids)
        return None if seen is None else seen[1]

    def of(self, part: MatrixPart) -> MatrixPart:
        item_ids, items, snippets = self._seen.setdefault(part.column.item_ids, (part.column.item_ids, part.items, []))
        if items is not part.items and items != part.items:
            return part
        shared = next((kept for kept in snippets if kept is part.snippets or kept == part.snippets), None)
        if shared is None:
            snippets.append(part.snippets)
            shared = part.snippets
        return replace(part, column=replace(part.column, item_ids=item_ids), items=items, snippets=shared)


def _row_start(item_id: str) -> str:
    anchor = paths.item_anchor(item_id)
    shown = "null" if anchor == f"item-{item_id}" else _text(anchor)
    return f"{_text(item_id)},{shown},{_text(paths.item_bucket(item_id))}"


def _text(value: str) -> str:
    """``value`` as ``json.dumps(value, ensure_ascii=False)`` writes it: that call ends in this same
    function after building an encoder (~1.2 µs a call, ~1.2 million calls in a 1M-case build)."""
    return encode_basestring(value)


def _numbers(values: np.ndarray) -> list[str]:
    """Each value as JSON writes a float (``repr``), null where it has none or is not finite."""
    if values.size == 0:
        return []
    return [_NOT_FINITE.get(text, text) for text in json.dumps(values.tolist())[1:-1].split(", ")]


def matrix_scripts(name: str, marks: MatrixMarks, parts: Sequence[MatrixPart]) -> dict[str, bytes]:
    """The matrix's data scripts (path → bytes, at least one), rows in ``marks``' order."""
    passed = np.nan_to_num(marks.values["passed"], nan=0.0) == 1.0
    flags = (OUTLIER * (marks.outlier & ~passed) + BEST * marks.best + FASTEST * marks.fastest
             + CHEAPEST * marks.cheapest + FEWEST_TOKENS * marks.fewest_tokens)
    cells = [_cells(part, marks.position[:, index], flags[:, index]) for index, part in enumerate(parts)]
    rows = [f"[{start},{outputs},[{','.join(row)}]]"
            for start, outputs, row in zip(_row_starts(marks, parts), marks.outputs.tolist(), zip(*cells))]
    count = max(1, -(-len(rows) // MATRIX_PART_ROWS))
    return {paths.matrix_data(name, n): json_script(paths.matrix_data(name, n),
                                                    "[" + ",".join(rows[n * MATRIX_PART_ROWS:(n + 1) * MATRIX_PART_ROWS]) + "]")
            for n in range(count)}


def _cells(part: MatrixPart, rows: np.ndarray, flags: np.ndarray) -> list[str]:
    """One column's cells of every row of the matrix (null where the run lacks the item)."""
    heads, tails, flag_list = part.heads, part.tails, flags.tolist()
    if rows.size == len(heads) and np.array_equal(rows, np.arange(rows.size)):
        return [f"[{head},{_FLAGS[flag]},{tail}]" for head, flag, tail in zip(heads, flag_list, tails)]
    return ["null" if row < 0 else f"[{heads[row]},{_FLAGS[flag]},{tails[row]}]" for row, flag in zip(rows.tolist(), flag_list)]


def _row_starts(marks: MatrixMarks, parts: Sequence[MatrixPart]) -> list[str]:
    """Each row's first fields, from the first column that has its item."""
    if parts and np.array_equal(marks.position[:, 0], np.arange(len(marks.item_ids))):
        return parts[0].items
    first = marks.present.argmax(axis=1)
    return [parts[column].items[row] for column, row in zip(first.tolist(), marks.position[np.arange(first.size), first].tolist())]
