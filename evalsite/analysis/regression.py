"""The regression report: a run against its baseline, item by item, evaluator by evaluator, in sum.

Items pair on ``item_id``; an item's score on one side is the mean of its case scores over the
repeats. An item whose expected value changed between the runs is re-scored from the baseline's
stored output (:mod:`evalsite.scoring.ground_truth`); if that fails it is listed under ``gt_changed`` and left
out of every other number. Items in only one run are listed apart, never counted as regressions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from evalsite.analysis.items import ItemMatrix, runs_item_matrix
from evalsite.analysis.summary import RunSummary, summarise_run
from evalsite.runlog.hashing import canonical_json
from evalsite.runlog.records import Case
from evalsite.runlog.rows import case_critical, finite_number, repeat_of
from evalsite.runlog.store import Run
from evalsite.scoring.ground_truth import rescore_items
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

    def classified(self, classification: str) -> list[ItemChange]:
        return [item for item in self.items if item.classification == classification]


#: Case records by item id: typed cases as read, or the plain dicts re-scoring returns.
CasesByItem = dict[str, list[Any]]


def cases_by_item(cases: Iterable[Mapping[str, Any]]) -> CasesByItem:
    """A run's case records by item id, each item's in repeat order (what re-scoring, the
    evaluator figures and the comparison matrix's outputs read; scores come from the item matrix)."""
    grouped: CasesByItem = {}
    for case in sorted(cases, key=lambda c: c.get("repeat") or 0):
        grouped.setdefault(str(case["item_id"]), []).append(case)
    return grouped


def classify(delta: float, threshold: float) -> str:
    if delta > threshold + _FLOAT_SLACK:
        return IMPROVED
    if delta < -threshold - _FLOAT_SLACK:
        return REGRESSED
    return UNCHANGED


def regression_report(
    project_root: Path, baseline: Run, current: Run, *, threshold: float = THRESHOLD, noise: float | None = None,
    alpha: float = ALPHA, clusters: dict[str, str] | None = None, run_code: bool = True,
) -> RegressionReport:
    """Compare ``current`` with ``baseline`` (two runs already found comparable); ``clusters``
    maps item ids to their cluster when items declare one; ``run_code`` false re-scores only with
    evaluators that run no project code and call no model.

    Items are aligned by the item matrix of the two runs (every item either recorded, arm 0 the
    baseline); the case records are read only for expected values, re-scoring, critical flags
    and the per-evaluator figures."""
    matrix = runs_item_matrix([baseline, current], shared=False)
    before, after = cases_by_item(baseline.cases), cases_by_item(current.cases)
    ids = matrix.item_ids
    present = np.asarray(matrix.recorded.any(axis=2))
    shared = [ids[row] for row in np.flatnonzero(present.all(axis=1))]
    edited = [i for i in shared if not _same_expected(before[i], after[i])]
    rescored = rescore_items(project_root, current.header, before, after, edited, run_code=run_code)
    sides = _Sides(matrix)
    gt_changed = []
    for item_id, outcome in rescored.items():
        if outcome.cases is not None:
            before[item_id] = outcome.cases
            sides.rescore_baseline(item_id, outcome.cases)
        else:
            gt_changed.append(replace(sides.change(item_id, threshold), classification=GT_CHANGED, note=outcome.reason))
    left_out = {change.item_id for change in gt_changed}
    kept = [i for i in shared if i not in left_out]
    scored = [sides.change(i, threshold, rescored=i in rescored) for i in kept]
    changes = [c for c in scored if c.delta is not None]
    unscored = [c.item_id for c in scored if c.delta is None]
    listed = set((current.header.fingerprint.get("dataset") or {}).get("critical") or [])
    critical = {i for i in kept if any(case_critical(c, {i: i in listed}) for c in after[i])}
    return RegressionReport(
        threshold=threshold,
        summary=_summary(changes, len(gt_changed), sides.noise_test(noise, [c.item_id for c in changes]), alpha, clusters),
        items=sorted(changes + gt_changed, key=lambda c: sides.row[c.item_id]),
        only_in_baseline=[ids[row] for row in np.flatnonzero(present[:, 0] & ~present[:, 1])],
        only_in_current=[ids[row] for row in np.flatnonzero(present[:, 1] & ~present[:, 0])],
        unscored=unscored,
        evaluators=evaluator_changes(
            {i: before[i] for i in kept}, {i: after[i] for i in kept}, _evaluator_names(current.cases)
        ),
        critical_newly_failing=[
            i for i in kept if i in critical and sides.passed(i, 0) is True and sides.passed(i, 1) is False
        ],
    )


def _same_expected(before: list[Any], after: list[Any]) -> bool:
    old, new = before[0].get("expected"), after[0].get("expected")
    if type(old) is str and type(new) is str:  # two strings' canonical JSON is equal exactly when they are
        return old == new
    return canonical_json(old) == canonical_json(new)


class _Sides:
    """Per-item figures of the two runs read from their item matrix (arm 0: the baseline), with
    the baseline's re-scored cases written over its cells: an item's score on a side is its
    mean over the repeats with a score, and it passed when every repeat with a verdict did."""

    def __init__(self, matrix: ItemMatrix):
        self.matrix = replace(matrix, score=matrix.score.copy(), passed=matrix.passed.copy())
        self.row = {item_id: row for row, item_id in enumerate(matrix.item_ids)}

    def rescore_baseline(self, item_id: str, cases: list[dict[str, Any]]) -> None:
        row, column = self.row[item_id], {repeat: index for index, repeat in enumerate(self.matrix.repeat_ids[0])}
        score, verdicts = self.matrix.score, self.matrix.passed
        score[row, 0, :] = np.nan
        verdicts[row, 0, :] = np.nan
        for case in cases:  # in repeat order: a later known value replaces an earlier one, as in the matrix
            cell = column[repeat_of(case)]
            if finite_number(case.get("score")) is not None:
                score[row, 0, cell] = case["score"]
            if isinstance(case.get("passed"), bool):
                verdicts[row, 0, cell] = float(case["passed"])

    def mean(self, item_id: str, side: int) -> float | None:
        return self.matrix.mean_of("score", self.row[item_id], side)

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


def _evaluator_names(cases: Iterable[Mapping[str, Any]]) -> list[str]:
    names: dict[str, None] = {}
    for case in cases:
        for score in case.get("scores") or []:
            names.setdefault(score["evaluator"], None)
    return list(names)


@dataclass(frozen=True)
class _EvaluatorSide:
    passed: dict[str, bool | None]
    pass_rate: float | None
    mean: float | None
    errors: int


def _evaluator_side(name: str, cases_by_id: CasesByItem, run: RunSummary) -> _EvaluatorSide:
    """One evaluator over the compared items: its figures from the run summary of those items'
    cases (``run``), and per item whether every score passed (None for every item when the
    evaluator has no pass rule)."""
    summary = run.evaluators.get(name)
    if summary is None:
        return _EvaluatorSide({item_id: None for item_id in cases_by_id}, None, None, 0)
    passed: dict[str, bool | None] = {}
    for item_id, cases in cases_by_id.items():
        entries = [s for c in cases for s in c.get("scores") or [] if s.get("evaluator") == name]
        outcomes = [s.get("passed") is True and not s.get("error") for s in entries]
        passed[item_id] = all(outcomes) if outcomes and summary.ruled else None
    return _EvaluatorSide(passed, summary.pass_rate, summary.mean, summary.errors)


def _difference(new: float | None, old: float | None) -> float | None:
    return None if new is None or old is None else new - old


def _summary_of(cases_by_id: CasesByItem) -> RunSummary:
    """The run summary (:func:`~evalsite.analysis.summary.summarise_run`) of these cases, read
    from their lines as written (a typed case is a mapping of its line; the line is faster to read)."""
    return summarise_run(c.raw if isinstance(c, Case) else c for cases in cases_by_id.values() for c in cases)


def evaluator_changes(before: CasesByItem, after: CasesByItem, names: list[str]) -> list[EvaluatorChange]:
    """Each evaluator's change over the compared items (the two sides summarised once)."""
    if not names:
        return []
    old_run, new_run = _summary_of(before), _summary_of(after)
    return [evaluator_change(name, before, after, old_run, new_run) for name in names]


def evaluator_change(
    name: str, before: CasesByItem, after: CasesByItem, old_run: RunSummary, new_run: RunSummary
) -> EvaluatorChange:
    old, new = _evaluator_side(name, before, old_run), _evaluator_side(name, after, new_run)
    items = [item_id for item_id in before if item_id in after]  # in the order the caller gives (natural order)
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
    test = paired_difference(current, baseline, groups=groups, seed=SEED, confidence=CONFIDENCE) if changes else None
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
