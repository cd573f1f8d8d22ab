"""``evalsite family-test``: one run against a declared family of others, Holm-corrected.

Each comparison pairs the two runs on the items both scored (per-item mean over repeats) and
runs the two-sided paired sign-flip test; Holm's step-down adjustment over the family controls
the chance of any false "better". When both runs have pass/fail outcomes, McNemar's exact test
on the discordant items stands beside it (with its own Holm adjustment). Power is computed at
α / m, the level Holm's first step tests at, so it holds for every comparison of the family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from evalsite.analysis.db import open_database
from evalsite.analysis.items import item_matrix
from evalsite.analysis.selection import ArmRun, require_comparable, runs_by_reference
from evalsite.errors import EvalsiteError
from evalsite.project import Project
from evalsite.stats import (
    McNemarResult,
    PowerAnalysis,
    SignFlipResult,
    holm,
    mcnemar_exact,
    min_detectable_effect,
    repeat_noise,
    required_n,
    sign_flip_test,
)

ALPHA = 0.05
POWER = 0.8
SEED = 0
_NOISE_SLACK = 1e-9


@dataclass(frozen=True)
class Comparison:
    """The run against one member of the family.

    ``mean_diff`` = run − other over ``n_items`` shared items (``dropped`` more were not shared).
    ``noise`` is the larger of the two runs' spread across repeats (None without repeats), and
    ``within_noise`` says the difference is no larger than it. ``verdict`` reads the Holm-adjusted
    sign-flip p at α. ``needed`` answers ``--effect`` (None without it)."""

    other: ArmRun
    n_items: int
    dropped: int
    mean: float
    other_mean: float
    mean_diff: float
    sign_flip: SignFlipResult
    holm_p: float
    mcnemar: McNemarResult | None
    mcnemar_holm_p: float | None
    noise: float | None
    within_noise: bool | None
    verdict: str
    detectable: PowerAnalysis
    needed: PowerAnalysis | None


@dataclass(frozen=True)
class FamilyTest:
    run: ArmRun
    alpha: float
    power_alpha: float
    power: float
    effect: float | None
    evaluator: str | None
    comparisons: tuple[Comparison, ...]
    correction: str = "Holm step-down over the family"


@dataclass(frozen=True)
class _Pair:
    other: ArmRun
    n_items: int
    dropped: int
    scores: tuple[np.ndarray, np.ndarray]
    passed: tuple[np.ndarray | None, np.ndarray | None]


def family_test(
    project: Project, run: str, others: list[str], *, alpha: float = ALPHA, effect: float | None = None,
    evaluator: str | None = None, seed: int = SEED,
) -> FamilyTest:
    """Test ``run`` against every run in ``others``. Raises
    :class:`~evalsite.errors.NotComparableError` naming every pair that may not be compared."""
    if not others:
        raise EvalsiteError("name at least one run to test against with --vs RUN")
    arms = runs_by_reference(project.runs_dir, [run, *others])
    first, family = arms[0], arms[1:]
    require_comparable(first, family)
    database = open_database(project.runs_dir)
    pairs = [_pair(database, first, other, evaluator) for other in family]
    tests = [sign_flip_test(*pair.scores, seed=seed) for pair in pairs]
    adjusted = holm([test.p_value for test in tests])
    mcnemars = [_mcnemar(pair) for pair in pairs]
    known = [i for i, result in enumerate(mcnemars) if result is not None]
    mcnemar_adjusted = dict(zip(known, holm([mcnemars[i].p_value for i in known]) if known else []))
    power_alpha = alpha / len(pairs)
    comparisons = tuple(
        _comparison(first, pair, test, adjusted[i], mcnemars[i], mcnemar_adjusted.get(i), alpha, power_alpha, effect)
        for i, (pair, test) in enumerate(zip(pairs, tests))
    )
    return FamilyTest(first, alpha, power_alpha, POWER, effect, evaluator, comparisons)


def _pair(database, first: ArmRun, other: ArmRun, evaluator: str | None) -> _Pair:
    matrix = item_matrix(database, [first, other], evaluator)
    if matrix.n_items < 2:
        raise EvalsiteError(f"{first.run_id} and {other.run_id} share {matrix.n_items} scored item; a paired test needs 2")
    return _Pair(
        other, matrix.n_items, len(matrix.dropped),
        (matrix.arm_scores(0), matrix.arm_scores(1)), (matrix.arm_passed(0), matrix.arm_passed(1)),
    )


def _mcnemar(pair: _Pair) -> McNemarResult | None:
    mine, theirs = pair.passed
    return None if mine is None or theirs is None else mcnemar_exact(mine, theirs)


def _comparison(
    first: ArmRun, pair: _Pair, test: SignFlipResult, holm_p: float, mcnemar: McNemarResult | None,
    mcnemar_holm_p: float | None, alpha: float, power_alpha: float, effect: float | None,
) -> Comparison:
    mine, theirs = (np.nanmean(scores, axis=1) for scores in pair.scores)
    noise = _noise(pair.scores)
    within = None if noise is None else abs(test.mean_diff) <= noise + _NOISE_SLACK
    diffs = mine - theirs
    return Comparison(
        other=pair.other,
        n_items=pair.n_items,
        dropped=pair.dropped,
        mean=float(mine.mean()),
        other_mean=float(theirs.mean()),
        mean_diff=test.mean_diff,
        sign_flip=test,
        holm_p=holm_p,
        mcnemar=mcnemar,
        mcnemar_holm_p=mcnemar_holm_p,
        noise=noise,
        within_noise=within,
        verdict=_verdict(first.label, pair.other.label, test.mean_diff, holm_p, alpha, within),
        detectable=min_detectable_effect(diffs, alpha=power_alpha, power=POWER),
        needed=None if effect is None else required_n(diffs, effect, alpha=power_alpha, power=POWER),
    )


def _noise(scores: tuple[np.ndarray, np.ndarray]) -> float | None:
    spreads = [repeat_noise(s).std for s in scores if s.shape[1] >= 2]
    known = [s for s in spreads if math.isfinite(s)]
    return max(known) if known else None


def _verdict(label: str, other: str, mean_diff: float, holm_p: float, alpha: float, within_noise: bool | None) -> str:
    if holm_p >= alpha:
        verdict = "no significant difference"
    else:
        verdict = f"{label} better than {other}" if mean_diff > 0 else f"{label} worse than {other}"
    return verdict + ("; within noise" if within_noise else "")
