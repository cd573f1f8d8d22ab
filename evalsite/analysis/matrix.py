"""The comparison matrix the site shows for a set of comparable runs: item × arm cells, per-row
winners, rows where the outputs diverge, and cells that differ from the row's majority answer.
A row's outputs are the same when every repeat of every arm gave the identical output; otherwise
the row counts its distinct outputs (over every repeat of every arm).

A cell summarises one run's cases of one item over its repeats: the most common output, and the
mean score, latency, tokens and cost per case. Outputs are compared after trimming surrounding
whitespace (text) or as canonical JSON (anything else).

What depends on one run alone is its :class:`RunColumn` (arrays over its items, its answers as
digests), so a caller can keep it per run (the site does, in its cache); :func:`decide_rows`
decides every row of any set of columns at once over items × columns arrays, and
:func:`comparison_matrix` is the same matrix as one object per cell.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalsite.analysis.case_columns import CaseColumns, case_columns, natural_ids
from evalsite.analysis.compare import comparability
from evalsite.analysis.items import columns_item_matrix
from evalsite.errors import NotComparableError
from evalsite.runlog.hashing import canonical_json
from evalsite.runlog.store import Run

_TIE = 1e-9
#: The smallest lead that earns a row's "fastest" / "fewest tokens" / "cheapest" mark: a winner
#: that beats the runner-up by less than this (in the value's unit, or as a share of it) is not
#: marked, so sub-millisecond jitter never reads as a win.
MIN_LEAD = {"latency_ms": (1.0, 0.05), "tokens": (1.0, 0.0), "cost_usd": (0.0, 0.01)}


@dataclass(frozen=True)
class MatrixColumn:
    """One run. ``label`` is its arm id, or its run id when two columns share an arm."""

    run_id: str
    arm_id: str | None
    label: str


@dataclass(frozen=True)
class ComparisonCell:
    """One run on one item. ``outlier``: in a divergent row, this output is not the row's majority
    answer (every cell of a divergent row without a clear majority is an outlier)."""

    run_id: str
    output: Any
    score: float | None
    passed: bool | None
    latency_ms: float | None
    tokens: float | None
    cost_usd: float | None
    error: str | None
    repeats: int
    outlier: bool = False
    variants: tuple[Any, ...] = ()  # every distinct output over the repeats (first seen first); () means just ``output``


@dataclass(frozen=True)
class MatrixRow:
    """One item; ``cells`` follow the columns (``None`` where a run lacks the item). Winners list
    run ids and stay empty when fewer than two cells have the value or all of them tie."""

    item_id: str
    input: Any
    expected: Any
    cells: list[ComparisonCell | None]
    best: list[str]
    fastest: list[str]
    cheapest: list[str]
    divergent: bool
    majority_output: Any = None
    fewest_tokens: list[str] = field(default_factory=list)
    outputs: int = 1  # distinct outputs over every repeat of every arm; divergent is outputs > 1


@dataclass(frozen=True)
class ComparisonMatrix:
    columns: list[MatrixColumn]
    rows: list[MatrixRow]

    @property
    def divergent_rows(self) -> int:
        return sum(1 for row in self.rows if row.divergent)


def cases_by_item(cases: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """A run's case records by item id, each item's in repeat order (what the matrix's outputs
    and errors read; its figures come from the item matrix)."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for case in sorted(cases, key=lambda c: c.get("repeat") or 0):
        grouped.setdefault(str(case["item_id"]), []).append(case)
    return grouped


@dataclass(frozen=True)
class RunColumn:
    """One run's column of the matrix as arrays over its items (natural item order): the part of
    the matrix that depends on this run alone, so it can be kept per run and combined with other
    runs' columns by :func:`decide_rows`. ``score``, ``latency_ms``, ``tokens`` and ``cost_usd``
    are each item's mean over its repeats with a value, ``passed`` its verdict over its repeats
    (1.0 every repeat with a verdict passed, 0.0 one failed), NaN where there is none;
    ``answers`` is an items × 2 array of uint64 holding a 128-bit BLAKE2b digest of the
    :func:`answer_key` of the item's most common output, so answers are compared across runs
    without their text (two different answers share a digest with probability about 2⁻¹²⁸);
    ``variants`` is a k × 3 uint64 array, one row ``(item index, digest)`` per distinct output of
    an item over all its repeats (sorted), from which a row counts its distinct outputs."""

    run_id: str
    item_ids: tuple[str, ...]
    score: np.ndarray
    passed: np.ndarray
    latency_ms: np.ndarray
    tokens: np.ndarray
    cost_usd: np.ndarray
    answers: np.ndarray
    variants: np.ndarray


