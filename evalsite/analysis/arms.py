"""Per-arm figures over the items of an :class:`ItemMatrix`: quality with intervals, pass rate,
cost, latency and the arm's own noise across repeats.

Every figure is over the matrix's items only (the items every compared arm has), so arms are
measured on the same questions. Means are over items of each item's mean over its repeats
(:func:`evalsite.analysis.summary.mean_over_items`, the definition ``show`` uses), and cost,
latency and noise come from the same functions as a run's summary. An arm's figures are a pure
function of its cells and the options, so they are kept by a digest of those
(:data:`~evalsite.analysis.interval_memo.SUMMARIES`): after one new run, a leaderboard summarises
only the arms whose cells changed.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, fields

import numpy as np

from evalsite.analysis.interval_memo import INTERVALS, SUMMARIES, SummaryMemo, cells_key
from evalsite.analysis.items import ItemMatrix
from evalsite.analysis.selection import ArmRun
from evalsite.analysis.summary import (
    CostSummary,
    LatencySummary,
    cost_summary,
    latency_summary,
    mean_over_items,
    run_noise,
)
from evalsite.stats import Interval, RepeatNoise, bootstrap_ci

CONFIDENCE = 0.95
SEED = 0


@dataclass(frozen=True)
class ArmSummary:
    """One arm over the compared items.

    ``mean_interval`` / ``pass_rate_interval``: BCa bootstrap of the per-item means over the
    verdict's resampling unit — items, or whole clusters when items declare one (the labels
    :func:`~evalsite.analysis.items.cluster_labels` gives) — so ``mean_interval`` is the interval
    the verdict shows for the arm (``stats.bootstrap_ci``; ``.method`` says when a fallback applied). ``pass_rate`` is None when
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


def summarise_arms(
    matrix: ItemMatrix, *, clusters: Sequence[Hashable] | None = None, confidence: float = CONFIDENCE, seed: int = SEED,
    memo: SummaryMemo | None = SUMMARIES,
) -> tuple[ArmSummary, ...]:
    """One :class:`ArmSummary` per arm of ``matrix``, in the matrix's arm order; ``clusters`` (one
    label per item, ``ArmsOnDataset.clusters``) makes the cluster the unit the intervals resample.
    ``memo`` keeps each arm's figures by its cells (arms without clusters only, as the paired tests')."""
    return tuple(_summary(matrix, arm, clusters, confidence, seed) if memo is None or clusters is not None
                 else _kept_summary(matrix, arm, confidence, seed, memo) for arm in range(len(matrix.arms)))


def _kept_summary(matrix: ItemMatrix, arm: int, confidence: float, seed: int, memo: SummaryMemo) -> ArmSummary:
    """:func:`_summary` of an arm, its figures taken from ``memo`` when cells equal to the arm's were
    summarised with the same options (the figures are a pure function of them), else kept there."""
    cells = [getattr(matrix, name)[:, arm, :] for name in ("score", "passed", "cost_usd", "latency_ms", "recorded")]
    key = cells_key(cells, confidence, seed)
    figures = memo.get(key)
    if figures is not None:
        return ArmSummary(arm=matrix.arms[arm], **figures)
    summary = _summary(matrix, arm, None, confidence, seed)
    memo.put(key, {field.name: getattr(summary, field.name) for field in fields(summary) if field.name != "arm"})
    return summary


def _summary(
    matrix: ItemMatrix, arm: int, clusters: Sequence[Hashable] | None, confidence: float, seed: int,
) -> ArmSummary:
    scores = matrix.arm_scores(arm)
    item_means = np.nanmean(scores, axis=1)
    passed = matrix.arm_passed(arm)
    item_pass_rates = None if passed is None else np.nanmean(passed, axis=1)
    recorded = matrix.recorded[:, arm, :]
    mean = mean_over_items(scores)
    assert mean is not None  # every item of the matrix has a score in every arm
    return ArmSummary(
        arm=matrix.arms[arm],
        n_items=matrix.n_items,
        n_cases=int(recorded.sum()),
        n_repeats=matrix.repeats(arm),
        mean=mean,
        mean_interval=bootstrap_ci(item_means, confidence=confidence, seed=seed, groups=clusters, memo=INTERVALS),
        pass_rate=None if passed is None else mean_over_items(passed),
        pass_rate_interval=None if item_pass_rates is None else bootstrap_ci(
            item_pass_rates, confidence=confidence, seed=seed, groups=clusters, memo=INTERVALS),
        cost=cost_summary(matrix.cost_usd[:, arm, :][recorded], None if passed is None else int(np.nansum(passed)),
                          matrix.n_items),
        latency=latency_summary(matrix.latency_ms[:, arm, :][recorded]),
        noise=run_noise(scores),
    )
