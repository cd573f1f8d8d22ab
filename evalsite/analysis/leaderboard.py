"""Many arms on one dataset: the leaderboard, its rank stability, and the pilot/holdout check.

The leaderboard is the verdict (:mod:`evalsite.analysis.verdict`) with each arm's figures: arms
in the order of the statistic shown (mean score by default, ``--metric`` otherwise), separated
only where the paired sign-flip tests, Holm-corrected over every pair, say so. Friedman and
Nemenyi stay beside it as the omnibus test and the critical-difference picture.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from evalsite.analysis.arms import ArmSummary, summarise_arms
from evalsite.analysis.background import started
from evalsite.analysis.db import RunsDatabase, open_database
from evalsite.analysis.interval_memo import DRAWS
from evalsite.analysis.items import DroppedItem, ItemLabels, ItemMatrix, cluster_labels, item_labels, item_matrix
from evalsite.analysis.json_data import Tabular
from evalsite.analysis.selection import Selection, select_runs
from evalsite.analysis.verdict import ArmPlace, Metric, Verdict, matrix_verdict, metric_values
from evalsite.errors import EvalsiteError
from evalsite.project import Project
from evalsite.runlog.store import Run
from evalsite.stats import HoldoutCheck, Interval, RankStability, holdout_check
from evalsite.stats.ranking import within_item_ranks
from evalsite.stats.stability import stability_draws

if TYPE_CHECKING:
    import pyarrow as pa

ALPHA = 0.05
SEED = 0
STABILITY_LEVEL = 0.95


@dataclass(frozen=True)
class ArmsOnDataset:
    """The comparable arms of one dataset, their aligned matrix and, when items declare one, the
    cluster of each item (``clusters``; None: every item is its own unit)."""

    selection: Selection
    matrix: ItemMatrix
    clusters: tuple[Hashable, ...] | None = None
    cluster_key: str | None = None
    errors: Mapping[str, int | None] = field(default_factory=dict)  # run id -> failed generations (run_errors)


def arms_on_dataset(project: Project, dataset: str | None = None, evaluator: str | None = None) -> ArmsOnDataset:
    """Choose the comparable runs of a dataset and read their cells (the leaderboard's data).

    Only the ``runs`` view is defined: the chosen runs' cases are read from their own files
    (:func:`~evalsite.analysis.items.item_matrix`), so no other run's file is hashed or scanned."""
    database = open_database(project.runs_dir, case_views=False)
    return arms_of_selection(project, database, select_runs(database, dataset, evaluator), evaluator)


def arms_of_selection(
    project: Project, database: RunsDatabase, selection: Selection, evaluator: str | None = None,
    kept: Mapping[str, pa.Table] | None = None,
) -> ArmsOnDataset:
    """The aligned matrix of chosen runs and, when items declare one, each item's cluster (the
    site calls this for every comparable group, so its verdict is the command's; ``kept``: the
    cells of runs it has already read, :func:`~evalsite.analysis.items.item_matrix`)."""
    matrix = item_matrix(database, selection.arms, evaluator, kept)
    key, clusters = cluster_labels(project, matrix)
    errors = {arm.run_id: run_errors(database.runs.get(arm.run_id)) for arm in selection.arms}
    return ArmsOnDataset(selection, matrix, clusters, key, errors)


def run_errors(run: Run | None) -> int | None:
    """The cases of a run that failed to generate, as its one run summary counted them when it
    ended (``end.json`` totals); None for a run without an end record (still running, killed)."""
    return run.footer.totals.errors if run is not None and run.footer is not None else None


@dataclass(frozen=True)
class RankedArm:
    """An arm's row, in display order: ``arm_id``, the ranking statistic ``value`` with its
    ``interval``, ``rank`` (1 = listed first), ``places`` (the best and worst position it could
    hold given the arms the tests do not separate it from, printed by ``rank_text``), its group
    ``letters``, its Friedman ``mean_rank``, every figure in ``summary`` and ``errors``, the run's
    cases that failed to generate (:func:`run_errors`: an arm whose every case errored shows a
    0.0 mean like an arm that answered everything wrong; this tells them apart)."""

    arm_id: str | None
    label: str
    value: float
    interval: Interval
    rank: int
    places: tuple[int, int]
    rank_text: str
    letters: str
    mean_rank: float
    summary: ArmSummary
    errors: int | None = None


#: ``leaderboard -o FILE.csv``'s columns: column -> the field of one of its ``--json`` arms.
LEADERBOARD_COLUMNS = {
    "rank": "rank", "places": "rank_text", "group": "letters", "arm": "label", "arm_id": "arm_id",
    "run_id": "summary.arm.run_id", "value": "value", "ci_low": "interval.low", "ci_high": "interval.high",
    "confidence": "interval.confidence", "pass_rate": "summary.pass_rate", "items": "summary.n_items",
    "cases": "summary.n_cases", "errors": "errors", "cost_per_case_usd": "summary.cost.per_case",
    "cost_per_correct_usd": "summary.cost.per_correct", "p50_ms": "summary.latency.p50_ms",
    "p95_ms": "summary.latency.p95_ms", "noise_std": "summary.noise.std", "mean_rank": "mean_rank",
}


@dataclass(frozen=True)
class Leaderboard(Tabular):
    """Every comparable arm of one dataset in the verdict's order, with the verdict itself.

    ``stability`` answers "how many items do the separated pairs need" (None with one arm).
    ``table()`` has one row per arm (:data:`LEADERBOARD_COLUMNS`)."""

    TABLE_COLUMNS = LEADERBOARD_COLUMNS

    selection: Selection
    evaluator: str | None
    n_items: int
    dropped: tuple[DroppedItem, ...]
    arms: tuple[RankedArm, ...]
    verdict: Verdict
    stability: RankStability | None
    seed: int

    def _records(self, data: Any) -> Sequence[Mapping[str, Any]]:
        return list(data["arms"])


def leaderboard(
    project: Project, dataset: str | None = None, *, evaluator: str | None = None, alpha: float = ALPHA,
    seed: int = SEED, metric: Metric = Metric(),
) -> Leaderboard:
    data = arms_on_dataset(project, dataset, evaluator)
    return leaderboard_of(data, evaluator=evaluator, alpha=alpha, seed=seed, metric=metric)


def dataset_verdict(data: ArmsOnDataset, *, alpha: float = ALPHA, seed: int = SEED, metric: Metric = Metric()) -> Verdict:
    """The verdict on the arms of one dataset (clusters as the unit when items declare them)."""
    return matrix_verdict(data.matrix, metric=metric, alpha=alpha, seed=seed, groups=data.clusters)


def leaderboard_of(
    data: ArmsOnDataset, *, evaluator: str | None = None, alpha: float = ALPHA, seed: int = SEED,
    metric: Metric = Metric(),
) -> Leaderboard:
    """The leaderboard of arms already chosen and read (the site calls this with its own data)."""
    matrix = data.matrix
    stability = dataset_stability(data, metric, seed) if len(matrix.arms) > 1 else None
    summaries = summarise_arms(matrix, clusters=data.clusters, seed=seed)
    verdict = dataset_verdict(data, alpha=alpha, seed=seed, metric=metric)
    mean_ranks = _mean_ranks(matrix, verdict)
    arms = tuple(
        RankedArm(matrix.arms[p.arm].arm_id, p.label, p.value, p.interval, p.rank, p.places, p.rank_text, p.letters,
                  mean_ranks[p.arm], summaries[p.arm], data.errors.get(matrix.arms[p.arm].run_id))
        for p in verdict.arms
    )
    return Leaderboard(data.selection, evaluator, matrix.n_items, matrix.dropped, arms, verdict,
                       None if stability is None else stability(verdict), seed)


def _mean_ranks(matrix: ItemMatrix, verdict: Verdict) -> tuple[float, ...]:
    """Each arm's mean within-item rank (1 = best): Friedman's, or where no omnibus test was read
    (one arm; runs stopped by stop_when ranked by another metric) the same ranks, described only."""
    if verdict.friedman is not None:
        return verdict.friedman.mean_ranks
    sign = -1.0 if verdict.metric.lower_is_better else 1.0
    return tuple(within_item_ranks(sign * metric_values(matrix, verdict.metric)).mean(axis=0).tolist())


def dataset_stability(data: ArmsOnDataset, metric: Metric, seed: int = SEED) -> Callable[[Verdict], RankStability]:
    """:func:`start_stability` of the arms of one dataset (clusters as the unit when items declare them)."""
    return start_stability(metric_values(data.matrix, metric), metric, seed, groups=data.clusters)


def start_stability(
    values: np.ndarray, metric: Metric, seed: int = SEED, groups: Sequence[Hashable] | None = None,
) -> Callable[[Verdict], RankStability]:
    """``stats.rank_stability`` of items × arms ``values`` of ``metric``, checking only the pairs the
    verdict separates: nothing is reported for a gap the paired tests cannot tell from chance.
    ``groups`` (the verdict's clusters) makes whole clusters the resampled unit, as in the verdict's
    own tests. The resamples need no test's outcome, so they are drawn now (in a thread for a large
    matrix, beside the verdict's tests: :mod:`evalsite.analysis.background`), each arm's kept in
    :data:`~evalsite.analysis.interval_memo.DRAWS`; call the result with the verdict on the same values."""
    oriented = (-1.0 if metric.lower_is_better else 1.0) * np.asarray(values, dtype=float)
    cells = oriented.size if np.all(np.isfinite(oriented)) else 0  # else the verdict refuses them: nothing to overlap
    draws = started("stability", cells, stability_draws, oriented, seed=seed, level=STABILITY_LEVEL, groups=groups,
                    memo=DRAWS)
    return lambda verdict: draws().checking([(p.ahead, p.behind) for p in verdict.pairs if p.separated])


def stability_sentence(stability: RankStability, labels: Sequence[str]) -> str:
    """How large a bootstrap sample keeps the separated pairs' direction; nothing for pairs the
    paired tests do not separate. It is a resampling figure, not the items a test needs."""
    level = f"{stability.level:.0%}"
    if not stability.pairs:
        return "the paired tests separate no pair of arms, so no order is reported as stable"
    shown = ", ".join(f"{labels[a]} > {labels[b]}" for a, b in stability.pairs)
    size: int | None
    if stability.min_size_order is not None:
        order = " > ".join(labels[arm] for arm in stability.full_order)
        what, size, plural = f"this order ({order})", stability.min_size_order, False
    else:
        what, size, plural = f"the separated pairs ({shown}; the rest of the order is not supported)", stability.min_size_pairs, True
    keep = "keep their direction" if plural else "keeps its direction"
    kept = (f"{what} {'are' if plural else 'is'} kept by fewer than {level} of bootstrap samples even at "
            f"{_sample_size(stability, stability.sizes[-1])}" if size is None
            else f"{what} {keep} in {level} of bootstrap samples of ~{_sample_size(stability, size)}")
    return (f"{kept}; you have {_sample_size(stability, stability.n_units or stability.n_items)} — share of "
            f"{stability.n_resamples:,} bootstrap samples per size (with replacement) that keep every separated "
            "pair's direction; not the number of items a test needs to detect a difference (family-test --effect)")


def _sample_size(stability: RankStability, size: int) -> str:
    """"72 items", or "18 clusters (~144 items)" when whole clusters are resampled."""
    if stability.unit == "item":
        return f"{size} item{'s' * (size != 1)}"
    return f"{size} cluster{'s' * (size != 1)} (~{round(size * stability.items_per_unit)} items)"


@dataclass(frozen=True)
class StabilityReport:
    """``evalsite rank-stability``: the arms in the verdict's order (``arms``; ``labels`` and
    ``means`` follow the matrix order the stability's arm indices refer to) and how many items the pairs
    the paired tests separate need (``stability.min_size_order`` is None unless every pair is)."""

    selection: Selection
    evaluator: str | None
    n_items: int
    dropped: tuple[DroppedItem, ...]
    labels: tuple[str, ...]
    means: tuple[float, ...]
    arms: tuple[ArmPlace, ...]
    verdict: Verdict
    stability: RankStability


def stability_report(
    project: Project, dataset: str | None = None, *, evaluator: str | None = None, seed: int = SEED,
    metric: Metric = Metric(), alpha: float = ALPHA,
) -> StabilityReport:
    data = arms_on_dataset(project, dataset, evaluator)
    matrix = data.matrix
    if len(matrix.arms) < 2:
        raise EvalsiteError(f"rank stability needs two arms; dataset {data.selection.dataset_id} has one comparable arm")
    stability = dataset_stability(data, metric, seed)
    verdict = dataset_verdict(data, alpha=alpha, seed=seed, metric=metric)
    means = metric_values(matrix, metric).mean(axis=0)
    return StabilityReport(
        data.selection, evaluator, matrix.n_items, matrix.dropped, tuple(arm.label for arm in matrix.arms),
        tuple(means.tolist()), verdict.arms, verdict, stability(verdict),
    )


@dataclass(frozen=True)
class HoldoutReport:
    """``evalsite holdout``: is the order of arms found on the pilot items the order on the holdout
    items? Items are split by ``metadata.split`` as the dataset file records it."""

    selection: Selection
    evaluator: str | None
    labels: tuple[str, ...]
    pilot: str
    holdout: str
    pilot_items: int
    holdout_items: int
    other_items: int
    split: ItemLabels
    check: HoldoutCheck


def holdout_report(
    project: Project, dataset: str | None = None, *, evaluator: str | None = None,
    pilot: str = "pilot", holdout: str = "holdout",
) -> HoldoutReport:
    data = arms_on_dataset(project, dataset, evaluator)
    matrix = data.matrix
    if len(matrix.arms) < 2:
        raise EvalsiteError(f"a holdout check needs two arms; dataset {data.selection.dataset_id} has one comparable arm")
    split = item_labels(project, matrix, "split")
    values = np.array(split.values, dtype=object)
    for name in (pilot, holdout):
        if not np.any(values == name):
            found = sorted({v for v in split.values if v is not None})
            raise EvalsiteError(
                f"no compared item of {split.source} has metadata.split {name!r} "
                f"(splits found: {', '.join(found) or 'none'})"
            )
    pilot_rows, holdout_rows = values == pilot, values == holdout
    check = holdout_check(matrix.subset(pilot_rows).score, matrix.subset(holdout_rows).score)
    return HoldoutReport(
        data.selection, evaluator, tuple(arm.label for arm in matrix.arms), pilot, holdout,
        int(pilot_rows.sum()), int(holdout_rows.sum()), int((~pilot_rows & ~holdout_rows).sum()), split, check,
    )
