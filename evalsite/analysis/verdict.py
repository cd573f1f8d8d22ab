"""The one answer to "is one arm really better?", read by every command and page that orders arms.

Given the item matrix (items × arms, one value per item of the ranking statistic), the verdict:

1. orders the arms by the statistic it displays — the mean over items of the metric, higher
   first, or lower first for a lower-is-better metric (cost, latency, tokens, or a declared
   direction) — so no arm is ever listed ahead of one with a better displayed value;
2. decides separation with the paired sign-flip test of every pair shown, Holm-corrected over
   those pairs (``stats.paired_difference``: whole clusters flip when items declare one), and
   reports each pair's mean difference with the interval of that test's inversion at the
   pair's Holm level (it excludes 0 exactly when the pair is separated; the raw bootstrap
   interval stays beside it) and the smallest difference it could detect;
3. groups the arms no test separates (a compact letter display of the paired tests) and writes
   one headline sentence a reviewer can quote.

Friedman's test and Nemenyi's critical difference are kept as what they are: an omnibus test of
"the arms are not all alike" and the critical-difference picture over mean ranks. Mean ranks
count how often an arm wins an item, not by how much, and Nemenyi's p of a pair depends on
which other arms are in the table (Benavoli et al. 2016), so when they disagree with the paired
tests the verdict says, in one sentence, that the order follows the paired tests, and why.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import numpy as np

from evalsite.analysis.background import started
from evalsite.analysis.interval_memo import INTERVALS, PAIRS, column_key, pair_key
from evalsite.analysis.items import ItemMatrix
from evalsite.analysis.stopped import PairSequence, Stopped, pair_sequence, stopped_rule
from evalsite.analysis.wording import bounds_text, count_of, p_clause, signed
from evalsite.errors import EvalsiteError
from evalsite.stats import (
    FriedmanResult,
    Interval,
    NemenyiResult,
    TiedGroups,
    bootstrap_ci,
    friedman_test,
)
from evalsite.stats.confseq import METHOD
from evalsite.stats.inversion import holm_levels
from evalsite.stats.pairs import (
    PairedDifference,
    inverted_pair_interval,
    letter_groups,
    paired_difference,
    unit_differences,
)
from evalsite.stats.power import min_detectable_effect
from evalsite.stats.ranking import nemenyi_of_ranks

ALPHA = 0.05
SEED = 0
CONFIDENCE = 0.95
#: Metrics a leaderboard can rank by; the names of the item-matrix arrays they average.
METRICS = {"score": "score", "pass_rate": "passed", "cost": "cost_usd", "latency": "latency_ms", "tokens": "tokens"}
#: Metrics where less is better when nothing else says so.
LOWER_IS_BETTER = ("cost", "latency", "tokens")


@dataclass(frozen=True)
class Metric:
    """The ranking statistic: ``name`` (a key of :data:`METRICS`) and its direction, with where
    the direction came from (``flag``, ``evalsite.toml`` ``[analysis.direction]``, or ``name``)."""

    name: str = "score"
    lower_is_better: bool = False
    direction_from: str = "name"

    @property
    def direction(self) -> str:
        return "lower is better" if self.lower_is_better else "higher is better"


def choose_metric(name: str | None = None, direction: str | None = None, settings: dict[str, Any] | None = None) -> Metric:
    """The metric to rank by: ``direction`` ('lower'/'higher') from a flag wins, then the project's
    ``[analysis.direction]`` table in evalsite.toml, then the name (cost, latency, tokens go down)."""
    chosen = name or "score"
    if chosen not in METRICS:
        raise EvalsiteError(f"--metric {chosen!r}: choose one of {', '.join(METRICS)}")
    declared = ((settings or {}).get("analysis") or {}).get("direction") or {}
    for value, source in ((direction, "flag"), (declared.get(chosen), "evalsite.toml [analysis.direction]")):
        if value is None:
            continue
        if value not in ("lower", "higher"):
            raise EvalsiteError(f"{source}: direction of {chosen} must be 'lower' or 'higher', not {value!r}")
        return Metric(chosen, value == "lower", source)
    return Metric(chosen, chosen in LOWER_IS_BETTER, "name")


@dataclass(frozen=True)
class PairVerdict:
    """Two arms, ``ahead`` listed before ``behind``: ``difference`` is ahead − behind (the raw
    metric; negative for a lower-is-better metric when ``ahead`` is better), ``holm_p`` its
    sign-flip p adjusted over every pair shown, ``separated`` when ``holm_p`` < α.

    ``interval`` is the interval that agrees with that decision: the shifts of the mean
    difference the same sign-flip test does not reject at ``level``, the level Holm tested this
    pair at (α / (m − j + 1) for the pair rejected at step j, α / (m − r) for every pair not
    rejected), so it excludes 0 exactly when the pair is separated
    (:mod:`evalsite.stats.inversion`). ``difference.interval`` is the raw (unadjusted) bootstrap
    interval, kept for reference and labelled raw wherever it is shown."""

    ahead: int
    behind: int
    ahead_label: str
    behind_label: str
    difference: PairedDifference
    holm_p: float
    separated: bool
    interval: Interval
    level: float
    sequence: PairSequence | None = None  # runs that stopped by stop_when: the anytime-valid sequence decides

    @property
    def decided_by(self) -> str:
        """What decides the pair: ``anytime-valid`` (a stop_when batch) or ``Holm``."""
        return "Holm" if self.sequence is None else "anytime-valid"


@dataclass(frozen=True)
class ArmPlace:
    """One arm in display order: ``value`` is the statistic shown (mean over items), ``interval``
    its bootstrap interval, ``rank`` its position (1 = first), ``places`` the best and worst
    position it could hold given the arms it is not separated from, ``letters`` its groups."""

    arm: int
    arm_id: str | None
    label: str
    value: float
    interval: Interval
    rank: int
    places: tuple[int, int]
    letters: str

    @property
    def rank_text(self) -> str:
        best, worst = self.places
        return str(best) if best == worst else f"{best}–{worst} (not separated)"


@dataclass(frozen=True)
class Verdict:
    """The order of the arms and what the tests let a reader conclude from it.

    ``unit`` is ``item``, or ``cluster`` when items declare one: every test then flips whole
    clusters and every interval resamples them (``n_clusters`` of them)."""

    metric: Metric
    alpha: float
    n_items: int
    unit: str
    n_units: int
    n_clusters: int | None
    arms: tuple[ArmPlace, ...]
    pairs: tuple[PairVerdict, ...]
    groups: TiedGroups
    order_supported: bool
    headline: str
    friedman: FriedmanResult | None
    nemenyi: NemenyiResult | None
    omnibus: str
    agreement: str | None
    correction: str
    stopped: Stopped | None = None  # the compared runs stopped by stop_when: every pair reads its sequence

    def pair(self, a: int, b: int) -> PairVerdict:
        """The verdict on arms a and b (matrix indices), in either order."""
        for pair in self.pairs:
            if {pair.ahead, pair.behind} == {a, b}:
                return pair
        raise KeyError(f"arms {a} and {b} were not compared")

    @property
    def order(self) -> tuple[int, ...]:
        return tuple(place.arm for place in self.arms)


def metric_values(matrix: ItemMatrix, metric: Metric) -> np.ndarray:
    """Items × arms: each item's mean over its repeats of the metric's case field."""
    cells = getattr(matrix, METRICS[metric.name])
    if metric.name == "pass_rate":
        missing = [arm.label for index, arm in enumerate(matrix.arms) if matrix.arm_passed(index) is None]
        if missing:
            raise EvalsiteError(f"cannot rank by pass_rate: {', '.join(missing)} has no pass rule")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an item with no value stays NaN and is refused below
        return np.asarray(np.nanmean(cells, axis=2))


def matrix_verdict(
    matrix: ItemMatrix, *, metric: Metric = Metric(), alpha: float = ALPHA, seed: int = SEED,
    groups: Sequence[Hashable] | None = None, pairs: Sequence[tuple[int, int]] | None = None,
) -> Verdict:
    """:func:`verdict_of` over the arms of an aligned item matrix."""
    labels = [arm.label for arm in matrix.arms]
    values = metric_values(matrix, metric)
    stopped = stopped_rule([arm.header for arm in matrix.arms])
    if stopped is not None and metric.name not in SEQUENCE_METRICS:
        return _untested_after_stop(verdict_of(values, labels, metric=metric, alpha=alpha, seed=seed, groups=groups,
                                               pairs=(), arm_ids=[arm.arm_id for arm in matrix.arms], omnibus=False))
    return verdict_of(values, labels, metric=metric, alpha=alpha, seed=seed, groups=groups,
                      pairs=pairs, arm_ids=[arm.arm_id for arm in matrix.arms],
                      stopped=None if stopped is None else (stopped, matrix.item_ids))


#: The metrics a stop_when batch's confidence sequences are about (its per-item scores in [0, 1]).
SEQUENCE_METRICS = ("score", "pass_rate")


def _untested_after_stop(verdict: Verdict) -> Verdict:
    """The order by another metric of runs that stopped by ``stop_when``, with no test at all: the
    items they hold were chosen by watching their scores, so a fixed-n test (paired or Friedman) of
    cost, latency or tokens over them is not valid, and the scores' sequences say nothing of it."""
    name = verdict.metric.name
    reason = (f"no pair is tested on {name}: the runs stopped by stop_when on their scores, so a fixed-n test of "
              f"{name} over the items they hold is not valid")
    best = "" if not verdict.arms else f"{verdict.arms[0].label} has the best {name} ({verdict.metric.direction}); "
    return replace(verdict, headline=best + reason, friedman=None, nemenyi=None, agreement=None,
                   omnibus=f"Friedman omnibus test not read: {reason}", correction=reason)


