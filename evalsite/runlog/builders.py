"""The records evalsite writes into a run, each built in one place: header, case line, footer.

The reader's records (:mod:`evalsite.runlog.records`) say what a file holds; these say what a
writer puts there. Every writer of a run — the runner, the importers, ``merge`` and ``rescore`` —
builds its ``run.json`` as a :class:`HeaderRecord` (with its :class:`DatasetRecord` and
:class:`PlanRecord`), each case it executes or imports as a :class:`CaseRecord` (or its line
directly, where a record per case costs more than the line: :func:`case_json` for the runner,
:func:`imported_case_json` and :func:`score_json` for an import) and its
``end.json`` as a :class:`FooterRecord` (whose ``totals`` are a :class:`~evalsite.runlog.totals.RunTotals`),
and hands :meth:`to_json` to :class:`~evalsite.runlog.store.RunWriter`. ``to_json`` is the
format of docs/reference/run-format.md, key for key (a case line's keys in the order they have
always been written). A record refuses a value no reader would accept (a negative count or
repeat) with a :class:`ValueError` naming the field. The decisions log's line is
:class:`evalsite.runlog.decisions.Decision` (built by ``Decision.about``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from evalsite.runlog.fingerprint import fingerprint_hash
from evalsite.runlog.records import RunHeader, RunStatus, Score
from evalsite.runlog.totals import RunTotals, refuse_negative

#: The fields of a header every writer sets; the rest of a header are its sections.
HEADER_FIELDS = ("batch_id", "experiment", "arm_id", "config", "config_id", "dataset", "evaluators", "fingerprint",
                 "fingerprint_hash", "started_at", "plan")
#: What the writer adds to every header (:meth:`evalsite.runlog.store.RunWriter.create`).
WRITER_FIELDS = ("format_version", "run_id")


# ----------------------------------------------------------------------------- run.json


@dataclass(frozen=True)
class DatasetRecord:
    """``run.json``'s ``dataset``: the file (``None`` for an import without one), its content id
    and item count; an import's dataset ``name``; the expected side's ``reference_tier`` when declared."""

    path: str | None
    dataset_id: str | None
    items: int | None
    name: str | None = None
    reference_tier: str | None = None

    def __post_init__(self) -> None:
        refuse_negative(self, "items")

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {"path": self.path}
        if self.name is not None:
            record["name"] = self.name
        record.update(dataset_id=self.dataset_id, items=self.items)
        if self.reference_tier is not None:
            record["reference_tier"] = self.reference_tier
        return record


@dataclass(frozen=True)
class PlanRecord:
    """``run.json``'s ``plan``: the items, the repeats per item and the cases the run is meant to hold."""

    items: int | None
    repeat: int | None
    cases: int | None

    def __post_init__(self) -> None:
        refuse_negative(self, "items", "repeat", "cases")

    @classmethod
    def of(cls, plan: Mapping[str, Any]) -> PlanRecord:
        """A plan as a header or :meth:`evalsite.experiment.plan.Plan.totals` records it."""
        return cls(plan.get("items"), plan.get("repeat"), plan.get("cases"))

    def to_json(self) -> dict[str, Any]:
        return {"items": self.items, "repeat": self.repeat, "cases": self.cases}


