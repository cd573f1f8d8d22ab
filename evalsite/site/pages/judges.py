"""``judges.html``: each judge against the human ratings — Cohen's κ and raw agreement with their
bootstrap intervals, the confusion counts and the cases where they disagree — as
:func:`evalsite.analysis.judge_agreement.judge_agreement` computes them (the figures
``evalsite judge-agreement`` prints). The page computes nothing itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalsite.analysis.judge_agreement import JudgeAgreement, judge_agreement
from evalsite.analysis.review import ratings
from evalsite.runlog.decisions import REVIEW
from evalsite.runlog.store import slug
from evalsite.site import paths
from evalsite.site.inputs import ProjectInputs
from evalsite.site.pages import Kit, PageContext, PageJob, doc
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Bounds, Column, Link, ShownInterval, Table

SUMMARY_COLUMNS = [
    Column("evaluator", "evaluator", "code"),
    Column("n", "cases compared", "count", "rated pass or fail by the reviewers, with a verdict of the judge"),
    Column("kappa", "Cohen's κ", "interval", "with its 95% percentile bootstrap interval over the cases"),
    Column("raw", "raw agreement", "interval", "share of cases labelled alike, with its 95% bootstrap interval"),
    Column("unsure", "unsure", "count", "cases every reviewer rated unsure (left out)"),
    Column("split", "split", "count", "cases the reviewers disagree on (left out)"),
    Column("no_verdict", "no verdict", "count", "rated cases the judge errored on or skipped (left out)"),
]
DISAGREEMENT_COLUMNS = [
    Column("run", "run", "code"), Column("arm", "arm"), Column("item", "item", "code"), Column("repeat", "repeat", "count"),
    Column("judge", "judge"), Column("score", "judge score", "number"), Column("human", "humans"),
    Column("reviewers", "reviewers"), Column("comments", "comments"),
]


@dataclass(kw_only=True)
class JudgeView:
    """One judge's agreement with the human ratings."""

    evaluator: str = doc("The evaluator's name.")
    versions: list[str] = doc("The evaluator versions pooled (one per rubric, judge model and prompt).")
    n: int = doc("Cases compared: rated pass or fail by the reviewers, with a verdict of the judge.")
    kappa: float | None = doc("Cohen's κ (None when undefined: one label for every case).")
    raw: float | None = doc("Raw agreement: the share of cases labelled alike.")
    bootstrap: str = doc("How the intervals were computed (resamples, seed, confidence).")
    confusion: Table = doc("Judge pass / fail against human pass / fail, as counts.")
    disagreements: Table = doc("Every case where the judge and the humans disagree, linked to its run.")


@dataclass(kw_only=True)
class JudgesPage(PageContext):
    """``judges.html``: every judge against the human ratings."""

    ratings: int = doc("Ratings recorded in runs/decisions.jsonl (one per reviewer and case, the latest).")
    summary: Table = doc("One row per judge: κ and raw agreement with intervals, and the cases left out.")
    judges: list[JudgeView] = doc("Each judge's confusion counts and disagreements.")


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[PageJob]:
    """One page, built from the decisions log and the runs it rates (a new unrated run leaves it alone)."""
    rated = sorted({d.run_id for d in inputs.decisions if d.action == REVIEW and d.run_id in inputs.by_id})
    return [PageJob("judges", ("decisions", *(f"run:{run_id}" for run_id in rated)), _render)]


def _render(kit: Kit) -> dict[str, bytes]:
    runs_dir = kit.inputs.project.runs_dir
    found = judge_agreement(runs_dir)
    summary = Table("judges", SUMMARY_COLUMNS, [_summary_row(j) for j in found], sortable=False)
    views = [_view(j, kit.inputs) for j in found]
    return kit.page(paths.JUDGES, "judges.html", JudgesPage(
        title="Judges against human review", ratings=len(ratings(runs_dir)), summary=summary, judges=views))


def _summary_row(found: JudgeAgreement) -> dict[str, Any]:
    a = found.agreement
    return {"evaluator": found.evaluator, "n": a.n, "kappa": _shown(a.kappa, a.kappa_interval),
            "raw": _shown(a.raw, a.raw_interval), "unsure": found.unsure, "split": found.split,
            "no_verdict": found.no_verdict}


def _shown(value: float, interval: Bounds) -> ShownInterval:
    def finite(x: float) -> float | None:
        return None if x != x else x

    return ShownInterval(finite(value), finite(interval.low), finite(interval.high))


def _view(found: JudgeAgreement, inputs: ProjectInputs) -> JudgeView:
    a, c, name = found.agreement, found.agreement.confusion, slug(found.evaluator)
    confusion = Table(f"confusion-{name}", [Column("judge", "judge"), Column("human_pass", "humans: pass", "count"),
                                            Column("human_fail", "humans: fail", "count")],
                      [{"judge": "pass", "human_pass": c.both_pass, "human_fail": c.first_only},
                       {"judge": "fail", "human_pass": c.second_only, "human_fail": c.both_fail}], sortable=False)
    rows = [{"run": Link(d.run_id, paths.run(d.run_id)) if d.run_id in inputs.by_id else d.run_id, "arm": d.arm_id,
             "item": d.item_id, "repeat": d.repeat, "judge": d.judge, "score": d.judge_score, "human": d.human,
             "reviewers": ", ".join(d.reviewers), "comments": " · ".join(d.comments)} for d in found.disagreements]
    return JudgeView(
        evaluator=found.evaluator, versions=found.versions, n=a.n,
        kappa=None if a.kappa != a.kappa else a.kappa, raw=None if a.raw != a.raw else a.raw,
        bootstrap=f"{a.raw_interval.confidence:.0%} {a.raw_interval.method}, {a.n_resamples:,} resamples, seed {a.seed}",
        confusion=confusion,
        disagreements=Table(f"disagreements-{name}", DISAGREEMENT_COLUMNS, rows),
    )
