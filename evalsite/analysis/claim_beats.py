"""``A beats B`` claims, asked of the verdict instead of a test of their own.

``{{ claim: arm=A beats arm=B on dataset=D, p < 0.05 }}`` holds exactly when the verdict of
dataset D — the runs ``evalsite leaderboard --dataset D`` chooses, its metric, its clusters, with
excluded runs left out — separates A above B at that α, Holm-corrected over every pair the
leaderboard shows; the claim's numbers are that verdict's pair. With ``(unadjusted)`` the claim
reads the pair's own paired test instead (the same cluster-aware test, without the Holm family);
when a side names a run the leaderboard does not show (``run=`` an older run), that test is the
verdict of the two runs alone. docs/reference/claims.md states the rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalsite.analysis.claim_syntax import Beats, Selector
from evalsite.analysis.db import RunsDatabase
from evalsite.analysis.leaderboard import ArmsOnDataset, arms_of_selection, dataset_verdict
from evalsite.analysis.selection import Selection, require_comparable, runs_by_reference, select_runs
from evalsite.analysis.verdict import PairVerdict, Verdict, choose_metric, level_text, sequence_text
from evalsite.analysis.wording import p_clause
from evalsite.errors import EvalsiteError
from evalsite.project import Project
from evalsite.stats import Interval

if TYPE_CHECKING:
    from evalsite.analysis.claims import ClaimCheck, Numbers, ResolvedRun, RunMetrics

HOLDS, FAILS = "holds", "fails"
#: What a claim's ``adjustment`` says when it asked for the one pair's own test.
UNADJUSTED_LABEL = "unadjusted"


class Uncheckable(Exception):
    """The runs cannot decide a claim (unknown arm, no run, unknown cost…); carries the reason."""


@dataclass(frozen=True)
class Asked:
    """A verdict a claim reads: the arms' data, the verdict, and which rows the two sides are."""

    data: ArmsOnDataset
    verdict: Verdict
    winner: int
    loser: int
    where: str


@dataclass
class DatasetVerdicts:
    """The verdicts a set of reports asks, each computed once per (dataset, evaluator, α)."""

    project: Project
    database: RunsDatabase
    _found: dict[tuple[str, str | None, float], tuple[ArmsOnDataset, Verdict] | Uncheckable] = field(default_factory=dict)

    def leaderboard(self, dataset_id: str, evaluator: str | None, alpha: float) -> tuple[ArmsOnDataset, Verdict]:
        """The verdict ``evalsite leaderboard --dataset`` gives (``--evaluator``, ``--alpha``)."""
        key = (dataset_id, evaluator, alpha)
        if key not in self._found:
            try:
                self._found[key] = self._verdict(select_runs(self.database, dataset_id, evaluator), evaluator, alpha)
            except EvalsiteError as exc:
                self._found[key] = Uncheckable(exc.message)
        found = self._found[key]
        if isinstance(found, Uncheckable):
            raise found
        return found

    def alone(self, run_ids: list[str], evaluator: str | None, alpha: float) -> tuple[ArmsOnDataset, Verdict]:
        """The verdict of two runs alone (a family of one pair: its Holm p is its own p)."""
        try:
            arms = runs_by_reference(self.project.runs_dir, run_ids)
            require_comparable(arms[0], arms[1:])
            selection = Selection(arms[0].dataset_id or "", tuple(arms), (), arms[0].evaluators)
            return self._verdict(selection, evaluator, alpha)
        except EvalsiteError as exc:
            raise Uncheckable(exc.message) from None

    def _verdict(self, selection: Selection, evaluator: str | None, alpha: float) -> tuple[ArmsOnDataset, Verdict]:
        data = arms_of_selection(self.project, self.database, selection, evaluator)
        metric = choose_metric("score", None, self.project.settings)
        return data, dataset_verdict(data, alpha=alpha, metric=metric)


def check_beats(claim: Beats, metrics: RunMetrics) -> ClaimCheck:
    """Decide ``winner beats loser`` from the verdict it asks (see the module docstring)."""
    winner, loser = metrics.resolve(claim.winner), metrics.resolve(claim.loser)
    if winner.dataset_id != loser.dataset_id:
        raise Uncheckable(f"not comparable: dataset {winner.dataset_id} vs {loser.dataset_id}")
    asked = _ask(claim, metrics.verdicts, winner, loser)
    pair = asked.verdict.pair(asked.winner, asked.loser)
    numbers = _numbers(claim, asked, pair)
    # a stop_when batch's pair has no fixed-n test: its sequence decides, (unadjusted) or not
    separated = pair.difference.p_value < claim.alpha if claim.unadjusted and pair.sequence is None else pair.separated
    holds = pair.ahead == asked.winner and separated
    runs = [asked.data.matrix.arms[asked.winner].run_id, asked.data.matrix.arms[asked.loser].run_id]
    return (HOLDS if holds else FAILS), _detail(claim, asked, pair, numbers, holds), numbers, runs