def verdict_of(
    values: np.ndarray, labels: Sequence[str], *, metric: Metric = Metric(), alpha: float = ALPHA, seed: int = SEED,
    groups: Sequence[Hashable] | None = None, pairs: Sequence[tuple[int, int]] | None = None,
    arm_ids: Sequence[str | None] | None = None, stopped: tuple[Stopped, Sequence[str]] | None = None,
    omnibus: bool = True,
) -> Verdict:
    """The verdict on an items × arms array of per-item values of ``metric``.

    ``groups`` (one cluster label per item) makes the cluster the unit of every test and interval;
    ``pairs`` restricts the comparisons shown (default: every pair), which is also the family
    Holm corrects over. ``stopped`` (the rule of runs that stopped by ``stop_when`` and the item
    ids of the rows) decides every pair by its anytime-valid sequence instead (:mod:`evalsite.analysis.stopped`).
    ``omnibus=False`` leaves Friedman and Nemenyi out (None) for a caller that could not read them."""
    values = np.asarray(values, dtype=float)
    _require_values(values, labels, metric)
    sign = -1.0 if metric.lower_is_better else 1.0
    means = values.mean(axis=0)
    order = tuple(int(arm) for arm in np.argsort(-sign * means, kind="stable"))
    position = {arm: place for place, arm in enumerate(order)}
    chosen = list(combinations(range(len(labels)), 2)) if pairs is None else list(pairs)
    omnibus_tests = _start_omnibus_tests(sign * values, alpha, seed) if omnibus else _no_omnibus_tests
    tested = _pairs(values, labels, chosen, position, alpha, seed, groups)
    if stopped is not None:
        tested = [_sequential(pair, values, groups, alpha, *stopped) for pair in tested]
    separated = np.zeros((len(labels), len(labels)), dtype=bool)
    for pair in tested:
        separated[pair.ahead, pair.behind] = separated[pair.behind, pair.ahead] = pair.separated
    letters = letter_groups(order, separated)
    places = _places(order, separated)
    arms = tuple(
        ArmPlace(arm, None if arm_ids is None else arm_ids[arm], labels[arm], float(means[arm]), bootstrap_ci(values[:, arm], seed=seed, groups=groups, memo=INTERVALS),
                 position[arm] + 1, places[arm], letters.letters[arm])
        for arm in order
    )
    supported = len(labels) > 1 and all(places[arm][0] == places[arm][1] for arm in order)
    friedman, post_hoc = omnibus_tests()
    n_units = len(set(groups)) if groups is not None else values.shape[0]
    return Verdict(
        metric=metric, alpha=alpha, n_items=values.shape[0], unit="item" if groups is None else "cluster",
        n_units=n_units, n_clusters=None if groups is None else n_units, arms=arms, pairs=tuple(tested), groups=letters, order_supported=supported,
        headline=_headline(arms, tested, metric, alpha),
        friedman=friedman, nemenyi=post_hoc,
        omnibus=_omnibus_sentence(friedman, alpha) if stopped is None else STOPPED_OMNIBUS,
        agreement=_agreement(friedman, post_hoc, tested, order, labels, alpha) if stopped is None else None,
        correction=_correction(len(tested)) if stopped is None else _sequence_correction(stopped[0]),
        stopped=None if stopped is None else stopped[0],
    )


