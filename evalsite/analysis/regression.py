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
from typing import TYPE_CHECKING, Any

import numpy as np

from evalsite.analysis.case_columns import FALSE, NONE, TRUE, CaseColumns, case_columns, joined
from evalsite.analysis.case_scan import ScannedCases
from evalsite.analysis.interval_memo import INTERVALS
from evalsite.analysis.item_changes import (
    CLASSIFICATIONS,
    GT_CHANGED,
    IMPROVED,
    REGRESSED,
    UNCHANGED,
    UNSCORED,
    ItemChanges,
    concatenated,
    item_changes,
)
from evalsite.analysis.items import ItemMatrix, columns_item_matrix
from evalsite.analysis.stopped import PairSequence
from evalsite.analysis.summary import EvaluatorSummary, evaluator_summaries
from evalsite.runlog.hashing import canonical_json
from evalsite.runlog.rows import finite_number, repeat_of
from evalsite.runlog.store import Run
from evalsite.stats import NoiseTest, repeat_noise_test
from evalsite.stats.pairs import paired_difference

if TYPE_CHECKING:
    from evalsite.scoring.ground_truth import Rescored

THRESHOLD = 0.05
ALPHA = 0.05
CONFIDENCE = 0.95
SEED = 0
_FLOAT_SLACK = 1e-9
_CODE = {name: code for code, name in enumerate(CLASSIFICATIONS)}


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
    items: ItemChanges  # in item order
    only_in_baseline: list[str]
    only_in_current: list[str]
    unscored: list[str]
    evaluators: list[EvaluatorChange]
    critical_newly_failing: list[str]
    sequence: PairSequence | None = None  # a stop_when run: current − baseline by its anytime-valid sequence

    def classified(self, classification: str) -> ItemChanges:
        return self.items.of(classification)


#: Case records by item id (plain dicts of their lines), each item's in repeat order.
CasesByItem = dict[str, list[Any]]


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
    baseline) and every per-item figure is an array over its rows; the evaluator figures are the
    evaluator summaries of the compared items' cases, and whole case records are read only for
    the items whose expected value changed (re-scoring)."""
    old, new = cases[0].columns, cases[1].columns
    matrix = columns_item_matrix([baseline, current], [old, new], shared=False)
    ids = matrix.item_ids
    codes = _codes_of_rows(ids, old), _codes_of_rows(ids, new)
    present = np.asarray(matrix.recorded.any(axis=2))
    shared = np.flatnonzero(present.all(axis=1))
    edited = [ids[row] for row in _edited_rows(shared, codes, old, new).tolist()]
    before, after = cases[0].records_of(set(edited)), cases[1].records_of(set(edited))
    before, after = ({i: sorted(group, key=repeat_of) for i, group in side.items()} for side in (before, after))
    rescored: dict[str, Rescored] = {}
    if edited:
        from evalsite.scoring.ground_truth import rescore_items  # the evaluators load only when ground truth was edited

        rescored = rescore_items(project_root, current.header, before, after, edited, run_code=run_code)
    sides = _Sides(matrix)
    rescored_cases, rescored_rows, gt_rows, notes = [], [], [], []
    for item_id, outcome in rescored.items():
        if outcome.cases is not None:
            rescored_cases += outcome.cases
            rescored_rows.append(sides.row[item_id])
            sides.rescore_baseline(item_id, outcome.cases)
        else:
            gt_rows.append(sides.row[item_id])
            notes.append(outcome.reason)
    gt_at = np.array(gt_rows, dtype=np.int64)
    gt_changed = sides.changes(gt_at, threshold, [], GT_CHANGED, notes)
    kept = np.setdiff1d(shared, gt_at)
    scored = sides.changes(kept, threshold, rescored_rows)
    with_delta = ~np.isnan(scored.delta)
    changes = scored.take(with_delta)
    changed_rows = kept[with_delta]
    in_list = set((current.header.fingerprint.get("dataset") or {}).get("critical") or [])
    critical = _critical_codes(new, in_list)[codes[1][kept]]
    old_kept = old.where(_of_codes(old, codes[0][np.setdiff1d(kept, rescored_rows)]))
    if rescored_cases:
        old_kept = joined(old_kept, case_columns(rescored_cases))
    verdicts = sides.verdicts(0), sides.verdicts(1)
    return RegressionReport(
        threshold=threshold,
        summary=_summary(changes, len(gt_changed), sides.noise_test(noise, changed_rows), alpha, clusters),
        items=concatenated([changes, gt_changed], np.argsort(np.r_[changed_rows, gt_at], kind="stable")),
        only_in_baseline=[ids[row] for row in np.flatnonzero(present[:, 0] & ~present[:, 1])],
        only_in_current=[ids[row] for row in np.flatnonzero(present[:, 1] & ~present[:, 0])],
        unscored=scored.take(~with_delta).item_ids(),
        evaluators=evaluator_changes(old_kept, new.where(_of_codes(new, codes[1][kept])),
                                     [ids[row] for row in kept.tolist()], (codes[0][kept], codes[1][kept]),
                                     list(new.scores.evaluators)),
        critical_newly_failing=[ids[row] for row in kept[critical & (verdicts[0][kept] == TRUE)
                                                          & (verdicts[1][kept] == FALSE)].tolist()],
    )


def _codes_of_rows(item_ids: tuple[str, ...], columns: CaseColumns) -> np.ndarray:
    """Each matrix row's item code in ``columns`` (-1: not among them)."""
    code = {item_id: index for index, item_id in enumerate(columns.item_ids)}
    return np.array([code.get(item_id, -1) for item_id in item_ids], dtype=np.int64)


