"""The regression report: a run against its baseline, item by item, evaluator by evaluator, in sum.

Items pair on ``item_id``; an item's score on one side is the mean of its case scores over the
repeats. An item whose expected value changed between the runs is re-scored from the baseline's
stored output (:mod:`evalsite.scoring.ground_truth`); if that fails it is listed under ``gt_changed`` and left
out of every other number. Items in only one run are listed apart, never counted as regressions.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from evalsite.analysis.case_columns import NONE, TRUE, CaseColumns, case_columns, joined
from evalsite.analysis.case_scan import ScannedCases
from evalsite.analysis.interval_memo import INTERVALS
from evalsite.analysis.items import ItemMatrix, columns_item_matrix
from evalsite.analysis.stopped import PairSequence
from evalsite.analysis.summary import RunSummary, summarise_run
from evalsite.runlog.hashing import canonical_json
from evalsite.runlog.rows import finite_number, repeat_of
from evalsite.runlog.store import Run
from evalsite.stats import NoiseTest, repeat_noise_test
from evalsite.stats.pairs import paired_difference

THRESHOLD = 0.05
ALPHA = 0.05
CONFIDENCE = 0.95
SEED = 0
IMPROVED, REGRESSED, UNCHANGED, GT_CHANGED, UNSCORED = "improved", "regressed", "unchanged", "gt_changed", "unscored"
_FLOAT_SLACK = 1e-9


@dataclass(frozen=True)
class ItemChange:
    """One item in both runs. ``rescored``: the baseline side was re-scored against the current
    expected value; ``note`` says why a ``gt_changed`` item could not be (its delta is for reference only)."""

    item_id: str
    baseline_score: float | None
    current_score: float | None
    delta: float | None
    classification: str
    rescored: bool = False
    note: str | None = None


@dataclass(frozen=True)
class EvaluatorChange:
    """One evaluator over the compared items. An item passes an evaluator when every repeat passed
    it without error; pass rates count errors and skips as failures."""

    evaluator: str
    newly_failing: list[str]
    newly_passing: list[str]
    still_failing: list[str]
    baseline_pass_rate: float | None
    current_pass_rate: float | None
    pass_rate_delta: float | None
    baseline_mean: float | None
    current_mean: float | None
    mean_delta: float | None
    baseline_errors: int
    current_errors: int
    error_delta: int


@dataclass(frozen=True)
class RegressionSummary:
    """``compared`` counts items with a score on both sides that are not ``gt_changed``; the means,
    the interval and the paired test are over those items only.

    ``unit`` is ``item``, or ``cluster`` when items declare one: the paired test then flips
    whole clusters and the interval resamples them (``n_units`` of them), as in the verdict.

    ``noise`` is the spread of one repeat's mean (given with ``--noise``, else pooled from the two
    runs' per-repeat means over the ``noise_items`` items present in every repeat of both) and
    ``noise_p`` the test of Δ against it (``stats.repeat_noise_test``). ``within_noise`` is True
    when neither that test nor the paired test rejects at α: a rerun of the same arm is then
    called "beyond noise" in at most 2α of comparisons, and a significant change is never
    "within noise".

    ``net_delta`` is the sum of the item deltas (``mean_delta`` × ``compared``): how many items'
    worth of score moved, net."""

    compared: int
    improved: int
    regressed: int
    unchanged: int
    gt_changed: int
    rescored: int
    baseline_mean: float | None
    current_mean: float | None
    mean_delta: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    p_value: float | None
    test_kind: str | None
    unit: str
    n_units: int
    noise: float | None
    noise_source: str | None
    noise_p: float | None
    noise_items: int | None
    within_noise: bool | None
    net_delta: float | None = None


@dataclass(frozen=True)
class RegressionReport:
    threshold: float
    summary: RegressionSummary
    items: list[ItemChange]
    only_in_baseline: list[str]
    only_in_current: list[str]
    unscored: list[str]
    evaluators: list[EvaluatorChange]
    critical_newly_failing: list[str]
    sequence: PairSequence | None = None  # a stop_when run: current − baseline by its anytime-valid sequence

    def classified(self, classification: str) -> list[ItemChange]:
        return [item for item in self.items if item.classification == classification]


#: Case records by item id (plain dicts of their lines), each item's in repeat order.
CasesByItem = dict[str, list[Any]]


def classify(delta: float, threshold: float) -> str:
    if delta > threshold + _FLOAT_SLACK:
        return IMPROVED
    if delta < -threshold - _FLOAT_SLACK:
        return REGRESSED
    return UNCHANGED


def regression_report(
    project_root: Path, baseline: Run, current: Run, cases: tuple[ScannedCases, ScannedCases], *,
    threshold: float = THRESHOLD, noise: float | None = None, alpha: float = ALPHA, clusters: dict[str, str] | None = None,
    run_code: bool = True,
) -> RegressionReport:
    """Compare ``current`` with ``baseline`` (two runs already found comparable), whose cases are
    ``cases`` (the baseline's, the current run's); ``clusters`` maps item ids to their cluster
    when items declare one; ``run_code`` false re-scores only with evaluators that run no
    project code and call no model.

    Items are aligned by the item matrix of the two runs (every item either recorded, arm 0 the
    baseline); the evaluator figures are the run summaries of the compared items' cases, and
    whole case records are read only for the items whose expected value changed (re-scoring)."""
    old, new = cases[0].columns, cases[1].columns
    matrix = columns_item_matrix([baseline, current], [old, new], shared=False)
    ids = matrix.item_ids
    present = np.asarray(matrix.recorded.any(axis=2))
    shared = [ids[row] for row in np.flatnonzero(present.all(axis=1))]
    first_old, first_new = _first_expected(old), _first_expected(new)
    edited = [i for i in shared if not _same_expected(first_old[i], first_new[i])]
    before, after = cases[0].records_of(set(edited)), cases[1].records_of(set(edited))
    before, after = ({i: sorted(group, key=repeat_of) for i, group in side.items()} for side in (before, after))
    from evalsite.scoring.ground_truth import rescore_items  # the evaluators load only when ground truth was edited

    rescored = rescore_items(project_root, current.header, before, after, edited, run_code=run_code)
    sides = _Sides(matrix)
    gt_changed, rescored_cases = [], []
    for item_id, outcome in rescored.items():
        if outcome.cases is not None:
            rescored_cases += outcome.cases
            sides.rescore_baseline(item_id, outcome.cases)
        else:
            gt_changed.append(replace(sides.change(item_id, threshold), classification=GT_CHANGED, note=outcome.reason))
    left_out = {change.item_id for change in gt_changed}
    kept = [i for i in shared if i not in left_out]
    scored = [sides.change(i, threshold, rescored=i in rescored) for i in kept]
    changes = [c for c in scored if c.delta is not None]
    unscored = [c.item_id for c in scored if c.delta is None]
    listed = set((current.header.fingerprint.get("dataset") or {}).get("critical") or [])
    critical = _critical_items(new, listed)
    kept_set = set(kept)
    old_kept = old.where(_of_items(old, kept_set - set(rescored)))
    if rescored_cases:
        old_kept = joined(old_kept, case_columns(rescored_cases))
    return RegressionReport(
        threshold=threshold,
        summary=_summary(changes, len(gt_changed), sides.noise_test(noise, [c.item_id for c in changes]), alpha, clusters),
        items=sorted(changes + gt_changed, key=lambda c: sides.row[c.item_id]),
        only_in_baseline=[ids[row] for row in np.flatnonzero(present[:, 0] & ~present[:, 1])],
        only_in_current=[ids[row] for row in np.flatnonzero(present[:, 1] & ~present[:, 0])],
        unscored=unscored,
        evaluators=evaluator_changes(old_kept, new.where(_of_items(new, kept_set)), kept, list(new.scores.evaluators)),
        critical_newly_failing=[
            i for i in kept if i in critical and sides.passed(i, 0) is True and sides.passed(i, 1) is False
        ],
    )


def _first_expected(columns: CaseColumns) -> dict[str, str | None]:
    """Item id → the expected value (JSON text) of its first case in repeat order."""
    if columns.expected is None:
        raise ValueError("the cases were read without their expected values")
    order = np.lexsort((np.arange(columns.size), columns.repeat, columns.item))
    firsts = order[np.r_[True, np.diff(columns.item[order]) != 0]] if order.size else order
    return {columns.item_ids[columns.item[row]]: columns.expected[row] for row in firsts.tolist()}


def _same_expected(old: str | None, new: str | None) -> bool:
    """Two expected values as JSON text (None: no value, as JSON null) hold the same value."""
    if old == new:
        return True
    return bool(canonical_json(json.loads(old or "null")) == canonical_json(json.loads(new or "null")))


def _of_items(columns: CaseColumns, item_ids: set[str]) -> np.ndarray:
    """Which cases are of these items (a boolean mask)."""
    wanted = np.array([item_id in item_ids for item_id in columns.item_ids], dtype=bool)
    return wanted[columns.item] if columns.size else np.zeros(0, dtype=bool)


def _critical_items(columns: CaseColumns, listed: set[str]) -> set[str]:
    """Items with a critical case: one that recorded ``critical: true``, or recorded nothing and
    is listed critical by the run's fingerprint (:func:`evalsite.runlog.rows.case_critical`)."""
    in_list = np.array([item_id in listed for item_id in columns.item_ids], dtype=bool)
    critical = (columns.critical == TRUE) | ((columns.critical == NONE) & in_list[columns.item])
    return {columns.item_ids[code] for code in np.unique(columns.item[critical]).tolist()}


