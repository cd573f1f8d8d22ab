"""``judge NAME agrees with humans κ >= 0.6`` claims, asked of :func:`evalsite.analysis.judge_agreement.judge_agreement`
(the figures ``evalsite judge-agreement`` prints, with its default seed and resamples)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from evalsite.analysis.claim_beats import FAILS, HOLDS, Uncheckable
from evalsite.analysis.claim_syntax import AGREEMENT_STATISTICS, Agrees
from evalsite.analysis.judge_agreement import judge_agreement
from evalsite.errors import EvalsiteError

if TYPE_CHECKING:
    from evalsite.analysis.claims import ClaimCheck


def check_agrees(claim: Agrees, runs_dir: Path, compare: Mapping[str, Callable[[float, float], bool]]) -> ClaimCheck:
    """Decide an agreement claim; ``compare`` maps an operator to its comparison."""
    try:
        (found,) = judge_agreement(runs_dir, evaluators=(claim.evaluator,))
    except EvalsiteError as exc:
        raise Uncheckable(exc.message.removeprefix("judge-agreement: ")) from None
    figures = found.to_json()
    key = AGREEMENT_STATISTICS[claim.statistic]
    interval = figures["kappa_interval" if claim.statistic == "kappa" else "raw_interval"]
    value = interval["low"] if claim.lower else figures[key]
    shown = f"{claim.statistic}{' (lower bound)' if claim.lower else ''}"
    if value is None:
        raise Uncheckable(f"{claim.evaluator}: {shown} is undefined over {found.n} rated cases "
                          "(too few, or one label for every case)")
    numbers: dict[str, float | str] = {
        "kappa": figures["kappa"] if figures["kappa"] is not None else "undefined",
        "raw_agreement": figures["raw_agreement"], "n": found.n, "unsure": found.unsure, "split": found.split,
        "low": interval["low"], "high": interval["high"], "confidence": interval["confidence"],
    }
    holds = compare[claim.operator](value, claim.bound)
    detail = (f"{claim.evaluator}: {shown} {value:.3f} {claim.operator} {claim.bound:g} — {claim.statistic} "
              f"[{interval['low']:.3f}, {interval['high']:.3f}] ({interval['confidence']:.0%} bootstrap) over "
              f"{found.n} rated cases ({found.unsure} unsure, {found.split} split left out)")
    return (HOLDS if holds else FAILS), detail, numbers, found.runs