def _edited_rows(rows: np.ndarray, codes: tuple[np.ndarray, np.ndarray], old: CaseColumns, new: CaseColumns) -> np.ndarray:
    """The ``rows`` (items on both sides) whose first case's expected value differs between the sides."""
    before, after = _first_expected(old)[codes[0][rows]], _first_expected(new)[codes[1][rows]]
    differ = np.flatnonzero(before != after)
    return rows[[index for index in differ.tolist() if not _same_expected(before[index], after[index])]]


def _first_expected(columns: CaseColumns) -> np.ndarray:
    """Per item code, the expected value (JSON text) of its first case in repeat order (None: no case)."""
    if columns.expected is None:
        raise ValueError("the cases were read without their expected values")
    order = np.lexsort((np.arange(columns.size), columns.repeat, columns.item))
    firsts = order[np.r_[True, np.diff(columns.item[order]) != 0]] if order.size else order
    expected = np.full(len(columns.item_ids), None, dtype=object)
    expected[columns.item[firsts]] = columns.expected[firsts]
    return expected


def _same_expected(old: str | None, new: str | None) -> bool:
    """Two expected values as JSON text (None: no value, as JSON null) hold the same value."""
    if old == new:
        return True
    return bool(canonical_json(json.loads(old or "null")) == canonical_json(json.loads(new or "null")))


def _of_codes(columns: CaseColumns, item_codes: np.ndarray) -> np.ndarray:
    """Which cases are of these items (codes into ``columns.item_ids``; a boolean mask)."""
    wanted = np.zeros(len(columns.item_ids), dtype=bool)
    wanted[item_codes[item_codes >= 0]] = True
    return wanted[columns.item] if columns.size else np.zeros(0, dtype=bool)


def _critical_codes(columns: CaseColumns, listed: set[str]) -> np.ndarray:
    """Per item code, whether the item has a critical case: one that recorded ``critical: true``,
    or recorded nothing and is listed critical by the run's fingerprint
    (:func:`evalsite.runlog.rows.case_critical`); one more False at the end, for code -1."""
    in_list = np.array([item_id in listed for item_id in columns.item_ids], dtype=bool)
    critical = (columns.critical == TRUE) | ((columns.critical == NONE) & in_list[columns.item])
    found = np.zeros(len(columns.item_ids) + 1, dtype=bool)
    found[columns.item[critical]] = True
    return found


class _Sides:
    """Per-item figures of the two runs read from their item matrix (arm 0: the baseline), with
    the baseline's re-scored cases written over its cells: an item's score on a side is its
    mean over the repeats with a score, and it passed when every repeat with a verdict did."""

    def __init__(self, matrix: ItemMatrix):
        self.matrix = replace(matrix, score=matrix.score.copy(), passed=matrix.passed.copy())
        self.row = {item_id: row for row, item_id in enumerate(matrix.item_ids)}
        self.ids = np.empty(len(matrix.item_ids), dtype=object)
        self.ids[:] = matrix.item_ids
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

    def means(self) -> tuple[np.ndarray, np.ndarray]:
        if self._means is None:
            self._means = self.matrix.means_of("score", 0), self.matrix.means_of("score", 1)
        return self._means

    def verdicts(self, side: int) -> np.ndarray:
        """Per row: TRUE when every repeat with a verdict passed, FALSE when one failed, NONE without one."""
        values = self.matrix.passed[:, side, :]
        known = ~np.isnan(values)
        passed = np.where(np.all((values == 1.0) | ~known, axis=1), TRUE, FALSE)
        return np.where(known.any(axis=1), passed, NONE)

    def changes(self, rows: np.ndarray, threshold: float, rescored: list[int], classification: str | None = None,
                notes: list[str | None] | None = None) -> ItemChanges:
        """The rows as items classified by their delta (``unscored`` when either side has no score),
        or all as ``classification`` when given; ``rescored``: the rows whose baseline side was re-scored."""
        old, new = (means[rows] for means in self.means())
        delta = new - old
        if classification is None:
            code = np.select([np.isnan(delta), delta > threshold + _FLOAT_SLACK, delta < -threshold - _FLOAT_SLACK],
                             [_CODE[UNSCORED], _CODE[IMPROVED], _CODE[REGRESSED]], _CODE[UNCHANGED])
        else:
            code = np.full(rows.size, _CODE[classification])
        return item_changes(self.ids[rows], old, new, delta, code, np.isin(rows, rescored), notes)

    def repeat_scores(self, side: int, rows: np.ndarray) -> np.ndarray:
        """Items × repeats scores of one run over some rows (NaN where a repeat has no score),
        keeping the repeats those items recorded."""
        columns = self.matrix.recorded[rows, side, :].any(axis=0)
        scores: np.ndarray = self.matrix.score[rows, side, :][:, columns]
        return scores

    def noise_test(self, given: float | None, rows: np.ndarray) -> tuple[NoiseTest | None, str | None]:
        """Δ against the repeat-to-repeat spread: the given σ, else the two runs' repeats (aligned
        on the items present in every repeat of both)."""
        if not rows.size:
            return None, None
        test = repeat_noise_test(self.repeat_scores(1, rows), self.repeat_scores(0, rows), given=given)
        return test, None if test is None else ("given" if given is not None else "repeats")


