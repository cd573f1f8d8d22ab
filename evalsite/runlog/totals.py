"""A run's totals: ``end.json``'s ``totals`` as one typed record, written and read.

:class:`RunTotals` is what a run's summary (:func:`evalsite.analysis.summary.summarise_run`) records
when the run stops, what ``evalsite run``, ``import`` and ``rescore`` report of each run they wrote
(``RunOutcome.summary``, ``ImportedRun.summary``, ``RescoreOutcome.summary``) and what
``Footer.totals`` reads back. :meth:`RunTotals.to_json` is the JSON ``end.json`` and
``evalsite show --json`` hold, key for key; :meth:`RunTotals.from_json` reads it back tolerantly
(an older footer records fewer figures: a figure it lacks reads as None, and ``recorded`` names
the ones it has) and refuses a figure of the wrong type or a negative count, naming the file and
the field. A record built in code refuses a negative count too (:class:`ValueError`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalsite.runlog.fields import FieldReader

#: The counts of a run's totals, each a whole number >= 0 when known.
RUN_COUNTS = ("cases", "items", "repeats", "errors", "skipped", "scored", "unknown_cost_cases", "input_tokens",
              "output_tokens", "planned")
#: The counts of one evaluator's totals.
EVALUATOR_COUNTS = ("n", "ok", "errors", "skipped")


def refuse_negative(record: object, *counts: str) -> None:
    """Refuse a count of ``record`` that is not a whole number >= 0 (None: unknown, allowed)."""
    for name in counts:
        value = getattr(record, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{type(record).__name__}.{name} must be a whole number >= 0, not {value!r}")


def _names(value: tuple[str, ...] | None) -> list[str] | None:
    return None if value is None else list(value)


def _tuple(value: list[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


@dataclass(frozen=True)
class EvaluatorTotals:
    """One evaluator's figures over a run (``totals.evaluators.<name>``; the rules are
    :class:`evalsite.analysis.summary.EvaluatorSummary`'s)."""

    version: str | None = None
    n: int | None = None
    ok: int | None = None
    errors: int | None = None
    skipped: int | None = None
    pass_rate: float | None = None
    mean: float | None = None
    label_counts: Mapping[str, int] = field(default_factory=dict)
    critical_failures: tuple[str, ...] | None = None
    passed: bool | None = None

    def __post_init__(self) -> None:
        refuse_negative(self, *EVALUATOR_COUNTS)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version, "n": self.n, "ok": self.ok, "errors": self.errors, "skipped": self.skipped,
            "pass_rate": self.pass_rate, "mean": self.mean, "label_counts": dict(self.label_counts),
            "critical_failures": _names(self.critical_failures), "passed": self.passed,
        }

    @classmethod
    def from_json(cls, fields: FieldReader) -> EvaluatorTotals:
        labels = fields.mapping("label_counts") or {}
        for label, count in labels.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise fields.bad(f"label_counts.{label}", "an integer >= 0", count)
        count = functools.partial(fields.integer, minimum=0)
        return cls(
            version=fields.text("version"),
            n=count("n"), ok=count("ok"), errors=count("errors"), skipped=count("skipped"),
            pass_rate=fields.number("pass_rate"),
            mean=fields.number("mean"),
            label_counts=labels,
            critical_failures=_tuple(fields.texts("critical_failures")),
            passed=fields.flag("passed"),
        )