#: The figures of a :class:`RunColumn` (float arrays, one value per item).
FIGURES = ("score", "passed", "latency_ms", "tokens", "cost_usd")


@dataclass(frozen=True)
class MatrixMarks:
    """The rows of a matrix decided over its columns at once. ``item_ids`` is the union of the
    columns' items in natural order; ``position`` (items × columns) is each item's index in a
    column's arrays, -1 where that run lacks it; ``values`` holds each figure (items × columns,
    NaN where missing or without a value). ``best`` (highest score), ``fastest``, ``cheapest``
    and ``fewest_tokens`` (a clear lowest value, :data:`MIN_LEAD`) mark the row's winners,
    ``outlier`` the cells of a divergent row whose answer is not the row's majority answer, and
    ``majority`` the first column giving that answer (-1: no single most common answer).
    ``outputs`` counts each row's distinct outputs over every repeat of every column (0: no
    cell); a row is ``divergent`` when it has more than one."""

    item_ids: tuple[str, ...]
    position: np.ndarray
    values: dict[str, np.ndarray]
    present: np.ndarray
    divergent: np.ndarray
    outputs: np.ndarray
    majority: np.ndarray
    outlier: np.ndarray
    best: np.ndarray
    fastest: np.ndarray
    cheapest: np.ndarray
    fewest_tokens: np.ndarray


def check_comparable(runs: Sequence[Run]) -> None:
    """Raise :class:`NotComparableError` when any run is not comparable with the first."""
    for run in runs[1:]:
        verdict = comparability(runs[0].header, run.header)
        if not verdict.comparable:
            raise NotComparableError(f"not comparable: {runs[0].run_id} vs {run.run_id}: {verdict.reason}")


def comparison_matrix(runs: list[Run], cells: Sequence[Mapping[str, ComparisonCell]] | None = None) -> ComparisonMatrix:
    """The matrix over ``runs`` (columns in the given order), one object per cell. ``cells`` are the
    runs' :func:`run_cells` when the caller already has them; rows then take their input and
    expected value from the runs' cases when the runs carry them. Raises
    :class:`NotComparableError` when any run is not comparable with the first."""
    check_comparable(runs)
    if cells is None:
        columns = [run_column(run) for run in runs]
        cells = [run_cells(run, column) for run, column in zip(runs, columns)]
    else:
        columns = [_column_of_cells(run.run_id, column) for run, column in zip(runs, cells)]
    first: dict[str, Mapping[str, Any]] = {}
    for run in runs:
        for item_id, cases in cases_by_item(run.cases).items():
            first.setdefault(item_id, cases[0])
    return ComparisonMatrix(_columns(runs), _rows(decide_rows(columns), [run.run_id for run in runs], cells, first))


def _column_of_cells(run_id: str, cells: Mapping[str, ComparisonCell]) -> RunColumn:
    """The :class:`RunColumn` of cells computed earlier (:func:`run_cells`)."""
    item_ids = natural_ids(cells)
    chosen = [cells[item_id] for item_id in item_ids]

    def floats(name: str) -> np.ndarray:
        return np.array([np.nan if getattr(cell, name) is None else float(getattr(cell, name)) for cell in chosen], dtype=float)

    variants = [(n, answer_key(output)) for n, cell in enumerate(chosen) for output in (cell.variants or (cell.output,))]
    return RunColumn(run_id, item_ids, floats("score"), floats("passed"), floats("latency_ms"), floats("tokens"),
                     floats("cost_usd"), _digests([answer_key(cell.output) for cell in chosen]),
                     _variant_rows([n for n, _ in variants], _digests([key for _, key in variants])))