class _Sides:
    """Per-item figures of the two runs read from their item matrix (arm 0: the baseline), with
    the baseline's re-scored cases written over its cells: an item's score on a side is its
    mean over the repeats with a score, and it passed when every repeat with a verdict did."""

    def __init__(self, matrix: ItemMatrix):
        self.matrix = replace(matrix, score=matrix.score.copy(), passed=matrix.passed.copy())
        self.row = {item_id: row for row, item_id in enumerate(matrix.item_ids)}
        self._means: tuple[np.ndarray, np.ndarray] | None = None

    def rescore_baseline(self, item_id: str, cases: list[dict[str, Any]]) -> None:
        row, column = self.row[item_id], {repeat: index for index, repeat in enumerate(self.matrix.repeat_ids[0])}
        score, verdicts = self.matrix.score, self.matrix.passed
        score[row, 0, :] = np.nan
        verdicts[row, 0, :] = np.nan
        self._means = None
        for case in cases:  # in repeat order: a later known value replaces an earlier one, as in the matrix
            cell = column[repeat_of(case)]
            if finite_number(case.get("score")) is not None:
                score[row, 0, cell] = case["score"]
            if isinstance(case.get("passed"), bool):
                verdicts[row, 0, cell] = float(case["passed"])

    def mean(self, item_id: str, side: int) -> float | None:
        if self._means is None:
            self._means = self.matrix.means_of("score", 0), self.matrix.means_of("score", 1)
        value = float(self._means[side][self.row[item_id]])
        return None if math.isnan(value) else value

    def passed(self, item_id: str, side: int) -> bool | None:
        return self.matrix.item_passed(self.row[item_id], side)

    def change(self, item_id: str, threshold: float, *, rescored: bool = False) -> ItemChange:
        """An item classified by its delta; ``unscored`` when either side has no score."""
        baseline_score, current_score = self.mean(item_id, 0), self.mean(item_id, 1)
        delta = _difference(current_score, baseline_score)
        classification = UNSCORED if delta is None else classify(delta, threshold)
        return ItemChange(item_id, baseline_score, current_score, delta, classification, rescored)

    def repeat_scores(self, side: int, item_ids: list[str]) -> np.ndarray:
        """Items × repeats scores of one run over some items (NaN where a repeat has no score),
        keeping the repeats those items recorded."""
        rows = np.array([self.row[i] for i in item_ids], dtype=np.int64)
        columns = self.matrix.recorded[rows, side, :].any(axis=0)
        scores: np.ndarray = self.matrix.score[rows, side, :][:, columns]
        return scores

    def noise_test(self, given: float | None, item_ids: list[str]) -> tuple[NoiseTest | None, str | None]:
        """Δ against the repeat-to-repeat spread: the given σ, else the two runs' repeats (aligned
        on the items present in every repeat of both)."""
        if not item_ids:
            return None, None
        test = repeat_noise_test(self.repeat_scores(1, item_ids), self.repeat_scores(0, item_ids), given=given)
        return test, None if test is None else ("given" if given is not None else "repeats")