def _ask(claim: Beats, verdicts: DatasetVerdicts, winner: ResolvedRun, loser: ResolvedRun) -> Asked:
    data, verdict = verdicts.leaderboard(winner.dataset_id, claim.evaluator, claim.alpha)
    rows = [_leaderboard_row(data.selection, side, run) for side, run in ((claim.winner, winner), (claim.loser, loser))]
    where = f"the leaderboard of {data.selection.dataset_id}"
    missing = [(side, run, why) for (side, run), (row, why) in zip(((claim.winner, winner), (claim.loser, loser)), rows)
               if row is None]
    if missing and not claim.unadjusted:
        shown = "; ".join(f"run {run.run_id} ({side.text()}) is not on {where}: {why}" for side, run, why in missing)
        raise Uncheckable(f"{shown}; add (unadjusted) after the p bound to test the two runs alone")
    if missing:
        run_ids = [run.run_id if row is None else data.matrix.arms[row].run_id
                   for (row, _), run in zip(rows, (winner, loser))]
        data, verdict = verdicts.alone(run_ids, claim.evaluator, claim.alpha)
        return Asked(data, verdict, 0, 1, f"runs {run_ids[0]} and {run_ids[1]} alone")
    first, second = (row for row, _ in rows)
    assert first is not None and second is not None
    if first == second:
        raise Uncheckable(f"both sides are the run {data.matrix.arms[first].run_id}")
    return Asked(data, verdict, first, second, where)


def _leaderboard_row(selection: Selection, side: Selector, run: ResolvedRun) -> tuple[int | None, str]:
    """The leaderboard row a side names, or None with the reason its run is not shown. An ``arm=``
    side is the arm's row and must be on the leaderboard (else it cannot be checked); a ``run=``
    side is the row of that very run."""
    if side.run:
        found = [index for index, arm in enumerate(selection.arms) if arm.run_id == run.run_id]
        reason = next((left.reason for left in selection.left_out if left.run_id == run.run_id), "another run stands for it")
        return (found[0], "") if found else (None, reason)
    found = [index for index, arm in enumerate(selection.arms) if arm.arm_id == side.arm]
    if len(found) > 1:
        labels = ", ".join(selection.arms[index].label for index in found)
        raise Uncheckable(f"arm {side.arm!r} has {len(found)} configs on the leaderboard of {selection.dataset_id} "
                          f"({labels}); name one with run=…")
    if not found:
        left = [f"{left.run_id}: {left.reason}" for left in selection.left_out if left.arm_id == side.arm]
        raise Uncheckable(f"arm {side.arm!r} is not on the leaderboard of {selection.dataset_id}"
                          + (f" ({left[-1]})" if left else ""))
    return found[0], ""


def _numbers(claim: Beats, asked: Asked, pair: PairVerdict) -> Numbers:
    """The verdict's pair, oriented as the claim reads it (winner − loser), with the interval that
    agrees with the claim's test: the pair's Holm-level interval, or with ``(unadjusted)`` its raw
    bootstrap interval (so it lies above 0 exactly when the claim holds, Holm or raw)."""
    difference = pair.difference
    interval = _interval(claim, pair)
    sign = 1.0 if pair.ahead == asked.winner else -1.0
    low, high = sorted((sign * interval.low, sign * interval.high))
    return {
        "mean_diff": sign * difference.mean_diff, "low": low, "high": high, "confidence": interval.confidence,
        "p_value": math.nan if pair.sequence is not None else difference.p_value if claim.unadjusted else pair.holm_p,
        "adjustment": UNADJUSTED_LABEL if claim.unadjusted and pair.sequence is None else asked.verdict.correction,
        "unit": difference.unit, "n_units": difference.n_units, "n": difference.n_items, "test": difference.kind,
        "dataset_id": asked.data.selection.dataset_id,
    }


def _interval(claim: Beats, pair: PairVerdict) -> Interval:
    """The pair's Holm-level interval (its sequence's at the stopping look for a stop_when batch),
    or its raw bootstrap one for an ``(unadjusted)`` claim."""
    return pair.difference.interval if claim.unadjusted and pair.sequence is None else pair.interval


def _detail(claim: Beats, asked: Asked, pair: PairVerdict, numbers: Numbers, holds: bool) -> str:
    labels = asked.data.matrix.arms
    winner, loser = labels[asked.winner].label, labels[asked.loser].label
    unit = "" if numbers["unit"] == "item" else f" in {numbers['n_units']} clusters"
    test, level = numbers["test"], level_text(_interval(claim, pair))
    if pair.sequence is not None:
        outcome = "separated" if holds else (f"{loser} is listed ahead" if pair.ahead != asked.winner else "not separated")
        return f"{sequence_text(pair)}{unit}, {asked.verdict.correction}, on {asked.where} — {outcome}"
    if claim.unadjusted:
        shown = f"{level} raw bootstrap interval"
        p_text = f"{p_clause(float(numbers['p_value']))} {UNADJUSTED_LABEL} ({test} test of this pair alone, no Holm family)"
    else:
        shown = f"{level} Holm-level interval"
        p_text = f"{p_clause(float(numbers['p_value']))} {asked.verdict.correction} ({test} test)"
    if holds:
        outcome = "separated"
    elif pair.ahead != asked.winner:
        outcome = f"{loser} is listed ahead"
    else:
        outcome = "not separated"
    return (f"{winner} − {loser}: Δ {numbers['mean_diff']:+.4f} [{numbers['low']:+.4f}, {numbers['high']:+.4f}] ({shown}) "
            f"over {numbers['n']} items{unit}, {p_text} on {asked.where} — {outcome}")