def run_column(run: Run, columns: CaseColumns | None = None, outputs: Sequence[Any] | None = None) -> RunColumn:
    """The run's :class:`RunColumn`. ``columns``: the run's
    :func:`~evalsite.analysis.case_columns.case_columns`, when the caller has them; ``outputs``:
    each of those cases' output (default: from ``run.cases``, whose columns they are)."""
    cases = case_columns(run.cases) if columns is None else columns
    if cases.size == 0:  # a run that has recorded nothing yet: a column of no items
        nothing = np.empty(0)
        return RunColumn(run.run_id, (), nothing, nothing, nothing, nothing, nothing, np.empty((0, 2), dtype=np.uint64),
                         np.empty((0, 3), dtype=np.uint64))
    answered = [case.get("output") for case in run.cases] if outputs is None else outputs
    matrix = columns_item_matrix([run], [cases], shared=False)
    answers = _digests([answer_key(output) for output in _outputs(answered, cases, matrix.item_ids)])
    known = ~np.isnan(matrix.passed[:, 0, :])
    passed = np.where(known.any(axis=1), np.all((matrix.passed[:, 0, :] == 1.0) | ~known, axis=1), np.nan).astype(float)
    return RunColumn(
        run_id=run.run_id, item_ids=matrix.item_ids, score=matrix.means_of("score", 0), passed=passed,
        latency_ms=matrix.means_of("latency_ms", 0), tokens=matrix.means_of("tokens", 0),
        cost_usd=matrix.means_of("cost_usd", 0),
        answers=answers, variants=_variants(answered, cases, matrix.item_ids, answers),
    )


def _variants(outputs: Sequence[Any], cases: CaseColumns, item_ids: Sequence[str], answers: np.ndarray) -> np.ndarray:
    """:attr:`RunColumn.variants`: each item's distinct outputs over its repeats; the answers
    themselves when every item has one case."""
    if np.bincount(cases.item).max() == 1:  # one (row, answer) a row, rows ascending: already distinct and sorted
        return np.column_stack([np.arange(len(item_ids), dtype=np.uint64), answers])
    row_of = {item_id: row for row, item_id in enumerate(item_ids)}
    code_row = [row_of[item_id] for item_id in cases.item_ids]
    rows = [code_row[code] for code in cases.item.tolist()]
    return _variant_rows(rows, _digests([answer_key(output) for output in outputs]))


def _variant_rows(rows: Sequence[int], digests: np.ndarray) -> np.ndarray:
    """The distinct ``(row, digest)`` triples, sorted."""
    if not len(rows):
        return np.empty((0, 3), dtype=np.uint64)
    return np.unique(np.column_stack([np.asarray(rows, dtype=np.uint64), digests]), axis=0)


def _outputs(outputs: Sequence[Any], cases: CaseColumns, item_ids: Sequence[str]) -> list[Any]:
    """Each item's most common output (:func:`_most_common`), in the order of ``item_ids``;
    read case by case when every item has one case (the usual single repeat)."""
    code_of = {item_id: code for code, item_id in enumerate(cases.item_ids)}
    by_code: list[Any] = [None] * len(cases.item_ids)
    if np.bincount(cases.item).max() == 1:
        for output, code in zip(outputs, cases.item.tolist()):
            by_code[code] = output
        return [by_code[code_of[item_id]] for item_id in item_ids]
    grouped: list[list[Any]] = [[] for _ in cases.item_ids]
    for row in np.argsort(cases.repeat, kind="stable").tolist():  # each item's outputs in repeat order
        grouped[cases.item[row]].append(outputs[row])
    return [_most_common(grouped[code_of[item_id]]) for item_id in item_ids]


def _most_common_output(cases: Sequence[Mapping[str, Any]]) -> Any:
    """The output most of an item's repeats gave (by :func:`answer_key`; the first repeat's among equals)."""
    return _most_common([case.get("output") for case in cases])