@dataclass(frozen=True)
class _EvaluatorSide:
    passed: np.ndarray  # per compared item: TRUE, FALSE or NONE
    pass_rate: float | None
    mean: float | None
    errors: int


def _evaluator_side(name: str, columns: CaseColumns, run: dict[str, EvaluatorSummary], codes: np.ndarray) -> _EvaluatorSide:
    """One evaluator over the compared items (``codes``: their codes in ``columns``, -1 for none):
    its figures from the evaluator summaries of those items' cases (``run``), and per item whether
    every score passed (NONE for every item when the evaluator has no pass rule, or for an item it
    did not score)."""
    summary = run.get(name)
    if summary is None:
        return _EvaluatorSide(np.full(codes.size, NONE), None, None, 0)
    scores = columns.scores
    mine = scores.evaluator == scores.evaluators.index(name)
    item_of_score = columns.item[scores.case[mine]]
    entries = np.bincount(item_of_score, minlength=len(columns.item_ids) + 1)
    passes = np.bincount(item_of_score[(scores.passed[mine] == TRUE) & ~scores.error[mine]],
                         minlength=len(columns.item_ids) + 1)
    # a code of -1 reads the zero counts at the end
    verdict = np.where(passes[codes] == entries[codes], TRUE, FALSE)
    passed = np.where((entries[codes] > 0) & summary.ruled, verdict, NONE)
    return _EvaluatorSide(passed, summary.pass_rate, summary.mean, summary.errors)


def _difference(new: float | None, old: float | None) -> float | None:
    return None if new is None or old is None else new - old


def evaluator_changes(before: CaseColumns, after: CaseColumns, items: list[str], codes: tuple[np.ndarray, np.ndarray],
                      names: list[str]) -> list[EvaluatorChange]:
    """Each evaluator's change over the compared ``items`` (in that order; ``codes``: their codes
    in ``before`` and ``after``), from the cases of those items on each side (each side's
    evaluators summarised once; which rows are critical is not asked)."""
    if not names:
        return []
    old_run, new_run = evaluator_summaries(before, known=False), evaluator_summaries(after, known=False)
    return [evaluator_change(name, _evaluator_side(name, before, old_run, codes[0]),
                             _evaluator_side(name, after, new_run, codes[1]), items) for name in names]


def evaluator_change(name: str, old: _EvaluatorSide, new: _EvaluatorSide, items: list[str]) -> EvaluatorChange:
    def listed(was: int, now: int) -> list[str]:
        return [items[index] for index in np.flatnonzero((old.passed == was) & (new.passed == now)).tolist()]

    return EvaluatorChange(
        evaluator=name,
        newly_failing=listed(TRUE, FALSE),
        newly_passing=listed(FALSE, TRUE),
        still_failing=listed(FALSE, FALSE),
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
    changes: ItemChanges, gt_changed: int, noise: tuple[NoiseTest | None, str | None], alpha: float,
    clusters: dict[str, str] | None,
) -> RegressionSummary:
    baseline, current = changes.baseline_score.tolist(), changes.current_score.tolist()  # every change has both scores
    counts = np.bincount(changes.code, minlength=len(CLASSIFICATIONS)).tolist()
    mean_delta = fmean(current) - fmean(baseline) if changes else None
    groups = None if not clusters else [clusters.get(i, f"\0item:{i}") for i in changes.item_ids()]
    test = paired_difference(current, baseline, groups=groups, seed=SEED, confidence=CONFIDENCE, memo=INTERVALS) if changes else None
    low, high = (test.interval.low, test.interval.high) if test else (None, None)
    low, high = _finite(low), _finite(high)
    noise_test, source = noise
    return RegressionSummary(
        compared=len(changes),
        improved=counts[_CODE[IMPROVED]],
        regressed=counts[_CODE[REGRESSED]],
        unchanged=counts[_CODE[UNCHANGED]],
        gt_changed=gt_changed,
        rescored=int(np.count_nonzero(changes.rescored)),
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
        net_delta=math.fsum(changes.delta.tolist()) if changes else None,
    )
