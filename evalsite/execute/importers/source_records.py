"""What a format reader hands the common writer: cases, scores and run descriptions from a source.

A reader turns one tool's file into :class:`SourceCase` records (one per item and repeat) and one
:class:`SourceRun` per run it found; the writer (:mod:`evalsite.execute.importers.writer`) turns those into
ordinary evalsite runs. Readers never write anything themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evalsite.errors import SourceError
from evalsite.execute.importers.evalzip import DEFAULT_MAX_MEMBER_BYTES
from evalsite.jsonshape import MISSING, JSONObject, JSONValue, field_at
from evalsite.runlog.fields import shown
from evalsite.runlog.records import (
    CASE_RANGES,
    MAX_REPEAT_INDEX,
    SCORE_RANGES,
    RunStatus,
    out_of_range,
    range_problem,
)
from evalsite.runlog.secrets import looks_secret

__all__ = ["MISSING", "field_at"]  # the readers import the path helpers from here, with the records
REDACTED = "[REDACTED]"


@dataclass(frozen=True)
class ImportOptions:
    """The ``evalsite import`` options every format reader sees."""

    dataset_name: str | None = None
    arm_from: str | None = None
    scorer_file: str | None = None
    scorer_sha256: str | None = None
    again: bool = False
    max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES  # the most one compressed member may decode to


@dataclass
class SourceItem:
    """An item as the source recorded it; its identity row is ``{id, input, expected}``."""

    id: str | None
    input: Any
    expected: Any = None
    order: float | None = None  # position in the source's dataset, when the source says
    key: str | None = None  # tells apart items without an id (lm-eval's doc_id); else their content does

    def row(self) -> JSONObject:
        return identity_row(self.id, self.input, self.expected)


def identity_row(item_id: str | None, item_input: Any, expected: Any) -> JSONObject:
    """An item's identity row, leaving out what the source did not record (as a dataset file would)."""
    row: JSONObject = {} if item_id is None else {"id": item_id}
    if item_input is not None:
        row["input"] = item_input
    if expected is not None:
        row["expected"] = expected
    return row


@dataclass
class SourceScore:
    """One scorer's verdict on one case, before the writer gives it its evaluator version."""

    evaluator: str
    value: float | None
    passed: bool | None = None
    label: str | None = None
    detail: str | None = None
    error: str | None = None
    kind: str = ""  # the evaluator type shown in run.json, e.g. ``promptfoo:equals``
    identity: Any = None  # what defines this scorer in the source: type, params, templates
    weight: float | None = None  # its weight in the source's combined score, when it has one


@dataclass
class SourceCase:
    """One (item, repeat) as the source recorded it. ``repeat=None`` numbers repeats by arrival."""

    run: str
    item: SourceItem
    repeat: int | None = None
    input: Any = None  # the prompt actually sent
    output: Any = None
    error: str | None = None
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    finish_reason: str | None = None
    started_at: str | None = None
    scores: list[SourceScore] = field(default_factory=list)
    score: float | None = None  # the source's own combined score, when it computes one
    passed: bool | None = None  # the source's own verdict, when it gives one


@dataclass
class SourceRun:
    """Everything run-level a reader knows about one run of its source."""

    arm_id: str
    experiment: str
    tool: str
    tool_version: str | None
    config: JSONObject
    prompt: Any = None
    scorers: dict[str, Any] = field(default_factory=dict)  # run-level identity per evaluator name
    spec: JSONObject = field(default_factory=dict)  # the source's settings a number depends on
    code: JSONObject = field(default_factory=lambda: {"commit": None, "dirty": None})
    environment: JSONObject = field(default_factory=dict)
    status: RunStatus = RunStatus.COMPLETED
    source_status: str | None = None
    source_error: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    dataset_location: str | None = None
    reported: JSONObject = field(default_factory=dict)  # the tool's own aggregates for this run
    ids: JSONObject = field(default_factory=dict)  # the source's run identifiers (eval id, run id)


