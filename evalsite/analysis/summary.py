"""A run's figures, computed once from its case records: :func:`summarise_run`.

``evalsite show`` and ``runs``, the runner's ``end.json`` totals, ``rescore``, claims, the
leaderboard's per-arm figures and every site page read these definitions, so they agree.

The rules (docs/reference/evaluators.md, "Run aggregates and the verdict"):

- **Mean** and **pass rate** are over items of each item's mean over its repeats (an item with
  more repeats does not weigh more); items without a score (or verdict) are left out.
- **A row with no pass rule neither passes nor fails** (its case ``passed`` is None). The run's
  pass rate is defined when every scored case has a verdict, else None.
- An evaluator **has a pass rule** when one of its real scores — not an error, not skipped, not
  on a case whose generation failed — carries ``passed`` (a failed generation records
  ``passed: false`` for every evaluator, so errors alone never give a rule to an evaluator that
  has none); without one its pass rate is None.
- A **critical failure** is a ``metadata.critical`` row whose case errored (its generation or
  an evaluator) or failed a pass rule (``passed`` false).
- ``served_models``: the models the providers said answered, in order of first appearance;
  ``served_model_changed`` when there is more than one (the run's model drifted mid-run).
- The **verdict** ``passed`` is False when a case or an evaluator errored or a pass rule failed,
  True when a pass rule exists and every one passed, None otherwise (and for an unscored run).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

import numpy as np

from evalsite.analysis.case_columns import FALSE, NONE, TRUE, CaseColumns, case_columns, item_natural_order, natural_ids
from evalsite.runlog.records import CASE_RANGES
from evalsite.runlog.totals import EvaluatorTotals, RunTotals
from evalsite.stats.descriptive import nearest_rank_percentile
from evalsite.stats.noise import Flakiness, RepeatNoise, flakiness, repeat_noise


def mean_over_items(matrix: np.ndarray) -> float | None:
    """Mean over items (rows) of each item's mean over its repeats (NaN = no value): the one
    definition of a run's mean score and pass rate. None without a value."""
    rows = matrix[np.isfinite(matrix).any(axis=1)] if matrix.size else matrix
    if rows.size == 0:
        return None
    return float(np.nanmean(rows, axis=1).mean())


def run_noise(scores: np.ndarray) -> RepeatNoise | None:
    """The run's spread across repeats from its items × repeats scores (None with one repeat):
    the one noise of a run, for ``show``, ``noise``, the leaderboard and the run page."""
    return repeat_noise(scores) if scores.ndim == 2 and scores.shape[1] >= 2 else None


@dataclass(frozen=True)
class CostSummary:
    """USD over cases. Every figure is None — unknown, never 0 — when any case has no recorded
    cost (``unknown_cases`` counts them; ``known`` sums the others).

    ``per_case`` is the cost of one answer to one item (total ÷ cases), the figure every surface
    shows; ``per_item`` the cost of an item with all its repeats (total ÷ items, ``per_case`` ×
    repeats); ``per_correct`` the cost of one passed case (total ÷ passed cases), None without a
    pass rule or a passed case (docs/reference/evaluators.md#cost-per-case-per-item-per-correct)."""

    total: float | None
    per_case: float | None
    per_correct: float | None
    cases: int
    unknown_cases: int
    passed_cases: int | None
    known: float | None = None
    per_item: float | None = None


def cost_summary(case_costs: np.ndarray, passed_cases: int | None, items: int) -> CostSummary:
    """Totals from one cost per case (NaN = unknown), the number of passed cases and of items the
    cases answer. Sums are exact (``math.fsum``), so they do not depend on the order of the cases."""
    case_costs = counted(case_costs, "cost_usd")
    unknown = int(np.count_nonzero(np.isnan(case_costs)))
    known = case_costs[~np.isnan(case_costs)]
    known_sum = math.fsum(known.tolist()) if known.size else None
    total = None if unknown or case_costs.size == 0 else known_sum  # every cost known: their sum
    return CostSummary(
        total=total,
        per_case=None if total is None else total / case_costs.size,
        per_item=None if total is None or not items else total / items,
        per_correct=None if total is None or not passed_cases else total / passed_cases,
        cases=int(case_costs.size),
        unknown_cases=unknown,
        passed_cases=passed_cases,
        known=known_sum,
    )


