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
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any, NamedTuple

import numpy as np

from evalsite.runlog.rows import case_critical, finite_number, item_order, repeat_of, whole_number
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

    ``per_item`` is the cost of answering one item once (total ÷ cases); ``per_correct`` the
    cost of one passed case (total ÷ passed cases), None without a pass rule or a passed case."""

    total: float | None
    per_item: float | None
    per_correct: float | None
    cases: int
    unknown_cases: int
    passed_cases: int | None
    known: float | None = None


def cost_summary(case_costs: np.ndarray, passed_cases: int | None) -> CostSummary:
    """Totals from one cost per case (NaN = unknown) and the number of passed cases. Sums are
    exact (``math.fsum``), so they do not depend on the order of the cases."""
    unknown = int(np.count_nonzero(np.isnan(case_costs)))
    known = case_costs[~np.isnan(case_costs)]
    total = None if unknown or case_costs.size == 0 else math.fsum(known.tolist())
    return CostSummary(
        total=total,
        per_item=None if total is None else total / case_costs.size,
        per_correct=None if total is None or not passed_cases else total / passed_cases,
        cases=int(case_costs.size),
        unknown_cases=unknown,
        passed_cases=passed_cases,
        known=math.fsum(known.tolist()) if known.size else None,
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
    known = case_latencies[np.isfinite(case_latencies)]
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

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version, "n": self.n, "ok": self.ok, "errors": self.errors, "skipped": self.skipped,
            "pass_rate": self.pass_rate, "mean": self.mean, "label_counts": self.label_counts,
            "critical_failures": None if self.critical_failures is None else list(self.critical_failures),
            "passed": self.passed,
        }


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

    def to_json(self) -> dict[str, Any]:
        """The summary as ``evalsite show --json`` prints it and ``end.json`` records it."""
        return {
            "cases": self.cases, "items": self.items, "repeats": len(self.repeats), "errors": self.errors,
            "skipped": self.skipped, "scored": self.scored, "unscored": self.unscored,
            "mean_score": self.mean_score, "pass_rate": self.pass_rate, "passed": self.passed,
            "critical_failures": None if self.critical_failures is None else list(self.critical_failures),
            "cost_usd": self.cost.total, "known_cost_usd": self.cost.known, "unknown_cost_cases": self.cost.unknown_cases,
            "cost_per_case": self.cost.per_item, "cost_per_correct": self.cost.per_correct,
            "scoring_cost_usd": self.scoring_cost_usd,
            "mean_latency_ms": self.latency.mean_ms, "latency_p50_ms": self.latency.p50_ms,
            "latency_p95_ms": self.latency.p95_ms,
            "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
            "noise_std": None if self.noise is None or not np.isfinite(self.noise.std) else self.noise.std,
            "served_models": list(self.served_models), "served_model_changed": self.served_model_changed,
            "evaluators": {name: e.to_json() for name, e in self.evaluators.items()},
        }


def summarise_run(cases: Iterable[Mapping[str, Any]], dataset_critical: Mapping[str, bool] | None = None) -> RunSummary:
    """The figures of one run from its case records (plain dicts, in any order).

    ``dataset_critical`` (item id → critical) stands in for cases that did not record their
    ``critical`` flag; pass it only while the dataset's rows are the ones the run scored."""
    cases = list(cases)
    rows = [_row(case, dataset_critical) for case in cases]
    known = all(row.critical is not None for row in rows)
    evaluators = _evaluators(rows, known)
    rated = _has_pass_rate(rows)
    passed_cases = sum(row.passed is True for row in rows) if rated else None
    grid = _Grid(rows)
    scores = grid.matrix([(row, row.score) for row in rows])
    verdicts = grid.matrix([(row, None if row.passed is None else float(row.passed)) for row in rows] if rated else [])
    scored_rows, verdict_rows = np.isfinite(scores).any(axis=1), np.isfinite(verdicts).any(axis=1)
    return RunSummary(
        cases=len(rows),
        items=len(grid.items),
        repeats=grid.repeats,
        errors=sum(row.error for row in rows),
        skipped=sum(row.skipped and not row.error for row in rows),
        scored=sum(row.score is not None for row in rows),
        unscored=not evaluators,
        mean_score=mean_over_items(scores),
        pass_rate=mean_over_items(verdicts) if rated else None,
        passed_cases=passed_cases,
        passed=_run_verdict(rows, evaluators),
        critical_failures=tuple(sorted({row.item for row in rows if row.critical and row.failed}, key=item_order))
        if known else None,
        cost=cost_summary(np.array([np.nan if row.cost is None else row.cost for row in rows], dtype=float), passed_cases),
        scoring_cost_usd=_known_sum([row.scoring_cost for row in rows]),
        latency=latency_summary(np.array([np.nan if row.latency is None else row.latency for row in rows], dtype=float)),
        input_tokens=_total([row.input_tokens for row in rows]),
        output_tokens=_total([row.output_tokens for row in rows]),
        evaluators=evaluators,
        noise=run_noise(scores[scored_rows]),
        verdict_items=tuple(item for item, keep in zip(grid.items, verdict_rows) if keep),
        verdict_matrix=verdicts[verdict_rows],
        served_models=tuple(dict.fromkeys(str(c.get("served_model")) for c in cases if c.get("served_model"))),
    )