@dataclass(frozen=True)
class _EvaluatorSide:
    passed: dict[str, bool | None]
    pass_rate: float | None
    mean: float | None
    errors: int


def _evaluator_side(name: str, columns: CaseColumns, run: RunSummary, items: list[str]) -> _EvaluatorSide:
    """One evaluator over the compared items: its figures from the run summary of those items'
    cases (``run``), and per item whether every score passed (None for every item when the
    evaluator has no pass rule, or for an item it did not score)."""
    summary = run.evaluators.get(name)
    if summary is None:
        return _EvaluatorSide({item_id: None for item_id in items}, None, None, 0)
    scores = columns.scores
    mine = scores.evaluator == scores.evaluators.index(name)
    item_of_score = columns.item[scores.case[mine]]
    entries = np.bincount(item_of_score, minlength=len(columns.item_ids))
    passes = np.bincount(item_of_score[(scores.passed[mine] == TRUE) & ~scores.error[mine]], minlength=len(columns.item_ids))
    code = {item_id: index for index, item_id in enumerate(columns.item_ids)}
    passed: dict[str, bool | None] = {}
    for item_id in items:
        index = code.get(item_id)
        scored = index is not None and entries[index] > 0 and summary.ruled
        passed[item_id] = bool(passes[index] == entries[index]) if scored and index is not None else None
    return _EvaluatorSide(passed, summary.pass_rate, summary.mean, summary.errors)