@dataclass(frozen=True)
class LatencySummary:
    """Case latency in milliseconds: nearest-rank percentiles (an observed value each) and the mean."""

    p50_ms: float | None
    p95_ms: float | None
    cases: int
    method: str = "nearest rank"
    mean_ms: float | None = None


def latency_summary(case_latencies: np.ndarray) -> LatencySummary:
    known = case_latencies[np.isfinite(counted(case_latencies, "latency_ms"))]
    if known.size == 0:
        return LatencySummary(None, None, 0)
    return LatencySummary(nearest_rank_percentile(known, 50), nearest_rank_percentile(known, 95), int(known.size),
                          mean_ms=fmean(known.tolist()))


@dataclass(frozen=True)
class EvaluatorSummary:
    """One evaluator over a run. ``n`` counts its scores (one per case, one per turn for a
    ``single_turn`` evaluator); ``pass_rate`` = passes / n, errors and skips counting against
    it, None without a pass rule; ``mean`` is over items of each item's mean of the scores
    produced; ``critical_failures`` names units (``<item>`` or ``<item>.t<turn>``), None when
    which rows are critical is unknown."""

    name: str
    version: str | None
    n: int
    ok: int
    errors: int
    skipped: int
    passes: int
    ruled: bool
    mean: float | None
    label_counts: dict[str, int]
    critical_failures: tuple[str, ...] | None
    passed: bool | None

    @property
    def pass_rate(self) -> float | None:
        return self.passes / self.n if self.ruled and self.n else None

    def totals(self) -> EvaluatorTotals:
        """The evaluator's figures as ``end.json`` records them."""
        return EvaluatorTotals(
            version=self.version, n=self.n, ok=self.ok, errors=self.errors, skipped=self.skipped,
            pass_rate=self.pass_rate, mean=self.mean, label_counts=self.label_counts,
            critical_failures=self.critical_failures, passed=self.passed,
        )


@dataclass(frozen=True)
class RunSummary:
    """Every figure of one run (see the module docstring for the rules).

    ``critical_failures`` is None when which rows are critical is unknown (old cases that did
    not record it and no matching dataset). ``noise`` is None with one repeat. ``verdict_items``
    and ``verdict_matrix`` are the items × repeats verdicts (1.0 / 0.0 / NaN) of the items that
    have one, when the run has a pass rate."""

    cases: int
    items: int
    repeats: tuple[int, ...]
    errors: int
    skipped: int
    scored: int
    unscored: bool
    mean_score: float | None
    pass_rate: float | None
    passed_cases: int | None
    passed: bool | None
    critical_failures: tuple[str, ...] | None
    cost: CostSummary
    scoring_cost_usd: float | None
    latency: LatencySummary
    input_tokens: int | None
    output_tokens: int | None
    evaluators: dict[str, EvaluatorSummary]
    noise: RepeatNoise | None
    verdict_items: tuple[str, ...]
    verdict_matrix: np.ndarray = field(repr=False, compare=False)
    served_models: tuple[str, ...] = ()

    @property
    def critical_known(self) -> bool:
        return self.critical_failures is not None

    @property
    def served_model_changed(self) -> bool:
        return len(self.served_models) > 1

    def flakiness(self) -> Flakiness | None:
        """Each item's pass/fail across repeats (rows: ``verdict_items``), as ``evalsite noise``
        reports it; None without a pass rate or with one repeat. Computed when asked (a Wilson
        interval per item costs more than the rest of the summary)."""
        if not self.verdict_items or len(self.repeats) < 2:
            return None
        return flakiness(self.verdict_matrix)

    def totals(self, planned: int | None = None, truncated_items: tuple[str, ...] | None = None) -> RunTotals:
        """The summary as ``end.json`` records it, with what only the runner knows when given."""
        return RunTotals(
            cases=self.cases, items=self.items, repeats=len(self.repeats), errors=self.errors,
            skipped=self.skipped, scored=self.scored, unscored=self.unscored,
            mean_score=self.mean_score, pass_rate=self.pass_rate, passed=self.passed,
            critical_failures=self.critical_failures,
            cost_usd=self.cost.total, known_cost_usd=self.cost.known, unknown_cost_cases=self.cost.unknown_cases,
            cost_per_case=self.cost.per_case, cost_per_correct=self.cost.per_correct,
            scoring_cost_usd=self.scoring_cost_usd,
            mean_latency_ms=self.latency.mean_ms, latency_p50_ms=self.latency.p50_ms,
            latency_p95_ms=self.latency.p95_ms,
            input_tokens=self.input_tokens, output_tokens=self.output_tokens,
            noise_std=None if self.noise is None or not np.isfinite(self.noise.std) else self.noise.std,
            served_models=self.served_models, served_model_changed=self.served_model_changed,
            evaluators={name: e.totals() for name, e in self.evaluators.items()},
            planned=planned, truncated_items=truncated_items,
        )

    def to_json(self) -> dict[str, Any]:
        """The summary as ``evalsite show --json`` prints it and ``end.json`` records it."""
        return self.totals().to_json()


