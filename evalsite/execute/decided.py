"""``stop_when: {decided: true}``: walk every arm over the same items, block by block, and stop
the batch once every pair of arms is decided by its anytime-valid confidence sequence.

The items are drawn in the seeded order of :func:`evalsite.stats.looks.draw_order` (whole
clusters when items declare one). Every arm × repeat of a block finishes before the look; after
it, each pair's sequence (:func:`evalsite.stats.looks.pair_looks`, at the pair's Bonferroni share
of α) is read from the cases on disk, so a resumed batch rebuilds the same looks from what it
recorded and calls nothing twice. The walk stops when every pair is ``separated`` or
``equivalent`` (after ``min_items``), or a budget is spent (``max_items``, ``max_cost_usd``, the
dataset); items not reached are simply absent and the runs are ``completed``, their footers
recording the rule, each look and why it stopped (docs/reference/run-format.md#stop_when).
Evaluators' scores lie in [0, 1], so each difference lies in [-1, 1] as the sequences need; an
item a scoring error left without a score on some arm is left out of the sequences.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from evalsite.analysis.metadata import cluster_key
from evalsite.errors import PlanError, RunLogError
from evalsite.experiment.datasets import Item
from evalsite.experiment.manifest import StopRule
from evalsite.experiment.plan import Plan
from evalsite.project import Project
from evalsite.runlog.records import RunStatus
from evalsite.runlog.store import read_footer, read_header, run_directories
from evalsite.stats.confseq import family_alpha
from evalsite.stats.looks import Look, block_ends, draw_order, pair_looks

#: A cluster of one: the label of an item without the cluster field (as the analysis names it).
ALONE_PREFIX = "\0item:"


@dataclass
class DecidedWalk:
    """The adaptive walk of one batch: its rule, the items in draw order and the looks taken."""

    rule: StopRule
    items: list[Item]  # in draw order
    units: list[str] | None  # each item's cluster, in draw order (None: every item its own unit)
    cluster_key: str | None
    ends: list[int]  # items seen at each planned look
    config_ids: list[str]  # the plan's configs in order: the pairs' order, however the runs were opened
    looks: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    budget: str | None = None
    interrupted: bool = False

    @classmethod
    def of(cls, project: Project, plan: Plan) -> DecidedWalk | None:
        rule = plan.manifest.stop_when
        if rule is None:
            return None
        check_stop_rule(plan)
        key = cluster_key(project)
        items = plan.items_for(plan.configs[0])
        labels = [_cluster(item, key) for item in items]
        clustered = any(label is not None for label in labels)
        units = [label if label is not None else ALONE_PREFIX + item.item_id for item, label in zip(items, labels)]
        order = draw_order([item.item_id for item in items], rule.seed, units if clustered else None)
        ordered_units = [units[i] for i in order] if clustered else None
        ends = block_ends(ordered_units, len(order), rule.check_every)
        if rule.max_items is not None:  # the first look at or past max_items is the last
            ends = ends[: next((i for i, end in enumerate(ends) if end >= rule.max_items), len(ends) - 1) + 1]
        return cls(rule, [items[i] for i in order], ordered_units, key if clustered else None, ends,
                   [config.config_id for config in plan.configs])

    # ----- what the header records

    @property
    def horizon(self) -> int:
        """Units the sequence plans for (fixed before any data: the planned items or clusters)."""
        last = self.ends[-1]
        return last if self.units is None else len(dict.fromkeys(self.units[:last]))

    def header_record(self, plan: Plan) -> dict[str, Any]:
        return {**self.rule.record(), "arms": [config.label for config in plan.configs],
                "cluster_key": self.cluster_key, "horizon": self.horizon}

    # ----- the walk

    async def walk(self, states: list[Any], work: Callable[[list[Any], list[tuple[Any, ...]]], Awaitable[None]],
                   stopped: Callable[[], bool]) -> None:
        """Each block's pending cases through ``work``, a look after each; stops when decided or spent."""
        states = sorted(states, key=lambda state: self.config_ids.index(state.job.config.config_id))
        start = 0
        for index, end in enumerate(self.ends):
            block = {item.item_id: position for position, item in enumerate(self.items[start:end], start)}
            entries = [(block[item.item_id], repeat, arm, state, item) for arm, state in enumerate(states)
                       for item, repeat in state.pending if item.item_id in block]
            entries.sort(key=lambda entry: entry[:3])
            if entries:
                await work(states, [(state, item, repeat) for _, repeat, _, state, item in entries])
            if stopped():  # a ceiling, the deadline or Ctrl-C: the runs stay resumable
                self.reason, self.budget, self.interrupted = "budget", "the batch was stopped before this look", True
                return
            look = self._look(states, end)
            self.looks.append(look)
            start = end
            reason = self._stop_reason(look, end, last=index == len(self.ends) - 1)
            if reason is not None:
                self.reason = reason
                return

    def _look(self, states: list[Any], end: int) -> dict[str, Any]:
        item_ids = [item.item_id for item in self.items[:end]]
        scores = np.stack([_item_means(state, item_ids) for state in states])  # arms × items
        known = np.all(np.isfinite(scores), axis=0)
        units = None if self.units is None else [u for u, ok in zip(self.units[:end], known) if ok]
        alpha = family_alpha(self.rule.alpha, max(1, len(states) * (len(states) - 1) // 2))
        pairs = []
        for a, b in combinations(range(len(states)), 2):
            differences = (scores[a] - scores[b])[known]
            looks = pair_looks(differences, units, [int(known.sum())], alpha=alpha, margin=self.rule.margin,
                               horizon=self.horizon) if differences.size else []
            pairs.append(_pair_record(states[a], states[b], looks[-1] if looks else None))
        return {"n": end, "units": int(known.sum()) if units is None else len(dict.fromkeys(units)), "pairs": pairs,
                "cost_usd": _spent(states, item_ids)}

    def _stop_reason(self, look: dict[str, Any], end: int, last: bool) -> str | None:
        decisions = [pair["decision"] for pair in look["pairs"]]
        if end >= self.rule.min_items and all(decisions):
            return "separated" if all(d == "separated" for d in decisions) else (
                "equivalent" if all(d == "equivalent" for d in decisions) else "decided")
        if self.rule.max_cost_usd is not None and look["cost_usd"] >= self.rule.max_cost_usd:
            self.budget = f"stop_when.max_cost_usd {self.rule.max_cost_usd:g} spent"
            return "budget"
        if last:
            self.budget = (f"stop_when.max_items {self.rule.max_items}" if self.rule.max_items is not None
                           and end < len(self.items) else "every item used")
            return "budget"
        return None

    # ----- what the footers record

    @property
    def items_used(self) -> int:
        return self.looks[-1]["n"] if self.looks else 0

    def close(self, states: list[Any]) -> None:
        """Mark the cases past the stop as not needed and write each run's ``stop_when`` record."""
        if self.reason is None:
            return
        used = {item.item_id for item in self.items[: self.items_used]}
        for state in states:
            recorded = [*state.previous, *state.cases]
            not_run = [key for key in state.pending if key[0].item_id not in used]
            saved = 0 if self.interrupted else len(not_run)  # an interrupted batch runs them on resume
            state.not_needed = saved
            state.stop_when = self._footer(recorded, len(state.keys), saved)

    def _footer(self, recorded: Sequence[Any], planned: int, saved: int) -> dict[str, Any]:
        costs = [c.get("cost_usd") for c in recorded if c.get("cost_usd") is not None]
        per_case = sum(costs) / len(costs) if costs and len(costs) == len(recorded) else None
        return {
            "rule": self.rule.record(), "reason": self.reason, **({"budget": self.budget} if self.budget else {}),
            "look": len(self.looks), "looks_planned": len(self.ends),
            "items_used": self.items_used, "items_planned": len(self.items),
            "cases_used": len(recorded), "cases_planned": planned, "calls_saved": saved,
            "cost_saved_usd": None if per_case is None else per_case * saved,
            "looks": self.looks,
        }


def resumable_batch(runs_dir: Path, directory: Path) -> list[Path]:
    """The runs to resume with ``directory``: every unfinished run of its adaptive batch (an
    adaptive batch walks its arms together, so they resume together); just ``directory`` otherwise."""
    header = read_header(directory)
    if header.stop_when is None or header.batch_id is None:
        return [directory]
    batch = []
    for other in run_directories(runs_dir):
        try:
            if read_header(other).batch_id != header.batch_id:
                continue
        except RunLogError:  # an unreadable run belongs to no batch
            continue
        footer = read_footer(other)
        if footer is None or footer.status != RunStatus.COMPLETED:
            batch.append(other)
    return sorted(batch, key=lambda path: path != directory) or [directory]


def check_stop_rule(plan: Plan) -> None:
    """Refuse a ``stop_when`` plan the walk cannot pair (``run``, ``--dry-run`` and ``validate`` alike)."""
    problem = None if plan.manifest.stop_when is None else _stop_rule_problem(plan)
    if problem is not None:
        raise PlanError(f"{plan.manifest.path}: stop_when: {problem}")


def _stop_rule_problem(plan: Plan) -> str | None:
    if len(plan.configs) < 2:
        return f"needs at least two arms (or configs) to compare; this plan runs {len(plan.configs)}"
    if not plan.manifest.evaluators:
        return "the experiment has no evaluators, so there is no score to decide on"
    if plan.shard is not None:
        return "a sharded run cannot look at every arm's items together; drop --shard or stop_when"
    first = [item.item_id for item in plan.items_for(plan.configs[0])]
    if any([item.item_id for item in plan.items_for(config)] != first for config in plan.configs[1:]):
        return "every arm must run the same items (paired)"
    return None


def _cluster(item: Item, key: str) -> str | None:
    metadata = item.row.get("metadata")
    value = metadata.get(key) if isinstance(metadata, dict) else None
    return None if value is None else str(value)


def _item_means(state: Any, item_ids: list[str]) -> np.ndarray:
    """Each item's mean over its repeats of the case score (NaN when no repeat has one)."""
    sums: dict[str, list[float]] = {}
    for case in [*state.previous, *state.cases]:
        score = case.get("score")
        if score is not None:
            sums.setdefault(case["item_id"], []).append(float(score))
    return np.array([np.mean(sums[i]) if i in sums else np.nan for i in item_ids])


def _spent(states: list[Any], item_ids: list[str]) -> float:
    """What the cases of ``item_ids`` cost (generation and judges), so a resumed batch's look is the same."""
    seen = set(item_ids)
    return float(sum((c.get("cost_usd") or 0) + (c.get("scoring_cost_usd") or 0)
                     for state in states for c in [*state.previous, *state.cases] if c["item_id"] in seen))


def _pair_record(a: Any, b: Any, look: Look | None) -> dict[str, Any]:
    return {"a": a.job.config.label, "b": b.job.config.label,
            **({"low": look.low, "high": look.high, "decision": look.decision} if look else
               {"low": None, "high": None, "decision": None})}