STOPPED_OMNIBUS = ("Friedman omnibus test not read: the runs stopped by stop_when, so a fixed-n test of the "
                   "stopped sample is not valid; each pair's anytime-valid sequence decides")


def _sequential(pair: PairVerdict, values: np.ndarray, groups: Sequence[Hashable] | None, alpha: float,
                stopped: Stopped, item_ids: Sequence[str]) -> PairVerdict:
    """``pair`` decided by its anytime-valid sequence at the stopping look: no fixed-n p-value is kept."""
    sequence = pair_sequence(values[:, pair.ahead], values[:, pair.behind], item_ids, groups, stopped, alpha)
    test = replace(pair.difference.test, p_value=math.nan, method=METHOD)
    difference = replace(pair.difference, p_value=math.nan, kind="anytime-valid", test=test,
                         method=f"{METHOD}; {pair.difference.interval.method} bootstrap over {pair.difference.unit}s (raw)")
    return replace(pair, difference=difference, holm_p=math.nan, separated=sequence.decision == "separated",
                   interval=sequence.interval(), level=sequence.pair_alpha, sequence=sequence)


def _sequence_correction(stopped: Stopped) -> str:
    """"Bonferroni over the 3 pairs of the stop_when batch (anytime-valid)"."""
    return f"Bonferroni over the {count_of(stopped.rule.pairs, 'pair')} of the stop_when batch (anytime-valid)"