def summarise_run(
    cases: CaseColumns | Iterable[Mapping[str, Any]], dataset_critical: Mapping[str, bool] | None = None
) -> RunSummary:
    """The figures of one run from its cases: case records (plain dicts or typed cases, in any
    order) or their :class:`~evalsite.analysis.case_columns.CaseColumns`.

    ``dataset_critical`` (item id → critical) stands in for records that did not record their
    ``critical`` flag; pass it only while the dataset's rows are the ones the run scored (columns
    carry it already: :func:`~evalsite.analysis.case_columns.case_columns` takes it)."""
    if isinstance(cases, CaseColumns) and dataset_critical is not None:
        raise ValueError("dataset_critical goes to case_columns, not with columns")
    columns = cases if isinstance(cases, CaseColumns) else case_columns(cases, dataset_critical)
    scores = columns.scores
    errored = columns.error.copy()
    errored[scores.case[scores.error]] = True
    skipped = np.zeros(columns.size, dtype=bool)
    skipped[scores.case[scores.skipped]] = True
    known = bool(np.all(columns.critical != NONE))
    evaluators = evaluator_summaries(columns, known)
    has_score = np.isfinite(columns.score)
    rated = bool(has_score.any()) and bool(np.all(columns.passed[has_score] != NONE))
    passed_cases = int(np.count_nonzero(columns.passed == TRUE)) if rated else None
    grid = _Grid(columns)
    score_matrix = grid.matrix(columns.score)
    verdicts = grid.matrix(np.where(columns.passed == NONE, np.nan, columns.passed.astype(float)) if rated
                           else np.full(columns.size, np.nan))
    scored_rows, verdict_rows = np.isfinite(score_matrix).any(axis=1), np.isfinite(verdicts).any(axis=1)
    failed = errored | (columns.passed == FALSE)
    return RunSummary(
        cases=columns.size,
        items=len(grid.items),
        repeats=grid.repeats,
        errors=int(np.count_nonzero(columns.error)),
        skipped=int(np.count_nonzero(skipped & ~columns.error)),
        scored=int(np.count_nonzero(has_score)),
        unscored=not evaluators,
        mean_score=mean_over_items(score_matrix),
        pass_rate=mean_over_items(verdicts) if rated else None,
        passed_cases=passed_cases,
        passed=_run_verdict(columns, evaluators),
        critical_failures=_item_names(columns, columns.item[(columns.critical == TRUE) & failed]) if known else None,
        cost=cost_summary(columns.cost_usd, passed_cases, len(grid.items)),
        scoring_cost_usd=_known_sum(columns.scoring_cost_usd),
        latency=latency_summary(columns.latency_ms),
        input_tokens=_total(columns.input_tokens),
        output_tokens=_total(columns.output_tokens),
        evaluators=evaluators,
        noise=run_noise(score_matrix[scored_rows]),
        verdict_items=tuple(item for item, keep in zip(grid.items, verdict_rows) if keep),
        verdict_matrix=verdicts[verdict_rows],
        served_models=columns.served_models,
    )


