"""Does a judge agree with the human reviewers? Cohen's κ and raw agreement, with bootstrap
intervals, confusion counts and the cases where they disagree (``evalsite judge-agreement``, the
``judge … agrees with humans`` claim and the site's judges page all read :func:`judge_agreement`).

A case's human label comes from its reviewers' latest ratings (:func:`evalsite.analysis.review.human_scores`):
``unsure`` ratings are left out; when the remaining ratings all say pass (or all fail) that is the
label; when reviewers disagree the case is *split* and left out; a case whose every rating is
unsure counts as *unsure*. A judge's verdict is :func:`evalsite.analysis.review.verdict`; a rated
case where the judge has no verdict (an error, a skip) is counted and left out. Every run that
holds a rated case is read, excluded runs included: calibrating a judge compares it with people,
not arms with each other.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from evalsite.analysis.review import NO_VERDICT, PASSED, human_scores, judge_names, verdict
from evalsite.errors import EvalsiteError
from evalsite.runlog.decisions import PASS, Decision
from evalsite.runlog.records import Case, RunHeader
from evalsite.runlog.store import CASES_FILE, open_run, read_cases
from evalsite.stats.agreement import Agreement, agreement
from evalsite.stats.proportions import Interval

DEFAULT_RESAMPLES = 2000


@dataclass(frozen=True)
class Disagreement:
    """A case where the judge and the humans disagree."""

    run_id: str
    arm_id: str | None
    item_id: str
    repeat: int
    judge: str  # passed | failed
    judge_score: float | None
    human: str  # pass | fail
    reviewers: list[str]
    comments: list[str]


@dataclass(frozen=True)
class JudgeAgreement:
    """One evaluator against the human labels of the cases it scored."""

    evaluator: str
    versions: list[str]
    runs: list[str]
    rated: int  # rated cases the evaluator scored (or should have)
    unsure: int  # every rating of the case is unsure
    split: int  # the reviewers disagree
    no_verdict: int  # the evaluator has no verdict on the case (error, skip)
    agreement: Agreement
    disagreements: list[Disagreement] = field(default_factory=list)

    @property
    def n(self) -> int:
        return self.agreement.n

    def to_json(self) -> dict[str, Any]:
        a = self.agreement
        return {
            "evaluator": self.evaluator, "versions": self.versions, "runs": self.runs, "rated": self.rated,
            "unsure": self.unsure, "split": self.split, "no_verdict": self.no_verdict, "n": a.n, "agreed": a.agreed,
            "raw_agreement": _number(a.raw), "kappa": _number(a.kappa),
            "raw_interval": _interval(a.raw_interval), "kappa_interval": _interval(a.kappa_interval),
            "confusion": {"judge_pass_human_pass": a.confusion.both_pass, "judge_pass_human_fail": a.confusion.first_only,
                          "judge_fail_human_pass": a.confusion.second_only, "judge_fail_human_fail": a.confusion.both_fail},
            "bootstrap": {"n_resamples": a.n_resamples, "seed": a.seed, "kappa_undefined": a.undefined},
            "disagreements": [asdict(d) for d in self.disagreements],
        }


def _number(value: float) -> float | None:
    return None if value != value else value  # nan → null


def _interval(interval: Interval) -> dict[str, Any]:
    return {"low": _number(interval.low), "high": _number(interval.high), "confidence": interval.confidence,
            "method": interval.method}


@dataclass
class _Pairs:
    """What one evaluator's comparison gathers before the statistics."""

    judge: list[bool] = field(default_factory=list)
    human: list[bool] = field(default_factory=list)
    versions: set[str] = field(default_factory=set)
    runs: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("rated", "unsure", "split", "no_verdict"), 0))
    disagreements: list[Disagreement] = field(default_factory=list)


def human_label(decisions: list[Decision]) -> str | None:
    """``pass`` or ``fail`` when the reviewers' sure ratings agree; ``unsure`` when every rating is
    unsure; None when sure ratings disagree (split)."""
    sure = {d.review.rating for d in decisions if d.review is not None and d.review.passed is not None}
    if not sure:
        return "unsure"
    return sure.pop() if len(sure) == 1 else None


def judge_agreement(runs_dir: Path, *, evaluators: tuple[str, ...] = (), seed: int = 0,
                    n_resamples: int = DEFAULT_RESAMPLES, confidence: float = 0.95) -> list[JudgeAgreement]:
    """Every ``llm_judge`` evaluator (or the named ``evaluators``) of the rated runs against the
    human labels, by evaluator name."""
    rated = human_scores(runs_dir)
    by_run: dict[str, dict[tuple[str, int], list[Decision]]] = defaultdict(dict)
    for (run_id, item_id, repeat), decisions in rated.items():
        by_run[run_id][(item_id, repeat)] = decisions
    pairs: dict[str, _Pairs] = defaultdict(_Pairs)
    for run_id, cases in sorted(by_run.items()):
        header, found = _run_cases(runs_dir / run_id)
        for name in evaluators or tuple(judge_names(header)):
            if name not in header.evaluators:
                continue
            _gather(pairs[name], header, name, cases, found)
    missing = [name for name in evaluators if name not in pairs]
    if missing:
        raise EvalsiteError(f"judge-agreement: no rated case was scored by evaluator {missing[0]!r}; "
                            "rate some of its cases (evalsite review export / import) or check the name")
    return [_result(name, pairs[name], seed, n_resamples, confidence) for name in sorted(pairs)]


def _run_cases(directory: Path) -> tuple[RunHeader, dict[tuple[str, int], Case]]:
    run = open_run(directory)
    return run.header, {(c.item_id, c.repeat): c for c in read_cases(run.directory / CASES_FILE)}


def _gather(into: _Pairs, header: RunHeader, name: str, rated: dict[tuple[str, int], list[Decision]],
            cases: dict[tuple[str, int], Case]) -> None:
    into.versions.add(str(header.evaluators[name].get("version")))
    for key, decisions in sorted(rated.items()):
        case = cases.get(key)
        if case is None:
            continue  # validate reports a rating of a case the run does not hold
        into.runs.add(header.run_id)
        into.counts["rated"] += 1
        label = human_label(decisions)
        judged = verdict(s for s in case.scores if s.evaluator == name)
        if label == "unsure" or label is None:
            into.counts["unsure" if label else "split"] += 1
            continue
        if judged == NO_VERDICT:
            into.counts["no_verdict"] += 1
            continue
        into.judge.append(judged == PASSED)
        into.human.append(label == PASS)
        if (judged == PASSED) != (label == PASS):
            score = next((s.score for s in case.scores if s.evaluator == name), None)
            into.disagreements.append(Disagreement(
                header.run_id, header.arm_id, key[0], key[1], judged, score, label,
                [d.by or "" for d in decisions], [d.reason for d in decisions if d.reason]))


def _result(name: str, pairs: _Pairs, seed: int, n_resamples: int, confidence: float) -> JudgeAgreement:
    return JudgeAgreement(
        evaluator=name, versions=sorted(pairs.versions), runs=sorted(pairs.runs),
        rated=pairs.counts["rated"], unsure=pairs.counts["unsure"], split=pairs.counts["split"],
        no_verdict=pairs.counts["no_verdict"],
        agreement=agreement(pairs.judge, pairs.human, confidence=confidence, seed=seed, n_resamples=n_resamples),
        disagreements=pairs.disagreements,
    )


__all__ = ["Disagreement", "JudgeAgreement", "human_label", "judge_agreement"]