def _require_values(values: np.ndarray, labels: Sequence[str], metric: Metric) -> None:
    if values.ndim != 2 or values.shape[1] != len(labels) or values.shape[0] == 0:
        raise ValueError(f"values must be items × arms for {len(labels)} arms, got shape {values.shape}")
    unknown = [labels[arm] for arm in range(len(labels)) if not np.all(np.isfinite(values[:, arm]))]
    if unknown:
        raise EvalsiteError(f"cannot rank by {metric.name}: it is unknown for some compared cases of {', '.join(unknown)}")


def _pairs(
    values: np.ndarray, labels: Sequence[str], chosen: list[tuple[int, int]], position: dict[int, int],
    alpha: float, seed: int, groups: Sequence[Hashable] | None,
) -> list[PairVerdict]:
    ordered = [(a, b) if position[a] < position[b] else (b, a) for a, b in chosen]
    mde_alpha = alpha / max(1, len(ordered))  # Holm's first step: what every pair can be sure to reach
    labels_of_items = None if groups is None else list(groups)
    columns = {arm: column_key(values[:, arm]) for arm in {arm for pair in ordered for arm in pair}} if groups is None else {}

    def difference_of(a: int, b: int) -> PairedDifference:
        def compute() -> PairedDifference:
            return paired_difference(values[:, a], values[:, b], groups=labels_of_items, seed=seed, mde_alpha=mde_alpha,
                                     memo=INTERVALS)

        if groups is not None:
            return compute()
        found = PAIRS.difference(pair_key(columns[a], columns[b]), (seed,), compute)
        if found.mde_alpha != mde_alpha:  # kept from a table of another number of pairs: only the MDE's level differs
            units = unit_differences(values[:, a], values[:, b])
            mde = min_detectable_effect(units, alpha=mde_alpha).effect if units.size >= 2 else math.inf
            found = replace(found, mde=float(mde), mde_alpha=mde_alpha)
            PAIRS.keep_difference(pair_key(columns[a], columns[b]), (seed,), found)
        return found

    def interval_of(a: int, b: int, level: float, rejected: bool) -> Interval:
        def compute() -> Interval:
            return inverted_pair_interval(values[:, a], values[:, b], level, zero_accepted=not rejected,
                                          groups=labels_of_items, seed=seed)

        return compute() if groups is not None else PAIRS.inverted(pair_key(columns[a], columns[b]), (seed, level, not rejected), compute)

    differences = [difference_of(a, b) for a, b in ordered]  # a pair whose columns an earlier build tested is not tested again
    holm_decision = holm_levels([d.p_value for d in differences], alpha)
    return [
        PairVerdict(a, b, labels[a], labels[b], difference, p, rejected, interval_of(a, b, level, rejected), level)
        for (a, b), difference, p, rejected, level in zip(
            ordered, differences, holm_decision.adjusted, holm_decision.rejected, holm_decision.levels)
    ]