def _item_names(columns: CaseColumns, codes: np.ndarray) -> tuple[str, ...]:
    """The distinct item ids of these codes, in natural order."""
    return natural_ids(columns.item_ids[code] for code in _distinct(codes))


def _distinct(codes: np.ndarray) -> list[int]:
    """The distinct whole numbers of ``codes``, ascending: ``np.unique(codes).tolist()`` without
    loading ``numpy.ma`` (numpy's ``unique`` asks it whether the array is masked), which
    ``evalsite run`` would load only for this, to summarise each run it writes (~10 ms)."""
    return sorted(set(codes.tolist()))


class _Grid:
    """Items (natural order) × repeats (sorted) of a run: how every per-item matrix is aligned,
    the same alignment as :func:`evalsite.analysis.items.item_matrix` (by item id and repeat)."""

    def __init__(self, columns: CaseColumns):
        used = np.zeros(len(columns.item_ids), dtype=bool)
        used[columns.item] = True
        natural = [code for code in item_natural_order(columns.item_ids).tolist() if used[code]]
        self.items = tuple(columns.item_ids[code] for code in natural)
        self.repeats = tuple(_distinct(columns.repeat))
        row_of = np.full(len(columns.item_ids), -1, dtype=np.int64)
        row_of[np.array(natural, dtype=np.int64)] = np.arange(len(natural))
        self._rows = row_of[columns.item]
        self._columns = np.searchsorted(np.array(self.repeats, dtype=np.int64), columns.repeat)

    def matrix(self, values: np.ndarray) -> np.ndarray:
        """Items × repeats of one value per case (NaN: none); a later case of a cell wins."""
        matrix = np.full((len(self.items), len(self.repeats)), np.nan)
        known = ~np.isnan(values)
        cells = np.ravel_multi_index((self._rows[known], self._columns[known]), matrix.shape)
        cells, last = np.unique(cells[::-1], return_index=True)
        matrix.flat[cells] = values[known][::-1][last]
        return matrix


def _run_verdict(columns: CaseColumns, evaluators: dict[str, EvaluatorSummary]) -> bool | None:
    if not evaluators:
        return None
    if columns.error.any() or any(e.passed is False for e in evaluators.values()):
        return False
    return True if any(e.ruled for e in evaluators.values()) else None


def counted(values: np.ndarray, name: str) -> np.ndarray:
    """``values`` with NaN (no value) for a number outside its field's range
    (:data:`evalsite.runlog.records.CASE_RANGES`): the readers leave such lines out, but columns
    may come from a file whose footer vouches for it (read unchecked); bounded, no sum overflows."""
    low, high = CASE_RANGES[name]
    return np.where((values >= low) & (values <= high), values, np.nan)


def _known_sum(values: np.ndarray) -> float | None:
    known = values[np.isfinite(counted(values, "scoring_cost_usd"))]
    return math.fsum(known.tolist()) if known.size else None


def _total(counts: np.ndarray) -> int | None:
    """The sum when every case reported its count, else None (unknown). (Counts are whole
    numbers held as floats: exact up to 2**53.)"""
    counts = counted(counts, "input_tokens")  # the same range as output_tokens
    return int(math.fsum(counts.tolist())) if counts.size and not np.isnan(counts).any() else None


