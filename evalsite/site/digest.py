"""A run's numbers, computed once from its cases: totals, per-item results, per-evaluator aggregates.

Pages read digests, never raw cases (except a run's own case listing and an experiment's matrix,
which read their runs when they render), so a site over many large runs holds numbers in memory,
not outputs.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from statistics import fmean

import numpy as np

from evalsite import stats
from evalsite.runlog.store import Run


@dataclass
class ItemResult:
    """One item of a run, over its repeats."""

    item_id: str
    scores: list[float | None] = field(default_factory=list)
    passed: list[bool | None] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    costs: list[float | None] = field(default_factory=list)
    errors: int = 0

    @property
    def mean_score(self) -> float | None:
        known = [s for s in self.scores if s is not None]
        return fmean(known) if known else None

    @property
    def pass_rate(self) -> float | None:
        known = [p for p in self.passed if p is not None]
        return fmean(known) if known else None

    @property
    def mean_latency_ms(self) -> float | None:
        return fmean(self.latencies) if self.latencies else None

    @property
    def mean_cost_usd(self) -> float | None:
        return None if not self.costs or None in self.costs else fmean(self.costs)


@dataclass
class EvaluatorAggregate:
    """Per-evaluator numbers of one run; errors and skips count against the pass rate."""

    name: str
    version: str
    n: int = 0
    ok: int = 0
    errors: int = 0
    skipped: int = 0
    passed: int = 0
    score_sum: float = 0.0
    labels: Counter = field(default_factory=Counter)
    critical_failures: int = 0

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.n if self.n else None

    @property
    def mean(self) -> float | None:
        return self.score_sum / self.ok if self.ok else None


@dataclass
class RunDigest:
    run: Run
    items: dict[str, ItemResult]
    evaluators: list[EvaluatorAggregate]
    cases: int
    errors: int
    scored: int
    score_sum: float
    verdicts: int
    passed: int
    cost_total: float | None
    latencies_ms: list[float]
    input_tokens: int | None
    output_tokens: int | None
    repeats: list[int]
    critical_known: bool
    critical_failures: int
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.verdicts if self.verdicts else None

    @property
    def unscored(self) -> bool:
        return self.scored == 0

    @property
    def cost_per_case(self) -> float | None:
        return self.cost_total / self.cases if self.cost_total is not None and self.cases else None

    @property
    def cost_per_correct(self) -> float | None:
        return self.cost_total / self.passed if self.cost_total is not None and self.passed else None

    def latency_percentile(self, q: float) -> float | None:
        """Nearest-rank percentile of the cases' latencies (an observed value, never interpolated)."""
        return stats.nearest_rank_percentile(self.latencies_ms, q) if self.latencies_ms else None

    def score_matrix(self) -> np.ndarray:
        """Items × repeats of case scores (NaN where missing or unscored), scored items only."""
        return _matrix([item.scores for item in self.items.values() if item.mean_score is not None])

    def pass_matrix(self) -> np.ndarray:
        """Items × repeats of verdicts as 0/1 (NaN where missing), items with a verdict only."""
        return _matrix([[None if p is None else float(p) for p in item.passed]
                        for item in self.items.values() if item.pass_rate is not None])


def _matrix(rows: list[list[float | None]]) -> np.ndarray:
    width = max((len(r) for r in rows), default=0)
    return np.array([[np.nan if v is None else v for v in r] + [np.nan] * (width - len(r)) for r in rows],
                    dtype=float).reshape(len(rows), width)