class _Row(NamedTuple):
    """What the summary reads of one case, read once (recorded values that are not numbers of
    the right kind count as absent)."""

    item: str
    repeat: int
    score: float | None
    passed: bool | None
    error: bool  # the generation failed
    errored: bool  # the generation or an evaluator raised
    skipped: bool  # an evaluator skipped
    critical: bool | None
    cost: float | None
    latency: float | None
    scoring_cost: float | None
    input_tokens: int | None
    output_tokens: int | None
    scores: list[dict[str, Any]]

    @property
    def failed(self) -> bool:
        """Errored, or a pass rule failed (a case without a pass rule has no verdict: it never fails)."""
        return self.errored or self.passed is False


def _row(case: Mapping[str, Any], dataset_critical: Mapping[str, bool] | None) -> _Row:
    scores = [s for s in case.get("scores") or [] if isinstance(s, dict)]
    passed = case.get("passed")
    error = bool(case.get("error"))
    return _Row(
        item=str(case.get("item_id")), repeat=repeat_of(case), score=finite_number(case.get("score")),
        passed=passed if isinstance(passed, bool) else None, error=error,
        errored=error or any(s.get("error") for s in scores), skipped=any(s.get("skipped") for s in scores),
        critical=case_critical(case, dataset_critical), cost=finite_number(case.get("cost_usd")),
        latency=finite_number(case.get("latency_ms")), scoring_cost=finite_number(case.get("scoring_cost_usd")),
        input_tokens=whole_number(case.get("input_tokens")), output_tokens=whole_number(case.get("output_tokens")),
        scores=scores,
    )


class _Grid:
    """Items (natural order) × repeats (sorted) of a run: how every per-item matrix is aligned,
    the same alignment as :func:`evalsite.analysis.items.item_matrix` (by item id and repeat)."""

    def __init__(self, rows: list[_Row]):
        self.items = tuple(sorted({row.item for row in rows}, key=item_order))
        self.repeats = tuple(sorted({row.repeat for row in rows}))
        self._row = {item: index for index, item in enumerate(self.items)}
        self._column = {repeat: index for index, repeat in enumerate(self.repeats)}

    def matrix(self, cells: list[tuple[_Row, float | None]]) -> np.ndarray:
        """Items × repeats of the given values (None → NaN); a later case of a cell wins."""
        matrix = np.full((len(self.items), len(self.repeats)), np.nan)
        for row, value in cells:
            if value is not None:
                matrix[self._row[row.item], self._column[row.repeat]] = value
        return matrix