def unit_id(item: str, turn: str | None) -> str:
    """What one score is about: the item, or ``<item>.t<turn>`` for a per-turn score."""
    return item if turn is None else f"{item}.t{turn}"


def evaluator_summaries(columns: CaseColumns, known: bool) -> dict[str, EvaluatorSummary]:
    """One summary per evaluator name, in the order evaluators first appear."""
    scores = columns.scores
    return {
        name: _evaluator_summary(columns, np.flatnonzero(scores.evaluator == code), name, scores.versions[code], known)
        for code, name in enumerate(scores.evaluators) if np.any(scores.evaluator == code)
    }


def _evaluator_summary(columns: CaseColumns, rows: np.ndarray, name: str, version: str | None, known: bool) -> EvaluatorSummary:
    """One evaluator's scores (``rows`` of the score columns) counted over the run."""
    scores = columns.scores
    case, error, skipped, passed = scores.case[rows], scores.error[rows], scores.skipped[rows], scores.passed[rows]
    case_error = columns.error[case]
    good = ~error & ~skipped
    ruled = bool(np.any(good & (passed != NONE) & ~case_error))
    passes = int(np.count_nonzero((passed == TRUE) & ~error))
    failing = (columns.critical[case] == TRUE) & (error | case_error | (passed == FALSE))
    units = [unit_id(columns.item_ids[columns.item[c]], t) for c, t in zip(case[failing].tolist(), scores.turn[rows][failing])]
    labels = scores.label[rows][good & (scores.label[rows] >= 0)]
    counts = np.bincount(labels, minlength=len(scores.labels)) if labels.size else np.zeros(0, dtype=np.int64)
    errors, n = int(np.count_nonzero(error)), int(rows.size)
    return EvaluatorSummary(
        name=name, version=version, n=n, ok=int(np.count_nonzero(good)), errors=errors,
        skipped=int(np.count_nonzero(skipped & ~error)), passes=passes, ruled=ruled,
        mean=_evaluator_mean(columns, case[good], scores.score[rows][good]),
        label_counts=dict(sorted((scores.labels[code], int(count)) for code, count in enumerate(counts) if count)),
        critical_failures=natural_ids(units) if known else None,
        passed=False if errors or (ruled and passes < n) else (True if ruled else None),
    )


def _evaluator_mean(columns: CaseColumns, cases: np.ndarray, values: np.ndarray) -> float | None:
    """Over items of each item's mean over its repeats, a repeat's value being the mean of its
    produced scores (turns): the figure the leaderboard reads for ``--evaluator``. Every mean is
    an exact sum (``math.fsum``, as ``statistics.fmean``), so the order of cases does not matter."""
    known = np.isfinite(values)
    cases, values = cases[known], values[known]
    if values.size == 0:
        return None
    items, repeats = columns.item[cases], columns.repeat[cases]
    repeat_items, repeat_means = _group_means((items, repeats), values)
    item_means = _group_means((repeat_items,), repeat_means)[1]
    return math.fsum(item_means.tolist()) / item_means.size


def _group_means(keys: tuple[np.ndarray, ...], values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact mean of ``values`` per distinct key (a tuple of equal-length integer arrays),
    groups in key order; returns each group's first key array and its mean."""
    order = np.lexsort((values, *reversed(keys)))
    sorted_keys = [key[order] for key in keys]
    values = values[order]
    starts = np.flatnonzero(np.r_[True, np.any([np.diff(key) != 0 for key in sorted_keys], axis=0)]) \
        if values.size > 1 else np.zeros(values.size, dtype=np.int64)
    sizes = np.diff(np.r_[starts, values.size])
    means = values[starts].astype(float)
    for group in np.flatnonzero(sizes > 1).tolist():
        start = starts[group]
        means[group] = math.fsum(values[start:start + sizes[group]].tolist()) / sizes[group]
    return sorted_keys[0][starts], means