def _places(order: tuple[int, ...], separated: np.ndarray) -> dict[int, tuple[int, int]]:
    """The positions an arm could take: every arm it is not separated from could swap with it."""
    position = {arm: place + 1 for place, arm in enumerate(order)}
    result = {}
    for arm in order:
        together = [other for other in order if other == arm or not separated[arm, other]]
        result[arm] = (min(position[o] for o in together), max(position[o] for o in together))
    return result


def _start_omnibus_tests(
    oriented: np.ndarray, alpha: float, seed: int,
) -> Callable[[], tuple[FriedmanResult | None, NemenyiResult | None]]:
    """:func:`_omnibus_tests` started (in a thread for a large matrix: :mod:`evalsite.analysis.background`);
    call the result for its outcome. The results are the same either way: the test draws from its
    own seeded generator."""
    if oriented.shape[1] < 2:
        return _no_omnibus_tests
    return started("friedman", oriented.size, _omnibus_tests, oriented, alpha, seed)


def _no_omnibus_tests() -> tuple[None, None]:
    """One arm, or a caller that does not read them: no omnibus test."""
    return None, None


def _omnibus_tests(oriented: np.ndarray, alpha: float, seed: int) -> tuple[FriedmanResult, NemenyiResult]:
    friedman = friedman_test(oriented, seed=seed)
    return friedman, nemenyi_of_ranks(np.array(friedman.mean_ranks), friedman.n_items, alpha=alpha)


def _correction(n_pairs: int) -> str:
    """"Holm over the 3 pairs shown", "Holm over the 1 pair shown" (one pair: no adjustment)."""
    return f"Holm over the {count_of(n_pairs, 'pair')} shown"


def pair_phrase(pair: PairVerdict) -> str:
    """"+0.27 [0.15, 0.38] (97.5% Holm-level interval) vs left_to_right, p = 0.002 Holm": the
    difference is ahead − behind, the interval the one that agrees with the Holm decision; for a
    stop_when batch the sequence's sentence (:func:`sequence_text`)."""
    if pair.sequence is not None:
        return sequence_text(pair)
    d = pair.difference
    return (f"{signed(d.mean_diff)} {bounds_text(*pair.interval)} ({level_text(pair.interval)} Holm-level interval) "
            f"vs {pair.behind_label}, {p_clause(pair.holm_p)} Holm")


def sequence_text(pair: PairVerdict) -> str:
    """"decided after 240 of 1,000 items (anytime-valid, α 0.05): A > B by +0.08 [0.03, 0.13]"."""
    assert pair.sequence is not None
    return pair.sequence.phrase(pair.ahead_label, pair.behind_label, pair.difference.mean_diff)


def level_text(interval: Interval) -> str:
    """"97.5%": an interval's confidence, with as many digits as Holm's levels need."""
    return f"{100 * interval.confidence:.3g}%"


