"""The verdict's view of runs that stopped by ``stop_when``: each pair judged by its anytime-valid
confidence sequence at the stopping look, never by a fixed-n test of the stopped sample.

When any run of a comparison was walked under a ``stop_when`` rule (its ``run.json`` records
it), the items every arm holds were chosen by looking at the data, so a fixed-n p-value over them
is not valid. The verdict then rebuilds, from the cases, the very sequences the runner stopped
on (:mod:`evalsite.stats.looks`: the seeded order, the blocks, the pair's Bonferroni share of α)
and reads each pair's decision and interval from the last look.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from evalsite.analysis.wording import sequence_phrase
from evalsite.runlog.records import RunHeader, StopOrder
from evalsite.stats import Interval
from evalsite.stats.confseq import METHOD, family_alpha
from evalsite.stats.looks import Look, block_ends, draw_order, pair_looks

if TYPE_CHECKING:  # the regression report holds a PairSequence, so it imports this module
    from evalsite.analysis.regression import RegressionReport

#: A cluster of one, as every clustered reader labels an item without the cluster field.
ALONE_PREFIX = "\0item:"


@dataclass(frozen=True)
class Stopped:
    """The rule the compared runs stopped under, and how many items their plan had."""

    rule: StopOrder
    items_planned: int | None


@dataclass(frozen=True)
class PairSequence:
    """One pair's sequence (ahead − behind) at every look; the last look is where it stopped.

    ``decision`` is ``separated``, ``equivalent`` or None (not decided: a budget stop);
    ``alpha`` is the family's α (the verdict's, by default ``stop_when.alpha``), ``pair_alpha`` this pair's share of it."""

    looks: tuple[Look, ...]
    alpha: float
    pair_alpha: float
    margin: float | None
    items_used: int
    items_planned: int | None

    @property
    def last(self) -> Look:
        return self.looks[-1]

    @property
    def decision(self) -> str | None:
        return self.last.decision

    @property
    def half_width(self) -> float:
        """Half the final interval's width: about the smallest |Δ| the sequence could still detect."""
        return (self.last.high - self.last.low) / 2

    def phrase(self, ahead: str, behind: str, difference: float) -> str:
        """"decided after 240 of 1,000 items (anytime-valid, α 0.05): A > B by +0.08 [0.03, 0.13]"."""
        return sequence_phrase(used=self.items_used, planned=self.items_planned, alpha=self.alpha, ahead=ahead,
                               behind=behind, difference=difference, low=self.last.low, high=self.last.high,
                               decision=self.decision, margin=self.margin, half_width=self.half_width)

    def interval(self) -> Interval:
        return Interval(self.last.low, self.last.high, 1 - self.pair_alpha, f"{METHOD} at the stopping look")


def stopped_rule(headers: Sequence[RunHeader]) -> Stopped | None:
    """The ``stop_when`` rule of the first compared run that has one (None: no run stopped adaptively)."""
    for header in headers:
        if header.stop_when is not None:
            planned = header.plan.get("items")
            return Stopped(header.stop_when, planned if isinstance(planned, int) else header.dataset.items)
    return None


def pair_sequence(
    ahead: np.ndarray, behind: np.ndarray, item_ids: Sequence[str], groups: Sequence[Hashable] | None, stopped: Stopped,
    alpha: float,
) -> PairSequence:
    """The pair's looks over the items both arms hold, in the rule's seeded order (whole clusters),
    at familywise level 1 − ``alpha`` split over the batch's pairs. A sequence holds at every
    stopping time, so a reader may ask it at another α than the rule stopped on."""
    rule = stopped.rule
    units = None if groups is None else [str(group) for group in groups]
    order = draw_order(list(item_ids), rule.seed, units)
    ordered_units = None if units is None else [units[i] for i in order]
    differences = (np.asarray(ahead, dtype=float) - np.asarray(behind, dtype=float))[order]
    ends = block_ends(ordered_units, len(order), rule.check_every)
    pair_alpha = family_alpha(alpha, rule.pairs)
    looks = pair_looks(differences, ordered_units, ends, alpha=pair_alpha, margin=rule.margin,
                       horizon=rule.horizon)
    return PairSequence(tuple(looks), alpha, pair_alpha, rule.margin, len(order), stopped.items_planned)


def sequential_regression(report: RegressionReport, headers: Sequence[RunHeader], alpha: float,
                          clusters: Mapping[str, str] | None) -> RegressionReport:
    """``report`` (current vs baseline) judged by the anytime-valid sequence when either run stopped
    by ``stop_when``: its fixed-n p-value is dropped, the interval is the sequence's at the stop."""
    stopped = stopped_rule(headers)
    items = report.items
    scored = ~np.isnan(items.current_score) & ~np.isnan(items.baseline_score)
    if stopped is None or not scored.any():
        return report
    ids = items.item_id[scored].tolist()
    groups = None if not clusters else [clusters.get(i, ALONE_PREFIX + i) for i in ids]
    sequence = pair_sequence(items.current_score[scored], items.baseline_score[scored], ids, groups, stopped, alpha)
    summary = replace(report.summary, p_value=None, test_kind="anytime-valid", ci_low=sequence.last.low,
                      ci_high=sequence.last.high, confidence=1 - sequence.pair_alpha, within_noise=None)
    return replace(report, summary=summary, sequence=sequence)