def _difference(new: float | None, old: float | None) -> float | None:
    return None if new is None or old is None else new - old


def evaluator_changes(before: CaseColumns, after: CaseColumns, items: list[str], names: list[str]) -> list[EvaluatorChange]:
    """Each evaluator's change over the compared ``items`` (in that order), from the cases of
    those items on each side (the two sides summarised once)."""
    if not names:
        return []
    old_run, new_run = summarise_run(before), summarise_run(after)
    return [evaluator_change(name, _evaluator_side(name, before, old_run, items), _evaluator_side(name, after, new_run, items),
                             items) for name in names]


def evaluator_change(name: str, old: _EvaluatorSide, new: _EvaluatorSide, items: list[str]) -> EvaluatorChange:
    return EvaluatorChange(
        evaluator=name,
        newly_failing=[i for i in items if old.passed[i] is True and new.passed[i] is False],
        newly_passing=[i for i in items if old.passed[i] is False and new.passed[i] is True],
        still_failing=[i for i in items if old.passed[i] is False and new.passed[i] is False],
        baseline_pass_rate=old.pass_rate,
        current_pass_rate=new.pass_rate,
        pass_rate_delta=_difference(new.pass_rate, old.pass_rate),
        baseline_mean=old.mean,
        current_mean=new.mean,
        mean_delta=_difference(new.mean, old.mean),
        baseline_errors=old.errors,
        current_errors=new.errors,
        error_delta=new.errors - old.errors,
    )


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def _summary(
    changes: list[ItemChange], gt_changed: int, noise: tuple[NoiseTest | None, str | None], alpha: float,
    clusters: dict[str, str] | None,
) -> RegressionSummary:
    baseline = [c.baseline_score for c in changes if c.baseline_score is not None]  # every change has both scores
    current = [c.current_score for c in changes if c.current_score is not None]
    counts = {kind: sum(1 for c in changes if c.classification == kind) for kind in (IMPROVED, REGRESSED, UNCHANGED)}
    mean_delta = fmean(current) - fmean(baseline) if changes else None
    groups = None if not clusters else [clusters.get(c.item_id, f"\0item:{c.item_id}") for c in changes]
    test = paired_difference(current, baseline, groups=groups, seed=SEED, confidence=CONFIDENCE, memo=INTERVALS) if changes else None
    low, high = (test.interval.low, test.interval.high) if test else (None, None)
    low, high = _finite(low), _finite(high)
    noise_test, source = noise
    return RegressionSummary(
        compared=len(changes),
        improved=counts[IMPROVED],
        regressed=counts[REGRESSED],
        unchanged=counts[UNCHANGED],
        gt_changed=gt_changed,
        rescored=sum(1 for c in changes if c.rescored),
        baseline_mean=fmean(baseline) if changes else None,
        current_mean=fmean(current) if changes else None,
        mean_delta=mean_delta,
        ci_low=low,
        ci_high=high,
        confidence=CONFIDENCE,
        p_value=test.p_value if test else None,
        test_kind=test.kind if test else None,
        unit="item" if groups is None else "cluster",
        n_units=test.n_units if test else 0,
        noise=None if noise_test is None else noise_test.spread,
        noise_source=source,
        noise_p=None if noise_test is None else noise_test.p_value,
        noise_items=None if noise_test is None else noise_test.n_items,
        within_noise=None if noise_test is None or test is None else test.p_value >= alpha and noise_test.p_value >= alpha,
        net_delta=math.fsum(c.delta for c in changes if c.delta is not None) if changes else None,
    )
