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

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from statistics import fmean
from typing import Any

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
    """Totals from one cost per case (NaN = unknown) and the number of passed cases."""
    unknown = int(np.count_nonzero(np.isnan(case_costs)))
    total = None if unknown or case_costs.size == 0 else float(case_costs.sum())
    known = case_costs[~np.isnan(case_costs)]
    return CostSummary(
        total=total,
        per_item=None if total is None else total / case_costs.size,
        per_correct=None if total is None or not passed_cases else total / passed_cases,
        cases=int(case_costs.size),
        unknown_cases=unknown,
        passed_cases=passed_cases,
        known=float(known.sum()) if known.size else None,
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
    not record it and no matching dataset). ``noise`` is None with one repeat; ``flakiness``
    (rows: ``verdict_items``) is None without a pass rule."""

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
    flakiness: Flakiness | None
    verdict_items: tuple[str, ...]
    served_models: tuple[str, ...] = ()

    @property
    def critical_known(self) -> bool:
        return self.critical_failures is not None

    @property
    def served_model_changed(self) -> bool:
        return len(self.served_models) > 1

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


def summarise_run(cases: Iterable[dict[str, Any]], dataset_critical: Mapping[str, bool] | None = None) -> RunSummary:
    """The figures of one run from its case records (plain dicts, in any order).

    ``dataset_critical`` (item id → critical) stands in for cases that did not record their
    ``critical`` flag; pass it only while the dataset's rows are the ones the run scored."""
    cases = list(cases)
    grid = _Grid(cases)
    critical = [case_critical(c, dataset_critical) for c in cases]
    known = all(flag is not None for flag in critical)
    evaluators = _evaluators(cases, critical, known)
    ruled = any(e.ruled for e in evaluators.values())
    rated = _has_pass_rate(cases)
    verdicts = grid.matrix(cases, lambda c: _verdict(c) if rated else None)
    passed_cases = sum(c.get("passed") is True for c in cases) if rated else None
    scores = grid.matrix(cases, lambda c: finite_number(c.get("score")))
    scored_rows = np.isfinite(scores).any(axis=1)
    verdict_rows = np.isfinite(verdicts).any(axis=1)
    return RunSummary(
        cases=len(cases),
        items=len(grid.items),
        repeats=grid.repeats,
        errors=sum(1 for c in cases if c.get("error")),
        skipped=sum(1 for c in cases if not c.get("error") and any(s.get("skipped") for s in _scores(c))),
        scored=sum(1 for c in cases if finite_number(c.get("score")) is not None),
        unscored=not evaluators,
        mean_score=mean_over_items(scores),
        pass_rate=mean_over_items(verdicts) if rated else None,
        passed_cases=passed_cases,
        passed=_run_verdict(cases, evaluators, ruled),
        critical_failures=tuple(sorted({str(c.get("item_id")) for c, flag in zip(cases, critical)
                                        if flag and _case_failed(c)}, key=item_order)) if known else None,
        cost=cost_summary(_numbers(cases, "cost_usd"), passed_cases),
        scoring_cost_usd=_known_sum(cases, "scoring_cost_usd"),
        latency=latency_summary(_numbers(cases, "latency_ms")),
        input_tokens=_token_total(cases, "input_tokens"),
        output_tokens=_token_total(cases, "output_tokens"),
        evaluators=evaluators,
        noise=run_noise(scores[scored_rows]),
        flakiness=flakiness(verdicts[verdict_rows]) if rated and verdict_rows.any() else None,
        verdict_items=tuple(item for item, keep in zip(grid.items, verdict_rows) if keep),
        served_models=tuple(dict.fromkeys(str(c["served_model"]) for c in cases if c.get("served_model"))),
    )


class _Grid:
    """Items (natural order) × repeats (sorted) of a run: how every per-item matrix is aligned,
    the same alignment as :func:`evalsite.analysis.items.item_matrix` (by item id and repeat)."""

    def __init__(self, cases: list[dict[str, Any]]):
        self.items = tuple(sorted({str(c.get("item_id")) for c in cases}, key=item_order))
        self.repeats = tuple(sorted({repeat_of(c) for c in cases}))
        self._row = {item: row for row, item in enumerate(self.items)}
        self._column = {repeat: column for column, repeat in enumerate(self.repeats)}

    def matrix(self, cases: list[dict[str, Any]], value: Callable[[dict[str, Any]], float | None]) -> np.ndarray:
        """Items × repeats of ``value(case)`` (None → NaN); a later case of a cell wins."""
        cells = np.full((len(self.items), len(self.repeats)), np.nan)
        for case in cases:
            number = value(case)
            if number is not None:
                cells[self._row[str(case.get("item_id"))], self._column[repeat_of(case)]] = number
        return cells


def _scores(case: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in case.get("scores") or [] if isinstance(s, dict)]