@dataclass(frozen=True)
class HeaderRecord:
    """``run.json`` as a writer builds it (the writer adds ``format_version`` and ``run_id``).

    ``sections`` holds the header's other fields, as each writer records them: the runner's
    ``manifest_path``, ``submitted_manifest``, ``schedule``, ``prompt``, ``shard`` and ``stop_when``;
    an import's ``source``; ``merged_from``; a re-scored run's ``derived_from`` and ``rescore_manifest``."""

    batch_id: str | None
    experiment: str | None
    arm_id: str | None
    config: Mapping[str, Any]
    config_id: str | None
    dataset: DatasetRecord
    evaluators: Mapping[str, Mapping[str, Any]]
    fingerprint: Mapping[str, Any]
    fingerprint_hash: str | None
    started_at: str | None
    plan: PlanRecord
    sections: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        taken = sorted(set(self.sections) & {*HEADER_FIELDS, *WRITER_FIELDS})
        if taken:
            raise ValueError(f"HeaderRecord.sections must not hold {', '.join(taken)}: a field of its own")

    @classmethod
    def of(cls, *, batch_id: str, experiment: str | None, arm_id: str, config: Mapping[str, Any], config_id: str,
           dataset: DatasetRecord, evaluators: Mapping[str, Mapping[str, Any]], fingerprint: Mapping[str, Any],
           started_at: str | None, plan: PlanRecord, sections: Mapping[str, Any] | None = None) -> HeaderRecord:
        """A new run's header; ``fingerprint_hash`` is the hash of ``fingerprint``."""
        return cls(batch_id, experiment, arm_id, config, config_id, dataset, evaluators, fingerprint,
                   fingerprint_hash(dict(fingerprint)), started_at, plan, dict(sections or {}))

    @classmethod
    def carried(cls, stored: RunHeader) -> HeaderRecord:
        """A stored run's header as a new run's starting point (``merge``, ``rescore``): every field
        as recorded, the writer's own left out."""
        dataset = stored.raw.get("dataset")
        name = dataset.get("name") if isinstance(dataset, dict) else None
        return cls(
            stored.batch_id, stored.experiment, stored.arm_id, stored.config, stored.config_id,
            DatasetRecord(stored.dataset.path, stored.dataset.dataset_id, stored.dataset.items,
                          name if isinstance(name, str) else None, stored.dataset.reference_tier),
            stored.evaluators, stored.fingerprint, stored.fingerprint_hash, stored.started_at,
            PlanRecord.of(stored.plan),
            {key: value for key, value in stored.raw.items() if key not in (*HEADER_FIELDS, *WRITER_FIELDS)},
        )

    def with_fingerprint(self, fingerprint: Mapping[str, Any]) -> HeaderRecord:
        """This header measuring ``fingerprint`` (and its hash)."""
        return replace(self, fingerprint=fingerprint, fingerprint_hash=fingerprint_hash(dict(fingerprint)))

    def with_sections(self, *, drop: Sequence[str] = (), **added: Any) -> HeaderRecord:
        """This header without the sections ``drop`` names, with ``added``."""
        kept = {key: value for key, value in self.sections.items() if key not in drop}
        return replace(self, sections={**kept, **added})

    def to_json(self) -> dict[str, Any]:
        return {
            "batch_id": self.batch_id,
            "experiment": self.experiment,
            "arm_id": self.arm_id,
            "config": self.config,
            "config_id": self.config_id,
            "dataset": self.dataset.to_json(),
            "evaluators": self.evaluators,
            "fingerprint": self.fingerprint,
            "fingerprint_hash": self.fingerprint_hash,
            "started_at": self.started_at,
            "plan": self.plan.to_json(),
            **self.sections,
        }


# ----------------------------------------------------------------------------- cases.jsonl


@dataclass(slots=True)
class Execution:
    """What a case evalsite executed records beyond an imported one: whether its row is critical,
    what its judges cost, the calls it made, and what only some cases have (a mock's answer, the
    checkpoint it started from, the response cache's mark, a conversation, who answered).

    Not frozen, unlike the records: the runner builds one per case and hands it to
    :func:`case_json` at once, and a frozen dataclass's ``__init__`` (``object.__setattr__`` per
    field) cost ~2 µs of the ~3 µs it takes."""

    critical: bool
    scoring_cost_usd: float | None
    attempts: int
    emulated: bool = False
    checkpoint: str | None = None
    cache: str | None = None
    transcript: Sequence[Any] | None = None
    turn_outputs: Sequence[Any] | None = None
    turn_figures: Sequence[Mapping[str, Any]] | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)  # request_ids, served_model, system_fingerprint, thread_id

    def __post_init__(self) -> None:
        refuse_negative(self, "attempts")

    def extra(self) -> dict[str, Any]:
        """The optional fields, in the order a case line holds them after ``attempts``."""
        record: dict[str, Any] = {}
        if self.emulated:
            record["emulated"] = True
        if self.checkpoint is not None:
            record["checkpoint"] = self.checkpoint
        if self.cache is not None:
            record["cache"] = self.cache
        if self.transcript is not None:
            record["transcript"] = self.transcript
            record["turn_outputs"] = self.turn_outputs
        if self.turn_figures is not None:
            record["turn_figures"] = self.turn_figures
        record.update(self.provenance)
        return record


@dataclass(frozen=True)
class CaseRecord:
    """One line of ``cases.jsonl`` as the runner or an importer builds it (``execution`` set for
    a case evalsite executed, None for an imported one)."""

    item_id: str
    item_sha: str | None
    repeat: int
    input: Any
    expected: Any
    output: Any
    error: str | None
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    finish_reason: str | None
    scores: tuple[Score, ...]
    score: float | None
    passed: bool | None
    started_at: str | None
    execution: Execution | None = None

    def __post_init__(self) -> None:
        _check_case(self.item_id, self.repeat)

    def to_json(self) -> dict[str, Any]:
        return case_json(
            self.item_id, self.item_sha, self.repeat, self.input, self.expected, self.output, self.error,
            self.latency_ms, self.input_tokens, self.output_tokens, self.cost_usd, self.finish_reason, self.scores,
            self.score, self.passed, self.started_at, self.execution,
        )


