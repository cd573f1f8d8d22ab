"""Per-arm figures over the items of an :class:`ItemMatrix`: quality with intervals, pass rate,
cost, latency and the arm's own noise across repeats.

Every figure is over the matrix's items only (the items every compared arm has), so arms are
measured on the same questions. Means are over items of each item's mean over its repeats.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalsite.analysis.items import ItemMatrix
from evalsite.analysis.selection import ArmRun
from evalsite.stats import Interval, RepeatNoise, bootstrap_ci, nearest_rank_percentile, repeat_noise

CONFIDENCE = 0.95
SEED = 0


@dataclass(frozen=True)
class CostSummary:
    """USD over the arm's cases of the compared items. Every figure is None — unknown, never 0 —
    when any of those cases has no recorded cost (``unknown_cases`` counts them).

    ``per_item`` is the cost of answering one item once (total ÷ cases; total ÷ items without
    repeats); ``per_correct`` the cost of one passed case (total ÷ passed cases), None without a
    pass rule or without a passed case."""

    total: float | None
    per_item: float | None
    per_correct: float | None
    cases: int
    unknown_cases: int
    passed_cases: int | None


@dataclass(frozen=True)
class LatencySummary:
    """Nearest-rank percentiles of case latency in milliseconds (an observed value each)."""

    p50_ms: float | None
    p95_ms: float | None
    cases: int
    method: str = "nearest rank"


@dataclass(frozen=True)
class ArmSummary:
    """One arm over the compared items.

    ``mean_interval`` / ``pass_rate_interval``: BCa bootstrap over items of the per-item means
    (``stats.bootstrap_ci``; ``.method`` says when a fallback applied). ``pass_rate`` is None when
    the arm has no pass rule. ``noise`` is the spread of the per-repeat means (None with one
    repeat)."""

    arm: ArmRun
    n_items: int
    n_cases: int
    n_repeats: int
    mean: float
    mean_interval: Interval
    pass_rate: float | None
    pass_rate_interval: Interval | None
    cost: CostSummary
    latency: LatencySummary
    noise: RepeatNoise | None


def summarise_arms(matrix: ItemMatrix, *, confidence: float = CONFIDENCE, seed: int = SEED) -> tuple[ArmSummary, ...]:
    """One :class:`ArmSummary` per arm of ``matrix``, in the matrix's arm order."""
    return tuple(_summary(matrix, arm, confidence, seed) for arm in range(len(matrix.arms)))


def _summary(matrix: ItemMatrix, arm: int, confidence: float, seed: int) -> ArmSummary:
    scores = matrix.arm_scores(arm)
    item_means = np.nanmean(scores, axis=1)
    passed = matrix.arm_passed(arm)
    item_pass_rates = None if passed is None else np.nanmean(passed, axis=1)
    recorded = matrix.recorded[:, arm, :]
    return ArmSummary(
        arm=matrix.arms[arm],
        n_items=matrix.n_items,
        n_cases=int(recorded.sum()),
        n_repeats=matrix.repeats(arm),
        mean=float(item_means.mean()),
        mean_interval=bootstrap_ci(item_means, confidence=confidence, seed=seed),
        pass_rate=None if item_pass_rates is None else float(item_pass_rates.mean()),
        pass_rate_interval=None if item_pass_rates is None else bootstrap_ci(item_pass_rates, confidence=confidence, seed=seed),
        cost=cost_summary(matrix.cost_usd[:, arm, :][recorded], None if passed is None else int(np.nansum(passed))),
        latency=latency_summary(matrix.latency_ms[:, arm, :][recorded]),
        noise=repeat_noise(scores) if scores.shape[1] >= 2 else None,
    )


def cost_summary(case_costs: np.ndarray, passed_cases: int | None) -> CostSummary:
    """Totals from one cost per case (NaN = unknown) and the number of passed cases."""
    unknown = int(np.count_nonzero(np.isnan(case_costs)))
    total = None if unknown or case_costs.size == 0 else float(case_costs.sum())
    return CostSummary(
        total=total,
        per_item=None if total is None else total / case_costs.size,
        per_correct=None if total is None or not passed_cases else total / passed_cases,
        cases=int(case_costs.size),
        unknown_cases=unknown,
        passed_cases=passed_cases,
    )


def latency_summary(case_latencies: np.ndarray) -> LatencySummary:
    known = case_latencies[np.isfinite(case_latencies)]
    if known.size == 0:
        return LatencySummary(None, None, 0)
    return LatencySummary(nearest_rank_percentile(known, 50), nearest_rank_percentile(known, 95), int(known.size))