def _verdict(case: dict[str, Any]) -> float | None:
    passed = case.get("passed")
    return float(passed) if isinstance(passed, bool) else None


def _errored(case: dict[str, Any]) -> bool:
    """The case's generation failed or one of its evaluators raised."""
    return bool(case.get("error")) or any(s.get("error") for s in _scores(case))


def _case_failed(case: dict[str, Any]) -> bool:
    """Errored, or a pass rule failed (a case without a pass rule has no verdict: it never fails)."""
    return _errored(case) or case.get("passed") is False


def _has_pass_rate(cases: list[dict[str, Any]]) -> bool:
    """A run's pass rate is defined when every scored case has a verdict — the rule the
    leaderboard applies (:meth:`evalsite.analysis.items.ItemMatrix.arm_passed`). A run in which
    some scored row has no pass rule has none (a failed generation's ``passed: false`` alone
    does not make one)."""
    verdicts = [isinstance(c.get("passed"), bool) for c in cases if finite_number(c.get("score")) is not None]
    return bool(verdicts) and all(verdicts)


def _run_verdict(cases: list[dict[str, Any]], evaluators: dict[str, EvaluatorSummary], ruled: bool) -> bool | None:
    if not evaluators:
        return None
    if any(c.get("error") for c in cases) or any(e.passed is False for e in evaluators.values()):
        return False
    return True if ruled else None


def _numbers(cases: list[dict[str, Any]], key: str) -> np.ndarray:
    values = [finite_number(c.get(key)) for c in cases]
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _known_sum(cases: list[dict[str, Any]], key: str) -> float | None:
    known = [v for v in (finite_number(c.get(key)) for c in cases) if v is not None]
    return sum(known) if known else None


def _token_total(cases: list[dict[str, Any]], key: str) -> int | None:
    counts = [whole_number(c.get(key)) for c in cases]
    return sum(counts) if counts and None not in counts else None  # type: ignore[arg-type]


def unit_id(case: dict[str, Any], score: dict[str, Any]) -> str:
    """What one score is about: the item, or ``<item>.t<turn>`` for a per-turn score."""
    turn = score.get("turn")
    return str(case.get("item_id")) if turn is None else f"{case.get('item_id')}.t{turn}"


def _evaluators(cases: list[dict[str, Any]], critical: list[bool | None], known: bool) -> dict[str, EvaluatorSummary]:
    """One summary per evaluator name, in the order evaluators first appear."""
    grouped: dict[str, list[tuple[dict[str, Any], dict[str, Any], bool]]] = {}
    for case, flag in zip(cases, critical):
        for score in _scores(case):
            grouped.setdefault(str(score.get("evaluator")), []).append((case, score, bool(flag)))
    return {name: _evaluator(name, entries, known) for name, entries in grouped.items()}


def _evaluator(name: str, entries: list[tuple[dict[str, Any], dict[str, Any], bool]], known: bool) -> EvaluatorSummary:
    scores = [score for _, score, _ in entries]
    errors = sum(1 for s in scores if s.get("error"))
    produced = [(c, s) for c, s, _ in entries if not s.get("error") and not s.get("skipped")]
    ruled = any(s.get("passed") is not None for c, s in produced if not c.get("error"))
    passes = sum(1 for s in scores if s.get("passed") is True and not s.get("error"))
    failed = [unit_id(c, s) for c, s, flag in entries
              if flag and (s.get("error") or c.get("error") or s.get("passed") is False)]
    return EvaluatorSummary(
        name=name,
        version=scores[0].get("version"),
        n=len(scores),
        ok=len(produced),
        errors=errors,
        skipped=sum(1 for s in scores if s.get("skipped") and not s.get("error")),
        passes=passes,
        ruled=ruled,
        mean=_evaluator_mean(produced),
        label_counts=dict(sorted(Counter(str(s["label"]) for _, s in produced if s.get("label") is not None).items())),
        critical_failures=tuple(sorted(set(failed), key=item_order)) if known else None,
        passed=False if errors or (ruled and passes < len(scores)) else (True if ruled else None),
    )


def _evaluator_mean(produced: list[tuple[dict[str, Any], dict[str, Any]]]) -> float | None:
    """Over items of each item's mean over its cases, a case's value being the mean of its
    produced scores (turns): the figure the leaderboard reads for ``--evaluator``."""
    per_case: dict[tuple[str, int], list[float]] = {}
    for case, score in produced:
        value = finite_number(score.get("score"))
        if value is not None:
            per_case.setdefault((str(case.get("item_id")), repeat_of(case)), []).append(value)
    if not per_case:
        return None
    stand_ins = [{"item_id": item, "repeat": repeat, "score": fmean(values)} for (item, repeat), values in per_case.items()]
    return mean_over_items(_Grid(stand_ins).matrix(stand_ins, lambda c: c["score"]))