def _most_common(outputs: Sequence[Any]) -> Any:
    if len(outputs) == 1:
        return outputs[0]
    top = Counter(answer_key(output) for output in outputs).most_common(1)[0][0]
    return next(output for output in outputs if answer_key(output) == top)


def _digests(keys: Sequence[str]) -> np.ndarray:
    """Items × 2 uint64: the 128-bit BLAKE2b digest of each answer key."""
    raw = b"".join(hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest() for key in keys)
    return np.frombuffer(raw, dtype=np.uint64).reshape(len(keys), 2).copy()


def run_cells(run: Run, column: RunColumn | None = None) -> dict[str, ComparisonCell]:
    """Item id → the run's cell (in natural item order), its figures from the run's
    :class:`RunColumn`, its most common output and first error from the case records."""
    column = run_column(run) if column is None else column
    grouped = cases_by_item(run.cases)
    values = {name: _optional(getattr(column, name)) for name in FIGURES}
    return {item_id: ComparisonCell(
        run_id=run.run_id,
        output=_most_common_output(grouped[item_id]),
        score=values["score"][n],
        passed=None if values["passed"][n] is None else values["passed"][n] == 1.0,
        latency_ms=values["latency_ms"][n],
        tokens=values["tokens"][n],
        cost_usd=values["cost_usd"][n],
        error=next((c["error"] for c in grouped[item_id] if c.get("error")), None),
        repeats=len(grouped[item_id]),
        variants=_distinct_outputs(grouped[item_id]),
    ) for n, item_id in enumerate(column.item_ids)}


def _distinct_outputs(cases: Sequence[Mapping[str, Any]]) -> tuple[Any, ...]:
    """Every distinct output (by :func:`answer_key`) of an item's repeats, first seen first."""
    seen: dict[str, Any] = {}
    for case in cases:
        seen.setdefault(answer_key(case.get("output")), case.get("output"))
    return tuple(seen.values())


def _optional(values: np.ndarray) -> list[float | None]:
    return [None if value != value else value for value in values.tolist()]  # NaN != NaN


def _columns(runs: list[Run]) -> list[MatrixColumn]:
    arms = Counter(run.header.arm_id for run in runs)
    columns = []
    for run in runs:
        arm = run.header.arm_id
        columns.append(MatrixColumn(run.run_id, arm, arm if arm and arms[arm] == 1 else run.run_id))
    return columns


def answer_key(output: Any) -> str:
    return output.strip() if isinstance(output, str) else canonical_json(output)


def decide_rows(columns: Sequence[RunColumn]) -> MatrixMarks:
    """The rows of the matrix of ``columns``, decided over items × columns arrays: winners,
    divergence, majority answers and outliers of every row at once."""
    item_ids, position = _aligned(columns)
    present = position >= 0
    values = {name: _stacked(columns, position, name) for name in FIGURES}
    shape = position.shape
    hi, lo = (_stacked_answers(columns, position, part) for part in (0, 1))
    same = _same_answers(hi, lo, present)
    counts = same.view(np.uint8).sum(axis=2, dtype=np.int64)  # how many cells of the row give each cell's answer
    top = counts.max(axis=1, initial=0)
    outputs = _distinct_answers(counts, present) if _one_output_each(columns) else _distinct_counts(columns, position)
    divergent = outputs > 1
    at_top = counts == top[:, None]
    has_majority = at_top.sum(axis=1) == top  # one answer alone has the most cells
    leader = at_top.argmax(axis=1)  # the first cell giving the most common answer
    like_leader = same[np.arange(shape[0]), :, leader] & has_majority[:, None]
    return MatrixMarks(
        item_ids=item_ids, position=position, values=values, present=present, divergent=divergent, outputs=outputs,
        majority=np.where(has_majority, leader, -1), outlier=divergent[:, None] & present & ~like_leader,
        best=_winners(values["score"], highest=True), fastest=_clear_lead(values["latency_ms"], "latency_ms"),
        cheapest=_clear_lead(values["cost_usd"], "cost_usd"), fewest_tokens=_clear_lead(values["tokens"], "tokens"),
    )


