"""``evalsite family-test``: one run against a declared family of others, Holm-corrected.

The runs form one item matrix (the items every run scored) and the comparisons are the pairs
(run, member) of the verdict (:mod:`evalsite.analysis.verdict`): the two-sided paired sign-flip
test on per-item means over repeats (whole clusters flip when items declare one), Holm's
step-down adjustment over the family, and the paired difference with its interval — the same
test, seed and items as the leaderboard, so a pair gets the same raw p everywhere. When both
runs have pass/fail outcomes, McNemar's exact test on the discordant items stands beside it
(an item passes when every repeat passed) — unless items declare clusters: McNemar treats items
as independent, so it is left out and ``mcnemar_note`` says why. Power is computed at α / m, the
level Holm's first step tests at, so it holds for every comparison of the family, over the
pair's units (clusters when declared: ``stats.power``, calibrated on the sign-flip test).

Which family Holm corrects over is part of the answer. By default it is the family declared with
``--vs``: the m pairs (run, member). ``all_pairs`` makes it every pair of the named runs, the
family the leaderboard corrects over, so on the leaderboard's runs a pair gets the leaderboard's
Holm p and verdict exactly. Either way each comparison also carries its verdict over every pair
(``all_pairs_holm_p``), and the groups (letters) and rank ranges come only from that fully tested
family: a pair of members that was never tested is neither "separated" nor "not separated", so a
letter display over the declared pairs alone would group arms only because nobody tested them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalsite.analysis.db import open_database
from evalsite.analysis.items import ItemMatrix, cluster_labels, item_matrix
from evalsite.analysis.selection import ArmRun, require_comparable, runs_by_reference
from evalsite.analysis.verdict import ArmPlace, PairVerdict, matrix_verdict, sequence_text
from evalsite.analysis.wording import count_of
from evalsite.errors import EvalsiteError
from evalsite.project import Project
from evalsite.stats import (
    Interval,
    McNemarResult,
    PowerAnalysis,
    SignFlipResult,
    holm,
    mcnemar_exact,
    min_detectable_effect,
    repeat_noise_test,
    required_n,
)
from evalsite.stats.pairs import unit_differences

ALPHA = 0.05
POWER = 0.8
#: Why McNemar is left out when items declare clusters.
MCNEMAR_WITH_CLUSTERS = (
    "McNemar left out: items declare clusters and McNemar counts discordant items as independent "
    "(it rejects a true null far more often than α); the verdict's sign-flip test flips whole clusters"
)
SEED = 0


@dataclass(frozen=True)
class FamilyComparison:
    """The run against one member of the family.

    ``mean_diff`` = run − other over ``n_items`` items every run of the family scored, with its
    ``interval`` the verdict's interval at the pair's Holm level (it excludes 0 exactly when the
    pair is separated), ``raw_interval`` the unadjusted bootstrap interval; ``sign_flip`` is the
    test over the ``unit`` (item or cluster).
    ``noise`` is the pooled spread of one repeat's mean and ``noise_p`` the test of Δ against it
    (``stats.repeat_noise_test``, over the items present in every repeat of both; None without
    enough repeats). ``within_noise`` is True when neither that test nor the Holm-adjusted paired
    test rejects at α, so a significant difference is never "within noise". ``verdict`` reads the
    Holm-adjusted sign-flip p at α. ``needed`` answers ``--effect`` (None without it). ``holm_p`` is
    adjusted over the family the test corrects over (:attr:`FamilyTest.family`); ``all_pairs_holm_p``
    and ``all_pairs_separated`` are the verdict on the same pair over every pair of the named runs
    (the leaderboard's family): the two differ only when the declared family is smaller."""

    other: ArmRun
    n_items: int
    dropped: int
    mean: float
    other_mean: float
    mean_diff: float
    interval: Interval
    unit: str
    n_units: int
    sign_flip: SignFlipResult
    holm_p: float
    all_pairs_holm_p: float
    all_pairs_separated: bool
    mcnemar: McNemarResult | None
    mcnemar_holm_p: float | None
    noise: float | None
    noise_p: float | None
    within_noise: bool | None
    verdict: str
    detectable: PowerAnalysis
    needed: PowerAnalysis | None
    mcnemar_note: str | None = None
    raw_interval: Interval | None = None


@dataclass(frozen=True)
class FamilyTest:
    """``arms`` lists the run and its family in the order of their mean score, with the letters and
    rank ranges of the verdict over every pair of these runs (the only family in which every pair
    was tested). ``family`` names the pairs Holm corrects over and ``correction`` says it in words."""

    run: ArmRun
    alpha: float
    power_alpha: float
    power: float
    effect: float | None
    evaluator: str | None
    arms: tuple[ArmPlace, ...]
    comparisons: tuple[FamilyComparison, ...]
    family: str
    correction: str


def family_test(
    project: Project, run: str, others: list[str], *, alpha: float = ALPHA, effect: float | None = None,
    evaluator: str | None = None, seed: int = SEED, all_pairs: bool = False,
) -> FamilyTest:
    """Test ``run`` against every run in ``others``, Holm-corrected over those pairs, or over every pair
    of the runs with ``all_pairs``. Raises :class:`~evalsite.errors.NotComparableError` naming every
    pair that may not be compared."""
    if not others:
        raise EvalsiteError("name at least one run to test against with --vs RUN")
    arms = runs_by_reference(project.runs_dir, [run, *others])
    first, family = arms[0], arms[1:]
    require_comparable(first, family)
    matrix = item_matrix(open_database(project.runs_dir), arms, evaluator)
    if matrix.n_items < 2:
        raise EvalsiteError(f"the runs share {matrix.n_items} scored item; a paired test needs 2")
    _, clusters = cluster_labels(project, matrix)
    every = matrix_verdict(matrix, alpha=alpha, seed=seed, groups=clusters)
    declared = every if all_pairs or len(arms) == 2 else matrix_verdict(
        matrix, alpha=alpha, seed=seed, groups=clusters, pairs=[(0, other) for other in range(1, len(arms))])
    mcnemars = [None if clusters or every.stopped else _mcnemar(matrix, other) for other in range(1, len(arms))]
    known = {i: result.p_value for i, result in enumerate(mcnemars) if result is not None}
    mcnemar_adjusted = dict(zip(known, holm(list(known.values())))) if known else {}
    power_alpha = alpha / len(declared.pairs)
    comparisons = tuple(
        _comparison(matrix, other, declared.pair(0, other), every.pair(0, other), mcnemars[other - 1],
                    mcnemar_adjusted.get(other - 1), alpha, power_alpha, effect, clusters)
        for other in range(1, len(arms))
    )
    family_text = _family_text(first.label, [arm.label for arm in family], len(every.pairs), all_pairs)
    return FamilyTest(first, alpha, power_alpha, POWER, effect, evaluator, every.arms, comparisons, family_text,
                      f"Holm over {family_text}")


def _family_text(label: str, members: list[str], n_all: int, all_pairs: bool) -> str:
    """"the 3 pairs strong vs weak, twin1, twin2 (declared with --vs; …)" or "every pair of these 4 runs …"."""
    if all_pairs or len(members) == 1:
        return f"every pair of these {len(members) + 1} runs ({count_of(n_all, 'pair')}), as the leaderboard corrects"
    return (f"the {count_of(len(members), 'pair')} {label} vs {', '.join(members)} (declared with --vs; the "
            f"leaderboard of these runs corrects over all {n_all})")


def _mcnemar(matrix: ItemMatrix, other: int) -> McNemarResult | None:
    mine, theirs = matrix.arm_passed(0), matrix.arm_passed(other)
    return None if mine is None or theirs is None else mcnemar_exact(mine, theirs)


def _comparison(
    matrix: ItemMatrix, other: int, pair: PairVerdict, over_all: PairVerdict, mcnemar: McNemarResult | None,
    mcnemar_holm_p: float | None, alpha: float, power_alpha: float, effect: float | None,
    clusters: tuple[str, ...] | None,
) -> FamilyComparison:
    scores = (matrix.arm_scores(0), matrix.arm_scores(other))
    mine, theirs = (np.nanmean(s, axis=1) for s in scores)
    difference = pair.difference
    sign = 1.0 if pair.ahead == 0 else -1.0
    mean_diff = float(mine.mean() - theirs.mean())

    noise = repeat_noise_test(*scores)
    within = None if noise is None else pair.holm_p >= alpha and noise.p_value >= alpha
    units = unit_differences(mine, theirs, groups=clusters)
    return FamilyComparison(
        other=matrix.arms[other],
        n_items=matrix.n_items,
        dropped=len(matrix.dropped),
        mean=float(mine.mean()),
        other_mean=float(theirs.mean()),
        mean_diff=mean_diff,
        interval=_oriented(pair.interval, sign),
        unit=difference.unit,
        n_units=difference.n_units,
        sign_flip=difference.test,
        holm_p=pair.holm_p,
        all_pairs_holm_p=over_all.holm_p,
        all_pairs_separated=over_all.separated,
        mcnemar=mcnemar,
        mcnemar_holm_p=mcnemar_holm_p,
        noise=None if noise is None else noise.spread,
        noise_p=None if noise is None else noise.p_value,
        within_noise=within,
        verdict=sequence_text(pair) if pair.sequence is not None else  # a stop_when batch: its sequence decides
        _verdict(matrix.arms[0].label, matrix.arms[other].label, mean_diff, pair.holm_p, alpha, within),
        detectable=min_detectable_effect(units, alpha=power_alpha, power=POWER),
        needed=None if effect is None else _needed(units, effect, power_alpha),
        mcnemar_note=MCNEMAR_WITH_CLUSTERS if clusters else None,
        raw_interval=_oriented(difference.interval, sign),
    )


def _oriented(interval: Interval, sign: float) -> Interval:
    """An interval of ahead − behind as one of run − other."""
    low, high = sorted((sign * interval.low, sign * interval.high))
    return Interval(low, high, interval.confidence, interval.method)


def _needed(units: np.ndarray, effect: float, power_alpha: float) -> PowerAnalysis:
    try:
        return required_n(units, effect, alpha=power_alpha, power=POWER)
    except ValueError as exc:
        raise EvalsiteError(f"--effect {effect:g}: {exc}") from None


def _verdict(label: str, other: str, mean_diff: float, holm_p: float, alpha: float, within_noise: bool | None) -> str:
    if holm_p >= alpha:
        verdict = "no significant difference"
    else:
        verdict = f"{label} better than {other}" if mean_diff > 0 else f"{label} worse than {other}"
    return verdict + ("; within noise" if within_noise else "")