@dataclass(frozen=True)
class RunTotals:
    """A run's figures as ``end.json`` records them (docs/reference/run-format.md#endjson): the run's
    summary, and from the runner ``planned`` (the cases its plan holds) and ``truncated_items``
    (items with ``finish_reason: length``), which other writers leave out (None)."""

    cases: int | None = None
    items: int | None = None
    repeats: int | None = None
    errors: int | None = None
    skipped: int | None = None
    scored: int | None = None
    unscored: bool | None = None
    mean_score: float | None = None
    pass_rate: float | None = None
    passed: bool | None = None
    critical_failures: tuple[str, ...] | None = None
    cost_usd: float | None = None
    known_cost_usd: float | None = None
    unknown_cost_cases: int | None = None
    cost_per_case: float | None = None
    cost_per_correct: float | None = None
    scoring_cost_usd: float | None = None
    mean_latency_ms: float | None = None
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    noise_std: float | None = None
    served_models: tuple[str, ...] = ()
    served_model_changed: bool | None = None
    evaluators: Mapping[str, EvaluatorTotals] = field(default_factory=dict)
    planned: int | None = None
    truncated_items: tuple[str, ...] | None = None
    #: the keys of the JSON read (an older footer holds fewer figures); None for a record built in code
    recorded: frozenset[str] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        refuse_negative(self, *RUN_COUNTS)

    def to_json(self) -> dict[str, Any]:
        """The figures in the order ``evalsite show --json`` prints them (``planned`` and
        ``truncated_items`` only when set)."""
        record: dict[str, Any] = {
            "cases": self.cases, "items": self.items, "repeats": self.repeats, "errors": self.errors,
            "skipped": self.skipped, "scored": self.scored, "unscored": self.unscored,
            "mean_score": self.mean_score, "pass_rate": self.pass_rate, "passed": self.passed,
            "critical_failures": _names(self.critical_failures),
            "cost_usd": self.cost_usd, "known_cost_usd": self.known_cost_usd,
            "unknown_cost_cases": self.unknown_cost_cases, "cost_per_case": self.cost_per_case,
            "cost_per_correct": self.cost_per_correct, "scoring_cost_usd": self.scoring_cost_usd,
            "mean_latency_ms": self.mean_latency_ms, "latency_p50_ms": self.latency_p50_ms,
            "latency_p95_ms": self.latency_p95_ms, "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens, "noise_std": self.noise_std,
            "served_models": list(self.served_models), "served_model_changed": self.served_model_changed,
            "evaluators": {name: totals.to_json() for name, totals in self.evaluators.items()},
        }
        if self.planned is not None:
            record["planned"] = self.planned
        if self.truncated_items is not None:
            record["truncated_items"] = list(self.truncated_items)
        return record

    @classmethod
    def from_json(cls, data: Any, where: str) -> RunTotals:
        """Check ``data`` (``end.json``'s ``totals``); ``where`` names the file."""
        reader = FieldReader(data, where, "totals", prefix="totals.")
        evaluators = {name: EvaluatorTotals.from_json(reader.inner("evaluators").inner(name))
                      for name in reader.objects("evaluators")}
        count, number, flag = functools.partial(reader.integer, minimum=0), reader.number, reader.flag
        return cls(
            cases=count("cases"), items=count("items"), repeats=count("repeats"), errors=count("errors"),
            skipped=count("skipped"), scored=count("scored"), unscored=flag("unscored"),
            mean_score=number("mean_score"), pass_rate=number("pass_rate"), passed=flag("passed"),
            critical_failures=_tuple(reader.texts("critical_failures")),
            cost_usd=number("cost_usd"), known_cost_usd=number("known_cost_usd"),
            unknown_cost_cases=count("unknown_cost_cases"), cost_per_case=number("cost_per_case"),
            cost_per_correct=number("cost_per_correct"), scoring_cost_usd=number("scoring_cost_usd"),
            mean_latency_ms=number("mean_latency_ms"), latency_p50_ms=number("latency_p50_ms"),
            latency_p95_ms=number("latency_p95_ms"), input_tokens=count("input_tokens"),
            output_tokens=count("output_tokens"), noise_std=number("noise_std"),
            served_models=tuple(reader.texts("served_models") or ()),
            served_model_changed=flag("served_model_changed"),
            evaluators=evaluators,
            planned=count("planned"),
            truncated_items=_tuple(reader.texts("truncated_items")),
            recorded=frozenset(data),
        )

    def records(self, name: str) -> bool:
        """Whether the totals hold figure ``name`` (a record built in code holds every figure)."""
        return self.recorded is None or name in self.recorded