def elements(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one: a missing or malformed list reads as
    having no elements (as :func:`~evalsite.jsonshape.mapping` reads an object)."""
    return value if isinstance(value, list) else []


def value_at(record: Any, dotted: str, default: Any = None) -> Any:
    """Like :func:`field_at`, with ``default`` for a missing field."""
    value = field_at(record, dotted)
    return default if value is MISSING else value


#: What names nothing: its Python spelling (``True``, ``{'a': 1}``) would become an item id or an arm.
NOT_A_NAME = (bool, dict, list)


def arm_from(record: Any, dotted: str, where: str) -> str:
    """The arm named by ``--arm-from``: a scalar at ``dotted`` in ``record``, else a clear error."""
    value = field_at(record, dotted)
    if value is MISSING or value is None or isinstance(value, NOT_A_NAME):
        found = "missing" if value is MISSING or value is None else f"a {type(value).__name__}"
        raise SourceError(f"{where}: --arm-from field {dotted!r} is {found}; it must name a text or number field")
    return str(value)


def item_name(value: Any, field: str, where: str) -> str:
    """An item id or an arm as a source gives it: text, or a number written as text (never one of
    :data:`NOT_A_NAME`)."""
    if isinstance(value, NOT_A_NAME):
        raise SourceError(f"{where}: field {field!r} is {shown(value)}, not text or a number")
    return str(value)


def finite_number(value: Any) -> float | None:
    """``value`` as a float when it is a real, finite number (booleans count as 0/1), else None."""
    kind = type(value)
    if kind is float:  # the common cases, at once
        return value if math.isfinite(value) else None
    if kind is int:  # (past a float's range: OverflowError, as math.isfinite raises below)
        return float(value)
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def checked_case(case: SourceCase, where: str) -> SourceCase:
    """``case`` when a run may record it, else a :class:`SourceError` naming ``where`` (the source
    file and record) and the field: every number in the run log's ranges
    (:data:`evalsite.runlog.records.CASE_RANGES`: a source's ``cost: 1e308`` would overflow every
    sum of its run) and every text field text or null (the reader skips a case line whose
    ``finish_reason`` is ``5``)."""
    if _clearly_recordable(case):
        return case
    numbers = {"latency_ms": case.latency_ms, "input_tokens": case.input_tokens, "output_tokens": case.output_tokens,
               "cost_usd": case.cost_usd, "score": case.score}
    problems = [range_problem(key, numbers[key]) for key in out_of_range(numbers)]
    problems += [f"score {score.evaluator!r}: {range_problem('score', score.value, SCORE_RANGES)}"
                 for score in case.scores if out_of_range({"score": score.value}, SCORE_RANGES)]
    if case.repeat is not None and not 0 <= case.repeat <= MAX_REPEAT_INDEX:
        problems.append(f"repeat={shown(case.repeat)} is out of range (0 to {MAX_REPEAT_INDEX})")
    problems += _not_text({"error": case.error, "finish_reason": case.finish_reason, "started_at": case.started_at})
    problems += [f"score {score.evaluator!r}: {problem}" for score in case.scores
                 for problem in _not_text({"label": score.label, "detail": score.detail, "error": score.error})]
    if problems:
        raise SourceError(f"{where}: {problems[0]}; a run cannot record it")
    return case


_EXACT_NUMBER = (int, float)
_EXACT_TEXT = (str, type(None))
#: the ranges of a case's numbers, in the order _clearly_recordable reads them
_NUMBER_BOUNDS = tuple(CASE_RANGES[key] for key in ("latency_ms", "input_tokens", "output_tokens", "cost_usd", "score"))


def _clearly_recordable(case: SourceCase) -> bool:
    """True when :func:`checked_case` surely finds nothing (the common case, checked without
    building its messages): every number None or a plain int or float in its range, every text
    field None or a plain string. Anything else goes through the checks that name the field."""
    numbers = (case.latency_ms, case.input_tokens, case.output_tokens, case.cost_usd, case.score)
    for value, (low, high) in zip(numbers, _NUMBER_BOUNDS):
        if value is not None and not (type(value) in _EXACT_NUMBER and low <= value <= high):
            return False
    if case.repeat is not None and not (type(case.repeat) is int and 0 <= case.repeat <= MAX_REPEAT_INDEX):
        return False
    if not (type(case.error) in _EXACT_TEXT and type(case.finish_reason) in _EXACT_TEXT
            and type(case.started_at) in _EXACT_TEXT):
        return False
    low, high = SCORE_RANGES["score"]
    for score in case.scores:
        value = score.value
        if value is not None and not (type(value) in _EXACT_NUMBER and low <= value <= high):
            return False
        if not (type(score.label) in _EXACT_TEXT and type(score.detail) in _EXACT_TEXT
                and type(score.error) in _EXACT_TEXT):
            return False
    return True


def _not_text(fields: dict[str, object]) -> list[str]:
    """What a reader put in a text field from a source's other JSON type: ``finish_reason=5 is not text``."""
    return [f"{key}={shown(value)} is not text" for key, value in fields.items()
            if value is not None and not isinstance(value, str)]


def optional_int(value: Any) -> int | None:
    number = finite_number(value)
    return None if number is None or isinstance(value, bool) else int(number)


def redact(value: Any) -> Any:
    """``value`` with every mapping entry whose key looks like a secret replaced by ``[REDACTED]``.

    Sources copy their settings into their logs (promptfoo redacts ``apiKey`` itself, others may
    not); an imported run is committed and published, so nothing that looks like a key goes in.
    """
    if isinstance(value, dict):
        return {k: REDACTED if looks_secret(str(k)) and v is not None else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def prompt_text(messages: list[JSONValue]) -> Any:
    """Chat messages as ``{role, content}``; a lone user message with text content becomes that text."""
    sent = [{"role": m.get("role"), "content": m.get("content")} for m in messages if isinstance(m, dict)]
    if len(sent) == 1 and sent[0]["role"] == "user" and isinstance(sent[0]["content"], str):
        return sent[0]["content"]
    return sent or None
