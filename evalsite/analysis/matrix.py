"""The comparison matrix the site shows for a set of comparable runs: item × arm cells, per-row
winners, rows where the arms' outputs diverge, and cells that differ from the row's majority answer.

A cell summarises one run's cases of one item over its repeats: the most common output, and the
mean score, latency, tokens and cost per case. Outputs are compared after trimming surrounding
whitespace (text) or as canonical JSON (anything else).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalsite.analysis.case_columns import CaseColumns, case_columns
from evalsite.analysis.compare import comparability
from evalsite.analysis.items import ItemMatrix, columns_item_matrix
from evalsite.errors import NotComparableError
from evalsite.runlog.hashing import canonical_json
from evalsite.runlog.rows import item_order
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


def comparison_matrix(runs: list[Run], cells: Sequence[Mapping[str, ComparisonCell]] | None = None) -> ComparisonMatrix:
    """The matrix over ``runs`` (columns in the given order). ``cells`` are the runs' :func:`run_cells`
    when the caller already has them (the site keeps them per run); rows then take their input and
    expected value from the runs' cases when the runs carry them. Raises :class:`NotComparableError`
    when any run is not comparable with the first."""
    for run in runs[1:]:
        verdict = comparability(runs[0].header, run.header)
        if not verdict.comparable:
            raise NotComparableError(f"not comparable: {runs[0].run_id} vs {run.run_id}: {verdict.reason}")
    cells = [run_cells(run) for run in runs] if cells is None else cells
    first: dict[str, Mapping[str, Any]] = {}
    for run in runs:
        for item_id, cases in cases_by_item(run.cases).items():
            first.setdefault(item_id, cases[0])
    item_ids = sorted({item_id for column in cells for item_id in column}, key=item_order)
    return ComparisonMatrix(_columns(runs), _rows(item_ids, [run.run_id for run in runs], cells, first))


def run_cells(run: Run, columns: CaseColumns | None = None) -> dict[str, ComparisonCell]:
    """Item id → the run's cell (in natural item order): the part of the matrix that depends on
    this run alone, so it can be kept per run and combined with other runs' cells. ``columns``:
    the run's :func:`~evalsite.analysis.case_columns.case_columns`, when the caller has them."""
    grouped = cases_by_item(run.cases)
    matrix = columns_item_matrix([run], [case_columns(run.cases) if columns is None else columns], shared=False)
    means = {name: _means(matrix, name) for name in ("score", "latency_ms", "tokens", "cost_usd")}
    passed = _passed(matrix)
    return {item_id: _cell(run.run_id, grouped[item_id], means, passed, row) for row, item_id in enumerate(matrix.item_ids)}


def _means(matrix: ItemMatrix, name: str) -> list[float | None]:
    """Each item's mean of ``name`` over its repeats with a value (:meth:`ItemMatrix.mean_of`); with a
    single repeat that is the value itself, read for every item at once."""
    values = getattr(matrix, name)[:, 0, :]
    if values.shape[1] == 1:
        return [None if value != value else value for value in values[:, 0].tolist()]  # NaN != NaN
    return [matrix.mean_of(name, row, 0) for row in range(matrix.n_items)]


def _passed(matrix: ItemMatrix) -> list[bool | None]:
    """Each item's verdict over its repeats (:meth:`ItemMatrix.item_passed`), read at once with a single repeat."""
    if matrix.passed.shape[2] == 1:
        return [None if value != value else value == 1.0 for value in matrix.passed[:, 0, 0].tolist()]
    return [matrix.item_passed(row, 0) for row in range(matrix.n_items)]


def _columns(runs: list[Run]) -> list[MatrixColumn]:
    arms = Counter(run.header.arm_id for run in runs)
    columns = []
    for run in runs:
        arm = run.header.arm_id
        columns.append(MatrixColumn(run.run_id, arm, arm if arm and arms[arm] == 1 else run.run_id))
    return columns


def answer_key(output: Any) -> str:
    return output.strip() if isinstance(output, str) else canonical_json(output)


