"""Many arms on one dataset: the leaderboard, its rank stability, and the pilot/holdout check.

The leaderboard never prints an order the data does not support. Arms are listed by mean rank
(Friedman ranks within items, 1 = best), then:

* when the Friedman permutation test does not reject at α, every arm is tied with every other;
* otherwise Nemenyi's critical difference groups the arms (``stats.tied_groups``): arms sharing
  a letter are not separated by the data, and an arm's rank is the range of places it could
  hold, e.g. ``2–3 (tied)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalsite.analysis.arms import ArmSummary, summarise_arms
from evalsite.analysis.db import open_database
from evalsite.analysis.items import DroppedItem, ItemLabels, ItemMatrix, item_labels, item_matrix
from evalsite.analysis.selection import Selection, select_runs
from evalsite.errors import EvalsiteError
from evalsite.project import Project
from evalsite.stats import (
    FriedmanResult,
    HoldoutCheck,
    NemenyiResult,
    RankStability,
    TiedGroups,
    friedman_test,
    holdout_check,
    nemenyi,
    rank_stability,
    tied_groups,
)

ALPHA = 0.05
SEED = 0
STABILITY_LEVEL = 0.95


@dataclass(frozen=True)
class ArmsOnDataset:
    """The comparable arms of one dataset and their aligned matrix: what every report here starts from."""

    selection: Selection
    matrix: ItemMatrix


def arms_on_dataset(project: Project, dataset: str | None = None, evaluator: str | None = None) -> ArmsOnDataset:
    """Choose the comparable runs of a dataset and read their cells (the leaderboard's data)."""
    database = open_database(project.runs_dir)
    selection = select_runs(database, dataset, evaluator)
    return ArmsOnDataset(selection, item_matrix(database, selection.arms, evaluator))


@dataclass(frozen=True)
class RankedArm:
    """An arm's row: its figures, its mean rank, the places it could hold and its letters.

    ``places`` is the (best, worst) place the arm could take given the arms it is tied with;
    ``rank`` prints it: ``1`` when the data separates the arm from every other, ``2–3 (tied)``
    when it could be second or third."""

    summary: ArmSummary
    mean_rank: float
    places: tuple[int, int]
    rank: str
    letters: str


@dataclass(frozen=True)
class OrderVerdict:
    """What the tests let a reader conclude about the order of the arms.

    ``groups`` holds every arm in one group when Friedman does not reject (or there is one arm);
    ``statement`` says it in a sentence."""

    friedman: FriedmanResult | None
    nemenyi: NemenyiResult | None
    groups: TiedGroups
    strict_order_supported: bool
    alpha: float
    statement: str


@dataclass(frozen=True)
class Leaderboard:
    """Every comparable arm of one dataset, best mean rank first, with the verdict on their order.

    ``stability`` answers "how many items does this order need" (None with one arm)."""

    selection: Selection
    evaluator: str | None
    n_items: int
    dropped: tuple[DroppedItem, ...]
    arms: tuple[RankedArm, ...]
    verdict: OrderVerdict
    stability: RankStability | None
    seed: int


def leaderboard(
    project: Project, dataset: str | None = None, *, evaluator: str | None = None, alpha: float = ALPHA, seed: int = SEED
) -> Leaderboard:
    data = arms_on_dataset(project, dataset, evaluator)
    return leaderboard_of(data, evaluator=evaluator, alpha=alpha, seed=seed)


def leaderboard_of(data: ArmsOnDataset, *, evaluator: str | None = None, alpha: float = ALPHA, seed: int = SEED) -> Leaderboard:
    """The leaderboard of arms already chosen and read (the site calls this with its own data)."""
    matrix = data.matrix
    summaries = summarise_arms(matrix, seed=seed)
    verdict = order_verdict(matrix, alpha=alpha, seed=seed)
    places = _places(verdict.groups)
    mean_ranks = verdict.friedman.mean_ranks if verdict.friedman else (1.0,)
    arms = tuple(
        RankedArm(summaries[arm], mean_ranks[arm], places[arm], _rank_text(places[arm]), verdict.groups.letters[arm])
        for arm in verdict.groups.order
    )
    stability = _stability(matrix, seed) if len(matrix.arms) > 1 else None
    return Leaderboard(data.selection, evaluator, matrix.n_items, matrix.dropped, arms, verdict, stability, seed)


def order_verdict(matrix: ItemMatrix, *, alpha: float = ALPHA, seed: int = SEED) -> OrderVerdict:
    """Friedman first; Nemenyi's groups only when Friedman rejects at ``alpha``."""
    labels = [arm.label for arm in matrix.arms]
    if len(labels) == 1:
        return OrderVerdict(None, None, tied_groups([1.0], 0.0), False, alpha, "one arm: nothing to rank")
    friedman = friedman_test(matrix.score, seed=seed)
    post_hoc = nemenyi(matrix.score, alpha=alpha)
    ranks = np.asarray(friedman.mean_ranks)
    if friedman.p_value >= alpha:
        everyone = tied_groups(ranks, float(np.ptp(ranks)))
        statement = (
            f"Friedman p = {friedman.p_value:.4g} ≥ α = {alpha}: the data supports no order; "
            "every arm is tied with every other"
        )
        return OrderVerdict(friedman, post_hoc, everyone, False, alpha, statement)
    groups = tied_groups(ranks, post_hoc.critical_difference)
    statement = _groups_statement(groups, labels, alpha)
    return OrderVerdict(friedman, post_hoc, groups, groups.strict_order_supported, alpha, statement)


def _groups_statement(groups: TiedGroups, labels: list[str], alpha: float) -> str:
    if groups.strict_order_supported:
        return f"every arm is separated from every other at α = {alpha}: the order is supported"
    tied = [", ".join(labels[arm] for arm in group) for group in groups.groups if len(group) > 1]
    return (
        f"not a strict order: the data does not separate {'; nor '.join(tied)} "
        f"(Nemenyi at α = {alpha}); arms sharing a letter are tied"
    )


def _places(groups: TiedGroups) -> dict[int, tuple[int, int]]:
    place = {arm: position + 1 for position, arm in enumerate(groups.order)}
    result = {}
    for arm in groups.order:
        tied = {other for group in groups.groups if arm in group for other in group}
        result[arm] = (min(place[other] for other in tied), max(place[other] for other in tied))
    return result


def _rank_text(places: tuple[int, int]) -> str:
    best, worst = places
    return str(best) if best == worst else f"{best}–{worst} (tied)"


def _stability(matrix: ItemMatrix, seed: int) -> RankStability:
    return rank_stability(matrix.score, seed=seed, level=STABILITY_LEVEL)


@dataclass(frozen=True)
class StabilityReport:
    """``evalsite rank-stability``: the order by mean and how many items reproduce it."""

    selection: Selection
    evaluator: str | None
    n_items: int
    dropped: tuple[DroppedItem, ...]
    labels: tuple[str, ...]
    means: tuple[float, ...]
    stability: RankStability


def stability_report(
    project: Project, dataset: str | None = None, *, evaluator: str | None = None, seed: int = SEED
) -> StabilityReport:
    data = arms_on_dataset(project, dataset, evaluator)
    matrix = data.matrix
    if len(matrix.arms) < 2:
        raise EvalsiteError(f"rank stability needs two arms; dataset {data.selection.dataset_id} has one comparable arm")
    means = matrix.item_means().mean(axis=0)
    return StabilityReport(
        data.selection, evaluator, matrix.n_items, matrix.dropped, tuple(arm.label for arm in matrix.arms),
        tuple(means.tolist()), _stability(matrix, seed),
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