def detectable_phrase(pair: PairVerdict) -> str:
    """"not separated (could detect |Δ| ≥ 0.087)": the word used instead of "tied"; a stop_when
    pair says "equivalent within ±0.02" or "not decided (could still detect |Δ| ≥ 0.05)"."""
    if pair.sequence is not None:
        if pair.sequence.decision == "equivalent":
            return f"equivalent within ±{pair.sequence.margin:g} (anytime-valid)"
        return f"not decided (could still detect |Δ| ≥ {pair.sequence.half_width:.2g})"
    mde = pair.difference.mde
    return "not separated (too few units to detect any difference)" if math.isinf(mde) else (
        f"not separated (could detect |Δ| ≥ {mde:.2g})")


def _headline(arms: tuple[ArmPlace, ...], pairs: list[PairVerdict], metric: Metric, alpha: float) -> str:
    if len(arms) < 2:
        return "one arm: nothing to compare"
    top = arms[0].arm
    with_top = [p for p in pairs if top in (p.ahead, p.behind)]
    on = "" if metric.name == "score" else f" on {metric.name} ({metric.direction})"
    if len(with_top) == len(arms) - 1 and all(p.separated for p in with_top):
        weakest = max(with_top, key=_weakness)
        rest = "the other arm" if len(arms) == 2 else "every other arm"
        return f"{arms[0].label} is ahead of {rest}{on}: {pair_phrase(weakest)}"
    close = [p for p in with_top if not p.separated]
    if not close:
        return f"{arms[0].label} has the best {metric.name}; not every pair with it was tested"
    nearest = min(close, key=lambda p: abs(p.difference.mean_diff))
    others = [p.behind_label for p in close]
    detect = "" if nearest.sequence is not None else " " + detectable_phrase(nearest).removeprefix("not separated ")
    return (
        f"no arm is ahead of every other{on} at α = {alpha}: {arms[0].label} is not separated from "
        f"{', '.join(others)} — {pair_phrase(nearest)}{detect}"
    )


def _weakness(pair: PairVerdict) -> float:
    """How narrowly a separated pair is separated: its Holm p, or how close its sequence comes to 0."""
    if pair.sequence is None:
        return pair.holm_p
    return -min(abs(pair.interval.low), abs(pair.interval.high))


def _omnibus_sentence(friedman: FriedmanResult | None, alpha: float) -> str:
    if friedman is None:
        return "one arm: no omnibus test"
    if friedman.p_value < alpha:
        return f"Friedman omnibus test over mean ranks: {p_clause(friedman.p_value)} < α = {alpha}, the arms are not all alike"
    return f"Friedman omnibus test over mean ranks: {p_clause(friedman.p_value)} ≥ α = {alpha}, no evidence the arms differ in rank"


def _agreement(
    friedman: FriedmanResult | None, post_hoc: NemenyiResult | None, pairs: list[PairVerdict],
    order: tuple[int, ...], labels: Sequence[str], alpha: float,
) -> str | None:
    """One sentence when the mean-rank tests point elsewhere than the paired tests on a pair one of them
    separates; None when they agree or neither separates anything (a null leaderboard)."""
    if friedman is None or post_hoc is None:
        return None
    ranks = friedman.mean_ranks
    rejects = friedman.p_value < alpha
    reasons = []
    for pair in pairs:
        nemenyi_separates = rejects and post_hoc.p_values[pair.ahead, pair.behind] < alpha
        if not (pair.separated or nemenyi_separates):
            continue  # neither test separates the pair: neither order of it says anything
        if ranks[pair.behind] < ranks[pair.ahead] - 1e-12:
            reasons.append(f"{pair.behind_label} has the better mean rank but {pair.ahead_label} the better mean")
        elif nemenyi_separates != pair.separated:
            what = "separates" if nemenyi_separates else "does not separate"
            reasons.append(f"Nemenyi {what} {pair.ahead_label} and {pair.behind_label}, the paired test "
                           f"{'does' if pair.separated else 'does not'}")
    if rejects and not any(p.separated for p in pairs) and not reasons:
        reasons.append("Friedman says the arms are not all alike but no pair is separated")
    if not reasons:
        return None
    return (
        f"The order and groups follow the mean and the paired tests, not the mean ranks: {'; '.join(reasons)}. "
        "Mean ranks count how often an arm wins an item, not by how much, and Nemenyi's verdict on a pair "
        "changes with the other arms in the table."
    )
