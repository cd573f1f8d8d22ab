"""The comparison matrix the site shows for a set of comparable runs: item × arm cells, per-row
winners, rows where the arms' outputs diverge, and cells that differ from the row's majority answer.

A cell summarises one run's cases of one item over its repeats: the most common output, and the
mean score, latency, tokens and cost per case. Outputs are compared after trimming surrounding
whitespace (text) or as canonical JSON (anything else).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from evalsite.analysis.compare import comparability
from evalsite.analysis.items import ItemMatrix, runs_item_matrix
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


def comparison_matrix(runs: list[Run]) -> ComparisonMatrix:
    """The matrix over ``runs`` (columns in the given order). Raises :class:`NotComparableError`
    when any run is not comparable with the first."""
    for run in runs[1:]:
        verdict = comparability(runs[0].header, run.header)
        if not verdict.comparable:
            raise NotComparableError(f"not comparable: {runs[0].run_id} vs {run.run_id}: {verdict.reason}")
    grouped = [cases_by_item(run.cases) for run in runs]
    matrix = runs_item_matrix(runs, shared=False)
    return ComparisonMatrix(_columns(runs), [_row(row, item_id, runs, grouped, matrix) for row, item_id in enumerate(matrix.item_ids)])


def _columns(runs: list[Run]) -> list[MatrixColumn]:
    arms = Counter(run.header.arm_id for run in runs)
    columns = []
    for run in runs:
        arm = run.header.arm_id
        columns.append(MatrixColumn(run.run_id, arm, arm if arm and arms[arm] == 1 else run.run_id))
    return columns


def answer_key(output: Any) -> str:
    return output.strip() if isinstance(output, str) else canonical_json(output)


def _cell(run_id: str, cases: list[Mapping[str, Any]], matrix: ItemMatrix, row: int, arm: int) -> ComparisonCell:
    """One run's cases of one item: its most common output and first error from the case records,
    its figures (means over the repeats with a value) from the item matrix."""
    answers = Counter(answer_key(c.get("output")) for c in cases)
    top = answers.most_common(1)[0][0]
    return ComparisonCell(
        run_id=run_id,
        output=next(c.get("output") for c in cases if answer_key(c.get("output")) == top),
        score=matrix.mean_of("score", row, arm),
        passed=matrix.item_passed(row, arm),
        latency_ms=matrix.mean_of("latency_ms", row, arm),
        tokens=matrix.mean_of("tokens", row, arm),
        cost_usd=matrix.mean_of("cost_usd", row, arm),
        error=next((c["error"] for c in cases if c.get("error")), None),
        repeats=len(cases),
    )


def _winners(
    cells: list[ComparisonCell], value: Callable[[ComparisonCell], float | None], pick: Callable[[Iterable[float]], float]
) -> list[str]:
    values = [(cell.run_id, value(cell)) for cell in cells]
    known = [(run_id, v) for run_id, v in values if v is not None]
    if len(known) < 2:
        return []
    target = pick(v for _, v in known)
    winners = [run_id for run_id, v in known if abs(v - target) <= _TIE]
    return [] if len(winners) == len(known) else winners


def _row(
    row: int, item_id: str, runs: list[Run], grouped: list[dict[str, list[Mapping[str, Any]]]], matrix: ItemMatrix
) -> MatrixRow:
    cells = [
        _cell(run.run_id, cases[item_id], matrix, row, arm) if item_id in cases else None
        for arm, (run, cases) in enumerate(zip(runs, grouped))
    ]
    present = [cell for cell in cells if cell is not None]
    answers = Counter(answer_key(cell.output) for cell in present)
    divergent = len(answers) > 1
    ranked = answers.most_common(2)
    majority = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else None
    if divergent:
        cells = [None if cell is None else replace(cell, outlier=answer_key(cell.output) != majority) for cell in cells]
    first = next(cases[item_id][0] for cases in grouped if item_id in cases)
    return MatrixRow(
        item_id=item_id,
        input=first.get("input"),
        expected=first.get("expected"),
        cells=cells,
        best=_winners(present, lambda c: c.score, max),
        fastest=_clear_lead(present, "latency_ms"),
        cheapest=_clear_lead(present, "cost_usd"),
        fewest_tokens=_clear_lead(present, "tokens"),
        divergent=divergent,
        majority_output=next((c.output for c in present if answer_key(c.output) == majority), None),
    )


def _clear_lead(cells: list[ComparisonCell], name: str) -> list[str]:
    """The cells with the lowest ``name`` (latency, tokens, cost), when they lead the next cell by at
    least :data:`MIN_LEAD` (an absolute amount or a share of the runner-up's value, whichever is larger)."""
    winners = _winners(cells, lambda c: getattr(c, name), min)
    if not winners:
        return []
    values = {cell.run_id: getattr(cell, name) for cell in cells if getattr(cell, name) is not None}
    best = min(values[run_id] for run_id in winners)
    runner_up = min(v for run_id, v in values.items() if run_id not in winners)
    absolute, share = MIN_LEAD[name]
    return winners if runner_up - best >= max(absolute, share * runner_up) else []
