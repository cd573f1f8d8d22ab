"""Analyses of one run: ``evalsite bootstrap`` (intervals) and ``evalsite noise`` (repeats).

The bootstrap resamples what is independent in the run:

* items carrying a cluster key (``[analysis] cluster_key``, ``metadata.group`` by default: the one
  cluster rule of :func:`~evalsite.analysis.items.cluster_labels` every verdict uses) are not
  independent of their cluster, so whole clusters are resampled (cluster BCa);
* otherwise items (BCa).

Each item's repeats are averaged first: the item mean already carries its rerun noise, so
resampling items alone gives the whole variance of the mean; resampling repeats as well would
count that noise twice (see ``evalsite.stats.intervals``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from evalsite.analysis.db import open_database
from evalsite.analysis.interval_memo import INTERVALS
from evalsite.analysis.items import ALONE_PREFIX, DroppedItem, ItemMatrix, cluster_labels, dataset_path, item_matrix
from evalsite.analysis.metadata import cluster_key
from evalsite.analysis.selection import ArmRun, runs_by_reference
from evalsite.analysis.summary import run_noise
from evalsite.project import Project
from evalsite.stats import Flakiness, Interval, RepeatNoise, bootstrap_ci, flakiness

CONFIDENCE = 0.95
SEED = 0
N_RESAMPLES = 9999
ITEMS, CLUSTERS = "items", "clusters"


def run_matrix(project: Project, run: str, evaluator: str | None = None) -> ItemMatrix:
    """One run's items × 1 × repeats matrix (items without any score are listed as dropped)."""
    return item_matrix(open_database(project.runs_dir), runs_by_reference(project.runs_dir, [run]), evaluator)


@dataclass(frozen=True)
class Estimate:
    """A statistic of the run and its interval (``interval.method`` names the bootstrap)."""

    value: float
    interval: Interval


@dataclass(frozen=True)
class BootstrapReport:
    """``resampled`` is what the bootstrap drew: ``items`` or ``clusters`` (each item's repeats
    averaged first); ``why`` says what in the data chose it. ``clusters`` counts the
    resampled clusters (items without the key count as one cluster each)."""

    run: ArmRun
    evaluator: str | None
    n_items: int
    n_repeats: int
    dropped: tuple[DroppedItem, ...]
    resampled: str
    why: str
    group_key: str
    clusters: int | None
    confidence: float
    n_resamples: int
    seed: int
    mean: Estimate
    pass_rate: Estimate | None


def bootstrap_report(
    project: Project, run: str, *, evaluator: str | None = None, confidence: float = CONFIDENCE,
    seed: int = SEED, group_key: str | None = None,
) -> BootstrapReport:
    """``group_key`` overrides the project's ``[analysis] cluster_key`` (default ``group``)."""
    group_key = group_key or cluster_key(project)
    matrix = run_matrix(project, run, evaluator)
    scores, passed = matrix.arm_scores(0), matrix.arm_passed(0)
    groups, why = _clusters(project, matrix, group_key)
    resampled = ITEMS if groups is None else CLUSTERS
    repeats = scores.shape[1]
    why = f"{why}; " + (f"each item's {repeats} repeats averaged first" if repeats >= 2 else "one repeat")

    def estimate(values: np.ndarray) -> Estimate:
        item_values = np.nanmean(values, axis=1)
        interval = bootstrap_ci(item_values, confidence=confidence, seed=seed, n_resamples=N_RESAMPLES, groups=groups,
                                memo=INTERVALS)
        return Estimate(float(item_values.mean()), interval)

    return BootstrapReport(
        run=matrix.arms[0], evaluator=evaluator, n_items=matrix.n_items, n_repeats=scores.shape[1],
        dropped=matrix.dropped, resampled=resampled, why=why, group_key=group_key,
        clusters=None if groups is None else len(set(groups)), confidence=confidence, n_resamples=N_RESAMPLES,
        seed=seed, mean=estimate(scores), pass_rate=None if passed is None else estimate(passed),
    )


def _clusters(project: Project, matrix: ItemMatrix, key: str) -> tuple[tuple[str, ...] | None, str]:
    """The clusters of the one cluster rule (:func:`~evalsite.analysis.items.cluster_labels`,
    the verdict's), and a note on how they were decided."""
    if dataset_path(matrix) is None:
        return None, "the run names no dataset file (an imported run), so no item metadata and no clusters"
    _, groups = cluster_labels(project, matrix, key)
    if groups is None:
        return None, f"no item has metadata.{key}"
    alone = sum(label.startswith(ALONE_PREFIX) for label in groups)
    note = f"{matrix.n_items - alone} items have metadata.{key}" + (f"; {alone} without it are clusters of one" if alone else "")
    return groups, note


@dataclass(frozen=True)
class ItemFlakiness:
    """One item's pass/fail across repeats: Wilson interval of its pass rate, pass@k and pass^k;
    ``flaky`` when it both passed and failed."""

    item_id: str
    runs: int
    passed: int
    pass_rate: float
    wilson: tuple[float, float]
    pass_at_k: float | None
    pass_hat_k: float | None
    flaky: bool


@dataclass(frozen=True)
class NoiseReport:
    """``evalsite noise``: the run's spread across repeats and each item's flakiness.

    ``noise`` is None with one repeat; ``flakiness`` is None without a pass rule. ``k`` is the
    number of repeats pass@k and pass^k draw (default: the fewest repeats any item has)."""

    run: ArmRun
    evaluator: str | None
    n_items: int
    n_repeats: int
    dropped: tuple[DroppedItem, ...]
    noise: RepeatNoise | None
    k: int | None
    confidence: float
    mean_pass_at_k: float | None
    mean_pass_hat_k: float | None
    items: tuple[ItemFlakiness, ...]
    method: str = ""

    @property
    def flaky_items(self) -> tuple[ItemFlakiness, ...]:
        return tuple(item for item in self.items if item.flaky)


def noise_report(
    project: Project, run: str, *, evaluator: str | None = None, k: int | None = None, confidence: float = CONFIDENCE
) -> NoiseReport:
    matrix = run_matrix(project, run, evaluator)
    scores, passed = matrix.arm_scores(0), matrix.arm_passed(0)
    noise = run_noise(scores)
    result: Flakiness | None = None if passed is None else flakiness(passed, k=k, confidence=confidence)
    return NoiseReport(
        run=matrix.arms[0], evaluator=evaluator, n_items=matrix.n_items, n_repeats=scores.shape[1],
        dropped=matrix.dropped, noise=noise, k=None if result is None else result.k, confidence=confidence,
        mean_pass_at_k=None if result is None else _defined(result.mean_pass_at_k),
        mean_pass_hat_k=None if result is None else _defined(result.mean_pass_hat_k),
        items=() if result is None else _items(matrix.item_ids, result),
        method="" if result is None else result.method,
    )


def _items(item_ids: tuple[str, ...], result: Flakiness) -> tuple[ItemFlakiness, ...]:
    return tuple(
        ItemFlakiness(item_id, runs, passed, rate, wilson, _defined(at_k), _defined(hat_k), 0 < passed < runs)
        for item_id, runs, passed, rate, wilson, at_k, hat_k in zip(
            item_ids, result.n_runs, result.n_passed, result.pass_rate, result.wilson, result.pass_at_k, result.pass_hat_k
        )
    )


def _defined(value: float) -> float | None:
    return None if math.isnan(value) else value