def _cell(run_id: str, cases: list[Mapping[str, Any]], means: Mapping[str, list[float | None]],
          passed: list[bool | None], row: int) -> ComparisonCell:
    """One run's cases of one item: its most common output and first error from the case records,
    its figures (means over the repeats with a value) from the item matrix."""
    if len(cases) == 1:  # the usual single repeat: its output is the most common
        output = cases[0].get("output")
    else:
        top = Counter(answer_key(c.get("output")) for c in cases).most_common(1)[0][0]
        output = next(c.get("output") for c in cases if answer_key(c.get("output")) == top)
    return ComparisonCell(
        run_id=run_id,
        output=output,
        score=means["score"][row],
        passed=passed[row],
        latency_ms=means["latency_ms"][row],
        tokens=means["tokens"][row],
        cost_usd=means["cost_usd"][row],
        error=next((c["error"] for c in cases if c.get("error")), None),
        repeats=len(cases),
    )


def _rows(item_ids: list[str], run_ids: list[str], columns: Sequence[Mapping[str, ComparisonCell]],
          first: Mapping[str, Mapping[str, Any]]) -> list[MatrixRow]:
    """The rows of the matrix, decided over items × columns arrays: winners, divergence, majority
    answers and outliers of every row at once (one Python step per cell only to read it)."""
    grid = [[column.get(item_id) for column in columns] for item_id in item_ids]
    shape = (len(item_ids), len(columns))
    present = np.array([[cell is not None for cell in row] for row in grid], dtype=bool).reshape(shape)
    keys: dict[str, int] = {}
    codes = np.array([[-1 if cell is None else keys.setdefault(answer_key(cell.output), len(keys)) for cell in row]
                      for row in grid], dtype=np.int64).reshape(shape)
    same = (codes[:, :, None] == codes[:, None, :]) & present[:, None, :]
    counts = np.where(present, same.sum(axis=2), 0)  # how many cells of the row give each cell's answer
    top = counts.max(axis=1, initial=0)
    divergent = top < present.sum(axis=1)
    at_top = counts == top[:, None]
    has_majority = at_top.sum(axis=1) == top  # one answer alone has the most cells
    leader = at_top.argmax(axis=1)  # the first cell giving the most common answer
    majority = np.where(has_majority, codes[np.arange(shape[0]), leader], -2)
    outlier = divergent[:, None] & present & (codes != majority[:, None])
    marked = {name: _named(mask, run_ids) for name, mask in (
        ("outlier", outlier), ("best", _winners(_values(grid, "score", shape), highest=True)),
        *((name, _clear_lead(_values(grid, name, shape), name)) for name in ("latency_ms", "cost_usd", "tokens")))}
    rows = []
    for n, (item_id, cells) in enumerate(zip(item_ids, grid)):
        case = first.get(item_id)
        lead = cells[int(leader[n])]
        if marked["outlier"][n]:
            cells = [_outlying(cell) if cell is not None and outlier[n, column] else cell for column, cell in enumerate(cells)]
        rows.append(MatrixRow(
            item_id=item_id,
            input=None if case is None else case.get("input"),
            expected=None if case is None else case.get("expected"),
            cells=cells,
            best=marked["best"][n],
            fastest=marked["latency_ms"][n],
            cheapest=marked["cost_usd"][n],
            fewest_tokens=marked["tokens"][n],
            divergent=bool(divergent[n]),
            majority_output=lead.output if has_majority[n] and lead is not None else None,
        ))
    return rows


def _named(mask: np.ndarray, run_ids: list[str]) -> list[list[str]]:
    """Per row, the run ids of the columns ``mask`` marks (in column order)."""
    named: list[list[str]] = [[] for _ in range(mask.shape[0])]
    rows, columns = np.nonzero(mask)
    for row, column in zip(rows.tolist(), columns.tolist()):
        named[row].append(run_ids[column])
    return named


def _values(grid: list[list[ComparisonCell | None]], name: str, shape: tuple[int, int]) -> np.ndarray:
    """Items × columns of one figure, NaN where a cell is missing or has no value."""
    def value(cell: ComparisonCell | None) -> float:
        found = None if cell is None else getattr(cell, name)
        return np.nan if found is None else float(found)

    return np.array([[value(cell) for cell in row] for row in grid], dtype=np.float64).reshape(shape)


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