def digest_run(run: Run, cases: list[dict], critical: dict[str, bool] | None) -> RunDigest:
    """Summarise ``cases`` (numbers only: no inputs or outputs are kept)."""
    items: dict[str, ItemResult] = {}
    evaluators: dict[str, EvaluatorAggregate] = {}
    totals = Counter()
    score_sum, cost_total, latencies = 0.0, 0.0, []
    tokens_in, tokens_out, cost_known = 0, 0, True
    tokens_in_known = tokens_out_known = True
    repeats: set[int] = set()
    critical_failures, critical_known = 0, critical is not None
    for case in sorted(cases, key=_case_order):
        item = items.setdefault(str(case.get("item_id")), ItemResult(str(case.get("item_id"))))
        repeats.add(_int(case.get("repeat")))
        score, passed = finite_number(case.get("score")), case.get("passed")
        item.scores.append(score)
        item.passed.append(passed if isinstance(passed, bool) else None)
        totals["cases"] += 1
        if case.get("error"):
            totals["errors"] += 1
            item.errors += 1
        if score is not None:
            totals["scored"] += 1
            score_sum += score
        if isinstance(passed, bool):
            totals["verdicts"] += 1
            totals["passed"] += passed
        is_critical = case_critical(case, critical) is True
        critical_known = critical_known or isinstance(case.get("critical"), bool)
        if is_critical and passed is False:
            critical_failures += 1
        latency = finite_number(case.get("latency_ms"))
        if latency is not None:
            latencies.append(latency)
            item.latencies.append(latency)
        cost = finite_number(case.get("cost_usd"))
        item.costs.append(cost)
        if cost is None:
            cost_known = False
        else:
            cost_total += cost
        if isinstance(case.get("input_tokens"), int):
            tokens_in += case["input_tokens"]
        else:
            tokens_in_known = False
        if isinstance(case.get("output_tokens"), int):
            tokens_out += case["output_tokens"]
        else:
            tokens_out_known = False
        for entry in case.get("scores") or []:
            _add_score(evaluators, entry, is_critical)
    latencies.sort()
    return RunDigest(
        run=run,
        items=dict(sorted(items.items(), key=lambda pair: item_sort_key(pair[0]))),
        evaluators=[evaluators[name] for name in sorted(evaluators)],
        cases=totals["cases"],
        errors=totals["errors"],
        scored=totals["scored"],
        score_sum=score_sum,
        verdicts=totals["verdicts"],
        passed=totals["passed"],
        cost_total=cost_total if cost_known and totals["cases"] else None,
        latencies_ms=latencies,
        input_tokens=tokens_in if tokens_in_known and totals["cases"] else None,
        output_tokens=tokens_out if tokens_out_known and totals["cases"] else None,
        repeats=sorted(repeats),
        critical_known=critical_known,
        critical_failures=critical_failures,
    )


def case_critical(case: dict, dataset_critical: dict[str, bool] | None) -> bool | None:
    """Whether a case's row is ``metadata.critical``: the case's own ``critical`` field when the run
    recorded one, else the dataset file's row (``None`` when neither is known)."""
    if isinstance(case.get("critical"), bool):
        return case["critical"]
    if dataset_critical is None:
        return None
    return dataset_critical.get(str(case.get("item_id")), False)


def _add_score(evaluators: dict[str, EvaluatorAggregate], entry: dict, is_critical: bool) -> None:
    if not isinstance(entry, dict):
        return
    name = str(entry.get("evaluator"))
    aggregate = evaluators.setdefault(name, EvaluatorAggregate(name, str(entry.get("version"))))
    aggregate.n += 1
    if entry.get("error"):
        aggregate.errors += 1
    elif entry.get("skipped"):
        aggregate.skipped += 1
    else:
        score = finite_number(entry.get("score"))
        if score is not None:
            aggregate.ok += 1
            aggregate.score_sum += score
    if entry.get("passed") is True and not entry.get("error"):
        aggregate.passed += 1
    elif is_critical:
        aggregate.critical_failures += 1
    if entry.get("label") is not None:
        aggregate.labels[str(entry["label"])] += 1


def item_sort_key(item_id: str) -> tuple:
    """Natural order: ``q2`` before ``q10``, ``9`` before ``10``."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", item_id) if part)


def _case_order(case: dict) -> tuple:
    return item_sort_key(str(case.get("item_id"))), _int(case.get("repeat"))


def _int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def finite_number(value) -> float | None:
    """A finite int or float as float; anything else (bool, NaN, text, None) as None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None