def _has_pass_rate(rows: list[_Row]) -> bool:
    """A run's pass rate is defined when every scored case has a verdict — the rule the
    leaderboard applies (:meth:`evalsite.analysis.items.ItemMatrix.arm_passed`). A run in which
    some scored row has no pass rule has none (a failed generation's ``passed: false`` alone
    does not make one)."""
    verdicts = [row.passed is not None for row in rows if row.score is not None]
    return bool(verdicts) and all(verdicts)


def _run_verdict(rows: list[_Row], evaluators: dict[str, EvaluatorSummary]) -> bool | None:
    if not evaluators:
        return None
    if any(row.error for row in rows) or any(e.passed is False for e in evaluators.values()):
        return False
    return True if any(e.ruled for e in evaluators.values()) else None


def _known_sum(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return math.fsum(known) if known else None


def _total(counts: list[int | None]) -> int | None:
    """The sum when every case reported its count, else None (unknown)."""
    known = [c for c in counts if c is not None]
    return sum(known) if counts and len(known) == len(counts) else None


def unit_id(item: str, score: dict[str, Any]) -> str:
    """What one score is about: the item, or ``<item>.t<turn>`` for a per-turn score."""
    turn = score.get("turn")
    return item if turn is None else f"{item}.t{turn}"


class _Tally:
    """One evaluator's scores, counted in one pass over the run."""

    def __init__(self, version: str | None):
        self.version = version
        self.n = self.ok = self.errors = self.skipped = self.passes = 0
        self.ruled = False
        self.labels: Counter[str] = Counter()
        self.failed_units: set[str] = set()
        self.values: dict[str, dict[int, list[float]]] = {}

    def add(self, row: _Row, score: dict[str, Any]) -> None:
        self.n += 1
        error, skipped, passed = bool(score.get("error")), bool(score.get("skipped")), score.get("passed")
        self.errors += error
        self.skipped += skipped and not error
        self.passes += passed is True and not error
        if row.critical and (error or row.error or passed is False):
            self.failed_units.add(unit_id(row.item, score))
        if error or skipped:
            return
        self.ok += 1
        self.ruled = self.ruled or (passed is not None and not row.error)
        if score.get("label") is not None:
            self.labels[str(score["label"])] += 1
        value = finite_number(score.get("score"))
        if value is not None:
            self.values.setdefault(row.item, {}).setdefault(row.repeat, []).append(value)

    def summary(self, name: str, known: bool) -> EvaluatorSummary:
        return EvaluatorSummary(
            name=name, version=self.version, n=self.n, ok=self.ok, errors=self.errors, skipped=self.skipped,
            passes=self.passes, ruled=self.ruled, mean=self._mean(), label_counts=dict(sorted(self.labels.items())),
            critical_failures=tuple(sorted(self.failed_units, key=item_order)) if known else None,
            passed=False if self.errors or (self.ruled and self.passes < self.n) else (True if self.ruled else None),
        )

    def _mean(self) -> float | None:
        """Over items of each item's mean over its cases, a case's value being the mean of its
        produced scores (turns): the figure the leaderboard reads for ``--evaluator``. (``fmean``
        sums exactly, so the order of cases does not matter.)"""
        if not self.values:
            return None
        return fmean([fmean([fmean(turns) for turns in repeats.values()]) for repeats in self.values.values()])


def _evaluators(rows: list[_Row], known: bool) -> dict[str, EvaluatorSummary]:
    """One summary per evaluator name, in the order evaluators first appear."""
    tallies: dict[str, _Tally] = {}
    for row in rows:
        for score in row.scores:
            name = str(score.get("evaluator"))
            tally = tallies.get(name)
            if tally is None:
                tally = tallies[name] = _Tally(score.get("version"))
            tally.add(row, score)
    return {name: tally.summary(name, known) for name, tally in tallies.items()}