def case_json(
    item_id: str, item_sha: str | None, repeat: int, input: Any, expected: Any, output: Any, error: str | None,
    latency_ms: float | None, input_tokens: int | None, output_tokens: int | None, cost_usd: float | None,
    finish_reason: str | None, scores: Sequence[Score], score: float | None, passed: bool | None,
    started_at: str | None, execution: Execution | None = None,
) -> dict[str, Any]:
    """``CaseRecord(...).to_json()`` of these fields, checked as :class:`CaseRecord` checks them, without
    the record (the runner builds one line per case: a frozen record of 17 fields cost more than the line)."""
    _check_case(item_id, repeat)
    run = execution
    if run is None:
        return imported_case_json(item_id, item_sha, repeat, input, expected, output, error, latency_ms, input_tokens,
                                  output_tokens, cost_usd, finish_reason, [s.to_json() for s in scores], score, passed,
                                  started_at)
    line: dict[str, Any] = {
        "item_id": item_id, "item_sha": item_sha, "critical": run.critical, "repeat": repeat, "input": input,
        "expected": expected, "output": output, "error": error, "latency_ms": latency_ms, "input_tokens": input_tokens,
        "output_tokens": output_tokens, "cost_usd": cost_usd, "scoring_cost_usd": run.scoring_cost_usd,
        "finish_reason": finish_reason, "scores": [s.to_json() for s in scores], "score": score, "passed": passed,
        "started_at": started_at, "attempts": run.attempts,
    }  # one literal: a dict and an update of keywords cost twice as much
    line.update(run.extra())
    return line


def imported_case_json(
    item_id: str, item_sha: str | None, repeat: int, input: Any, expected: Any, output: Any, error: str | None,
    latency_ms: float | None, input_tokens: int | None, output_tokens: int | None, cost_usd: float | None,
    finish_reason: str | None, scores: list[dict[str, Any]], score: float | None, passed: bool | None,
    started_at: str | None,
) -> dict[str, Any]:
    """:func:`case_json` of a case evalsite did not execute (no ``execution``), its ``scores``
    given as their lines (:func:`score_json`): one dict literal, for an import's hundreds of
    thousands of cases (the ``Score`` records and the updates cost 5 times the line)."""
    _check_case(item_id, repeat)
    return {"item_id": item_id, "item_sha": item_sha, "repeat": repeat, "input": input, "expected": expected,
            "output": output, "error": error, "latency_ms": latency_ms, "input_tokens": input_tokens,
            "output_tokens": output_tokens, "cost_usd": cost_usd, "finish_reason": finish_reason, "scores": scores,
            "score": score, "passed": passed, "started_at": started_at}


def score_json(evaluator: str, version: str | None, score: float | None, passed: bool | None, label: str | None,
               detail: str | None, error: str | None) -> dict[str, Any]:
    """``Score(...).to_json()`` of a score without skip, turn, spread or cost (an imported one),
    without the frozen record; tests/test_runlog_builders.py holds the two equal, key order included."""
    return {"evaluator": evaluator, "version": version, "score": score, "passed": passed, "label": label,
            "detail": detail, "error": error, "skipped": False, "turn": None, "spread": None, "cost_usd": None}


def _check_case(item_id: object, repeat: object) -> None:
    if not isinstance(item_id, str):
        raise ValueError(f"CaseRecord.item_id must be a string, not {item_id!r}")
    if repeat is not None and (isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 0):
        raise ValueError(f"CaseRecord.repeat must be a whole number >= 0, not {repeat!r}")


# ----------------------------------------------------------------------------- end.json


@dataclass(frozen=True)
class SourceOutcome:
    """An imported run's footer: how the other tool said its run ended (either may be null)."""

    status: str | None
    error: str | None


@dataclass(frozen=True)
class FooterRecord:
    """``end.json`` as a writer builds it (the writer adds ``cases_sha256``). Each optional field
    is written only when set: ``error`` (a failed run), ``hook_errors`` and ``artifacts`` (the study
    pipeline's), ``stop_when`` (an adaptive run's looks), ``cost_ceiling``, ``merged_from`` (a merged
    run's shards), ``source`` (an import's ``source_status`` and ``source_error``)."""

    status: RunStatus
    ended_at: str | None
    totals: RunTotals
    error: str | None = None
    hook_errors: tuple[str, ...] = ()
    artifacts: Mapping[str, Any] | None = None
    stop_when: Mapping[str, Any] | None = None
    cost_ceiling: Mapping[str, Any] | None = None
    merged_from: tuple[str, ...] = ()
    source: SourceOutcome | None = None

    def __post_init__(self) -> None:
        # a footer says how a run stopped (an import may record a source's run as interrupted)
        if not isinstance(self.status, RunStatus) or self.status is RunStatus.RUNNING:
            raise ValueError(f"FooterRecord.status must be the RunStatus a run stopped with, not {self.status!r}")

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {"status": self.status.value, "ended_at": self.ended_at, "totals": self.totals.to_json()}
        optional = {"error": self.error, "hook_errors": list(self.hook_errors) or None, "artifacts": self.artifacts or None,
                    "stop_when": self.stop_when, "cost_ceiling": self.cost_ceiling,
                    "merged_from": list(self.merged_from) or None}
        record.update({key: value for key, value in optional.items() if value is not None})
        if self.source is not None:
            record.update(source_status=self.source.status, source_error=self.source.error)
        return record
