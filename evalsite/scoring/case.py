"""Scoring one case: the evaluators' scores combined, re-scoring a recorded case, what scoring cost.

Shared by the runner (``execute``) and by comparisons that re-score against changed ground
truth (``analysis``), so re-scoring never imports the runner, a target or httpx.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from evalsite.experiment.datasets import Item
from evalsite.runlog.records import Score
from evalsite.runlog.rows import is_critical
from evalsite.scoring.evaluators.base import CaseView, Evaluator


@dataclass(frozen=True)
class CaseScore:
    scores: Sequence[Score]
    score: float | None
    passed: bool | None


#: :func:`unscored`'s two answers, made once (a run without evaluators asks once a case)
_UNSCORED = {False: CaseScore((), None, None), True: CaseScore((), None, False)}


async def score_case(evaluators: list[Evaluator], case: CaseView, generation_error: str | None) -> CaseScore:
    """Score one case. No evaluators → :func:`unscored`; a failed generation scores 0 everywhere."""
    if not evaluators:
        return unscored(generation_error)
    if generation_error is not None:
        per_evaluator = [[e.failed_generation(generation_error)] for e in evaluators]
    else:
        per_evaluator = await _score_each(evaluators, case)
    return combine_scores(evaluators, per_evaluator)


def unscored(generation_error: str | None) -> CaseScore:
    """A case of a run without evaluators: no scores, no score; failed when its generation failed."""
    return _UNSCORED[generation_error is not None]


async def _score_each(evaluators: list[Evaluator], case: CaseView) -> list[list[Score]]:
    """Evaluators that wait on I/O (judges) run concurrently; the rest inline, which is 4x cheaper."""
    if sum(e.waits_on_io for e in evaluators) < 2:
        return [await e.ascore(case) for e in evaluators]
    return list(await asyncio.gather(*(e.ascore(case) for e in evaluators)))


def combine_scores(evaluators: list[Evaluator], per_evaluator: list[list[Score]]) -> CaseScore:
    """Case score = Σ(score·weight)/Σweight over evaluators that produced a score (an evaluator
    scoring several turns contributes their mean); ``passed`` needs every result that has a
    pass rule to pass (errors and skips never pass), and is None when no result has one."""
    weighted, total_weight = 0.0, 0.0
    for evaluator, scores in zip(evaluators, per_evaluator):
        usable = [s.score for s in scores if s.score is not None and s.error is None and not s.skipped]
        if usable:
            weighted += fmean(usable) * evaluator.weight
            total_weight += evaluator.weight
    flat = [s for scores in per_evaluator for s in scores]
    ruled = [s.passed for s in flat if s.passed is not None]
    return CaseScore(
        scores=flat,
        score=weighted / total_weight if total_weight else None,
        passed=all(ruled) if ruled else None,
    )


def scoring_cost(scores: Iterable[Score]) -> float | None:
    """What the evaluators' own model calls (LLM judges) cost for one case; None when none reported a cost."""
    known = [s.cost_usd for s in scores if s.cost_usd is not None]
    return sum(known) if known else None


async def rescore_case(case: Mapping[str, Any], item: Item, evaluators: list[Evaluator]) -> dict[str, Any]:
    """A recorded case scored again against ``item`` as the dataset holds it now."""
    expected = item.row.get("expected")
    view = CaseView(
        input=case.get("input"),
        output=case.get("output"),
        expected=expected,
        row=item.row,
        latency_ms=case.get("latency_ms"),
        cost_usd=case.get("cost_usd"),
        turn_outputs=case.get("turn_outputs"),
        transcript=case.get("transcript"),
    )
    scored = await score_case(evaluators, view, case.get("error"))
    return {
        **case,
        "item_sha": item.sha,
        "expected": expected,
        "scores": [s.to_json() for s in scored.scores],
        "score": scored.score,
        "passed": scored.passed,
        "scoring_cost_usd": scoring_cost(scored.scores),
        "critical": is_critical(item.row),
    }