def _aligned(columns: Sequence[RunColumn]) -> tuple[tuple[str, ...], np.ndarray]:
    """The union of the columns' items in natural order, and each item's index in each column
    (-1: missing); the columns' own order when they all hold the same items."""
    first = columns[0].item_ids if columns else ()
    if all(column.item_ids == first for column in columns):
        return first, np.repeat(np.arange(len(first))[:, None], len(columns), axis=1)
    item_ids = natural_ids(item_id for column in columns for item_id in column.item_ids)
    row_of = {item_id: row for row, item_id in enumerate(item_ids)}
    position = np.full((len(item_ids), len(columns)), -1, dtype=np.int64)
    for index, column in enumerate(columns):
        rows = np.array([row_of[item_id] for item_id in column.item_ids], dtype=np.int64)
        position[rows, index] = np.arange(rows.size)
    return item_ids, position


def _one_output_each(columns: Sequence[RunColumn]) -> bool:
    """Whether every item of every column has one distinct output over its repeats (one variant per
    item: its answer, the only output it gave), as on runs of one repeat."""
    return all(column.variants.shape[0] == len(column.item_ids) for column in columns)


def _same_answers(hi: np.ndarray, lo: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Items × cells × cells: whether two present cells of a row give the same answer (both digest halves)."""
    same: np.ndarray = hi[:, :, None] == hi[:, None, :]
    same &= lo[:, :, None] == lo[:, None, :]
    if not present.all():
        same &= present[:, None, :] & present[:, :, None]
    return same


def _distinct_answers(counts: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Per row, the distinct answers of its cells, from how many of the row's cells give each cell's
    answer (``counts``): an answer m cells give adds 1/m for each of them, 1 in all (rounded: the sum's
    error is far below ½). When every cell has one output (:func:`_one_output_each`) these are
    :func:`_distinct_counts`, without sorting every variant."""
    shares = np.divide(1.0, counts, out=np.zeros(counts.shape), where=present)
    distinct: np.ndarray = np.rint(shares.sum(axis=1)).astype(np.int64)
    return distinct


def _distinct_counts(columns: Sequence[RunColumn], position: np.ndarray) -> np.ndarray:
    """Per row, the distinct outputs over every repeat of every column (their variants' union)."""
    found = []
    for index, column in enumerate(columns):
        row_of = np.full(len(column.item_ids), -1, dtype=np.int64)  # the column's item index → the matrix row
        present = position[:, index] >= 0
        row_of[position[present, index]] = np.nonzero(present)[0]
        rows = row_of[column.variants[:, 0].astype(np.int64)]
        found.append(np.column_stack([rows.astype(np.uint64), column.variants[:, 1:]]))
    if not any(len(part) for part in found):
        return np.zeros(position.shape[0], dtype=np.int64)
    triples = np.ascontiguousarray(np.concatenate(found), dtype=np.uint64)
    # each (row, digest) triple as one 24-byte value: compared whole, ~3x faster than np.unique(axis=0)'s field by field
    distinct = np.unique(triples.view(np.dtype((np.void, triples.itemsize * 3))).ravel())
    matrix_rows = distinct.view(np.uint64).reshape(-1, 3)[:, 0]
    return np.bincount(matrix_rows.astype(np.int64), minlength=position.shape[0])


def _in_order(position: np.ndarray) -> bool:
    """Whether every column holds every row's item at the row's own index (columns of the same items)."""
    return bool(np.all(position == np.arange(position.shape[0])[:, None]))


def _stacked(columns: Sequence[RunColumn], position: np.ndarray, name: str) -> np.ndarray:
    """Items × columns of one figure, NaN where a cell is missing or has no value."""
    if columns and _in_order(position):
        return np.column_stack([getattr(column, name) for column in columns]).astype(float, copy=False)
    stacked = np.full(position.shape, np.nan)
    for index, column in enumerate(columns):
        rows = position[:, index]
        found = rows >= 0
        stacked[found, index] = getattr(column, name)[rows[found]]
    return stacked


def _stacked_answers(columns: Sequence[RunColumn], position: np.ndarray, part: int) -> np.ndarray:
    """Items × columns of one half of the answers' digests (0 where a cell is missing)."""
    if columns and _in_order(position):
        return np.column_stack([column.answers[:, part] for column in columns]).astype(np.uint64, copy=False)
    stacked = np.zeros(position.shape, dtype=np.uint64)
    for index, column in enumerate(columns):
        rows = position[:, index]
        found = rows >= 0
        stacked[found, index] = column.answers[rows[found], part]
    return stacked


def _rows(marks: MatrixMarks, run_ids: list[str], cells: Sequence[Mapping[str, ComparisonCell]],
          first: Mapping[str, Mapping[str, Any]]) -> list[MatrixRow]:
    """The matrix's rows as objects: each cell from its run's :func:`run_cells`, marked outlying
    where ``marks`` say so."""
    named = {name: _named(getattr(marks, name), run_ids)
             for name in ("outlier", "best", "fastest", "cheapest", "fewest_tokens")}
    rows = []
    for n, item_id in enumerate(marks.item_ids):
        row = [column.get(item_id) for column in cells]
        if named["outlier"][n]:
            row = [_outlying(cell) if cell is not None and marks.outlier[n, index] else cell for index, cell in enumerate(row)]
        case, lead = first.get(item_id), int(marks.majority[n])
        leading = row[lead] if lead >= 0 else None
        rows.append(MatrixRow(
            item_id=item_id,
            input=None if case is None else case.get("input"),
            expected=None if case is None else case.get("expected"),
            cells=row,
            best=named["best"][n],
            fastest=named["fastest"][n],
            cheapest=named["cheapest"][n],
            fewest_tokens=named["fewest_tokens"][n],
            divergent=bool(marks.divergent[n]),
            outputs=int(marks.outputs[n]),
            majority_output=None if leading is None else leading.output,
        ))
    return rows


def _named(mask: np.ndarray, run_ids: list[str]) -> list[list[str]]:
    """Per row, the run ids of the columns ``mask`` marks (in column order)."""
    named: list[list[str]] = [[] for _ in range(mask.shape[0])]
    rows, columns = np.nonzero(mask)
    for row, column in zip(rows.tolist(), columns.tolist()):
        named[row].append(run_ids[column])
    return named


def _winners(values: np.ndarray, *, highest: bool) -> np.ndarray:
    """Per row, the cells whose value ties the row's highest (or lowest) value among the cells with
    one; none when fewer than two cells have a value or all of them tie."""
    known = ~np.isnan(values)
    if highest:
        target = np.where(known, values, -np.inf).max(axis=1, initial=-np.inf)
    else:
        target = np.where(known, values, np.inf).min(axis=1, initial=np.inf)
    with np.errstate(invalid="ignore"):  # rows without a value: inf - inf
        won = known & (np.abs(values - target[:, None]) <= _TIE)
    shown = (known.sum(axis=1) >= 2) & (won.sum(axis=1) < known.sum(axis=1))
    chosen: np.ndarray = won & shown[:, None]
    return chosen


def _clear_lead(values: np.ndarray, name: str) -> np.ndarray:
    """The cells with the lowest ``name`` (latency, tokens, cost), when they lead the next cell by at
    least :data:`MIN_LEAD` (an absolute amount or a share of the runner-up's value, whichever is larger)."""
    won = _winners(values, highest=False)
    known = ~np.isnan(values)
    best = np.where(known, values, np.inf).min(axis=1, initial=np.inf)
    runner_up = np.where(known & ~won, values, np.inf).min(axis=1, initial=np.inf)
    absolute, share = MIN_LEAD[name]
    with np.errstate(invalid="ignore"):  # rows without a winner have no runner-up (inf - inf)
        clear = runner_up - best >= np.maximum(absolute, share * runner_up)
    chosen: np.ndarray = won & clear[:, None]
    return chosen


def _outlying(cell: ComparisonCell) -> ComparisonCell:
    return ComparisonCell(cell.run_id, cell.output, cell.score, cell.passed, cell.latency_ms, cell.tokens, cell.cost_usd,
                          cell.error, cell.repeats, outlier=True)
