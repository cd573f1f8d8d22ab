"""The run log's records: the status enum and the typed header, case, score and footer.

A run's status is written once, in its footer (``end.json``); a run without a footer is
``running`` while a process holds its lock and ``interrupted`` otherwise.

Every record is built by ``from_json(data, where)``, which checks the types and shapes of the
fields it models and raises :class:`~evalsite.errors.RunLogError` with one line naming the file
(``where``, with the line number for a case) and the bad field. The dictionary as read stays
available as ``raw`` for fields a record does not model (``schedule``, ``source``, ``attempts``…).
The on-disk format is ``format_version`` 1 (docs/reference/run-format.md).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from evalsite.errors import RunLogError
from evalsite.runlog.fields import FieldReader, shown
from evalsite.runlog.totals import RunTotals

FORMAT_VERSION = 1


class RunStatus(StrEnum):
    RUNNING = "running"
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    STOPPED_COST_CEILING = "stopped_cost_ceiling"
    TIMED_OUT = "timed_out"

    @property
    def finished(self) -> bool:
        """The run wrote its footer (it may still be resumable: canceled, stopped, timed out)."""
        return self not in (RunStatus.RUNNING, RunStatus.INTERRUPTED)

    @property
    def resumable(self) -> bool:
        return self is not RunStatus.COMPLETED and self is not RunStatus.RUNNING


# ----------------------------------------------------------------------------- run.json


@dataclass(frozen=True)
class DatasetRef:
    """The dataset a run was made on: its file, content id and item count (``run.json``'s
    ``dataset``), and the id of its questions without the expected answers (the fingerprint's
    ``dataset.inputs_id``; absent from older runs)."""

    path: str | None = None
    dataset_id: str | None = None
    items: int | None = None
    inputs_id: str | None = None
    reference_tier: str | None = None  # the expected side's provenance (gold, silver, model), when declared

    def same_questions(self, other: DatasetRef) -> bool:
        """Equal ``inputs_id`` when both runs record one, else equal ``dataset_id``."""
        if self.inputs_id and other.inputs_id:
            return self.inputs_id == other.inputs_id
        return self.dataset_id is not None and self.dataset_id == other.dataset_id


@dataclass(frozen=True)
class StopOrder:
    """``run.json``'s ``stop_when`` (absent from runs without one): the rule a run of an adaptive
    batch was walked under — items in the order ``seed`` draws, every arm of ``arms`` on the
    same blocks of ``check_every`` items, each pair's anytime-valid sequence at level 1 − ``alpha``
    familywise — which the verdict reads to judge the run by that sequence."""

    seed: int
    alpha: float
    margin: float | None
    check_every: int
    min_items: int
    max_items: int | None
    max_cost_usd: float | None
    arms: tuple[str, ...]
    cluster_key: str | None = None
    horizon: int | None = None  # the units the sequences were tuned for (fixed before any data)

    @classmethod
    def from_json(cls, data: Any, where: str) -> StopOrder:
        fields = FieldReader(data, where, "stop_when", prefix="stop_when.")
        arms = fields.texts("arms") or []
        return cls(
            seed=fields.integer("seed", required=True, minimum=0) or 0,
            alpha=fields.number("alpha", (0.0, 0.5)) or 0.05,
            margin=fields.number("margin", (0.0, 1.0)),
            check_every=fields.integer("check_every", required=True, minimum=1) or 1,
            min_items=fields.integer("min_items", minimum=1) or 1,
            max_items=fields.integer("max_items", minimum=1),
            max_cost_usd=fields.number("max_cost_usd", (0.0, math.inf)),
            arms=tuple(arms),
            cluster_key=fields.text("cluster_key"),
            horizon=fields.integer("horizon", minimum=1),
        )

    @property
    def pairs(self) -> int:
        """The pairs of arms the family's α is split over."""
        return max(1, len(self.arms) * (len(self.arms) - 1) // 2)


@dataclass(frozen=True)
class RunHeader:
    """``run.json``: what the run is (written once, before the first case)."""

    format_version: int
    run_id: str
    batch_id: str | None
    experiment: str | None
    arm_id: str | None
    config: dict[str, Any]
    config_id: str | None
    dataset: DatasetRef
    evaluators: dict[str, dict[str, Any]]
    fingerprint: dict[str, Any]
    fingerprint_hash: str | None
    started_at: str | None
    plan: dict[str, Any]
    manifest_path: str | None = None
    submitted_manifest: str | None = None
    stop_when: StopOrder | None = None  # an adaptive batch's run (format_version 1 readers ignore it)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str) -> RunHeader:
        """Check ``data`` (a parsed ``run.json``); refuses a newer ``format_version``."""
        fields = FieldReader(data, where, "run.json")
        version = fields.integer("format_version", required=True, minimum=1)
        if version is not None and version > FORMAT_VERSION:
            raise RunLogError(
                f"{where}: run format_version {version} is newer than this evalsite reads ({FORMAT_VERSION}); upgrade evalsite"
            )
        dataset = fields.inner("dataset")
        fingerprint = fields.inner("fingerprint")
        config = fields.inner("config")
        config.mapping("params"), config.mapping("prompt_variables")
        fingerprint.objects("evaluators")
        recorded = fingerprint.inner("dataset")
        recorded.texts("critical")
        return cls(
            format_version=version or FORMAT_VERSION,
            run_id=_run_id(fields),
            batch_id=fields.text("batch_id"),
            experiment=fields.text("experiment"),
            arm_id=fields.text("arm_id"),
            config=config.data,
            config_id=fields.text("config_id"),
            dataset=DatasetRef(
                dataset.text("path"), dataset.text("dataset_id"), dataset.integer("items", minimum=0),
                recorded.text("inputs_id"), dataset.text("reference_tier"),
            ),
            evaluators=fields.objects("evaluators"),
            fingerprint=fingerprint.data,
            fingerprint_hash=fields.text("fingerprint_hash"),
            started_at=fields.text("started_at"),
            plan=fields.mapping("plan") or {},
            manifest_path=fields.text("manifest_path"),
            submitted_manifest=fields.text("submitted_manifest"),
            stop_when=None if fields.mapping("stop_when") is None else StopOrder.from_json(data["stop_when"], where),
            raw=data,
        )

    @property
    def evaluator_specs(self) -> dict[str, dict[str, Any]]:
        """Evaluator name → what decides its scores: the fingerprint's identity (type, version,
        threshold, judge model…) when recorded, else the header's ``{type, version}``."""
        return self.fingerprint.get("evaluators") or self.evaluators

    @property
    def emulated(self) -> bool:
        """The run's answers came from ``emulation.infra.llm: mock``, not from its arm's target."""
        emulation = self.fingerprint.get("emulation")
        return isinstance(emulation, dict) and emulation.get("llm") == "mock"

    @property
    def evaluator_versions(self) -> dict[str, str | None]:
        """Evaluator name → version, as the header records them."""
        return {name: spec.get("version") for name, spec in (self.evaluators or self.evaluator_specs).items()}


def is_folder_name(text: str) -> bool:
    """Whether ``text`` names one folder inside another (a run id, a batch id, a partition's
    dataset id): not empty, no separator, no NUL, not ``.`` or ``..``."""
    return bool(text) and not any(char in text for char in "/\\\0") and text not in (".", "..")


def _run_id(fields: FieldReader) -> str:
    run_id = fields.text("run_id", required=True)
    if not run_id or not is_folder_name(run_id):
        raise fields.bad("run_id", "a run id (a folder name)", run_id)
    return run_id


# ----------------------------------------------------------------------------- cases.jsonl


@dataclass(frozen=True)
class Score:
    """One evaluator's result on one case (one entry of a case's ``scores``), or on one turn:
    ``turn`` is then its 1-based number. Evaluators build it, the writer records its
    :meth:`to_json`, and the reader gives it back."""

    evaluator: str
    version: str | None
    score: float | None = None
    passed: bool | None = None
    label: str | None = None
    detail: str | None = None
    error: str | None = None
    skipped: bool = False
    turn: int | None = None
    spread: float | None = None
    cost_usd: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))  # every field is a plain value; asdict's deep copy costs 10x more

    @classmethod
    def from_json(cls, data: Any, where: str, prefix: str = "") -> Score:
        fields = FieldReader(data, where, f"{prefix.rstrip('.')}", prefix=prefix)
        error, _ = _error(fields, "error")
        return cls(
            evaluator=fields.text("evaluator", required=True) or "",
            version=fields.text("version"),
            score=fields.number("score", SCORE_RANGES["score"]),
            passed=fields.flag("passed"),
            label=fields.text("label"),
            detail=fields.text("detail"),
            error=error,
            skipped=bool(fields.flag("skipped")),
            turn=fields.integer("turn", minimum=MIN_TURN, maximum=MAX_TURN),
            spread=fields.number("spread", SCORE_RANGES["spread"]),
            cost_usd=fields.number("cost_usd", SCORE_RANGES["cost_usd"]),
        )


def _error(fields: FieldReader, key: str) -> tuple[str | None, str | None]:
    """An error as ``(message, type)``: a string (older runs) or a ``{type, message}`` object."""
    value = fields.data.get(key)
    if value is None or isinstance(value, str):
        return value, None
    inner = fields.inner(key)
    return inner.text("message", required=True), inner.text("type")


@dataclass(frozen=True, eq=False)
class Case(Mapping[str, Any]):
    """One line of ``cases.jsonl``: one (item, repeat) execution and its scores.

    A case is also a read-only mapping of its line as written (``case["attempts"]``), for fields
    it does not model. ``error`` is the message whether the line stores a string or a
    ``{type, message}`` object; ``error_type`` is the type when one is recorded."""

    item_id: str
    repeat: int
    item_sha: str | None
    error: str | None
    error_type: str | None
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    scoring_cost_usd: float | None
    finish_reason: str | None
    scores: tuple[Score, ...]
    score: float | None
    passed: bool | None
    started_at: str | None
    critical: bool | None
    raw: dict[str, Any] = field(repr=False)
    #: answered by ``emulation.infra.llm: mock``, not by the arm's target (absent: a live case)
    emulated: bool | None = None

    @classmethod
    def from_json(cls, data: Any, where: str) -> Case:
        """Check ``data`` (one parsed line); ``where`` names the file and line."""
        if well_typed_case(data):
            return cls._trusted(data)
        return cls._checked(data, where)

    @classmethod
    def _trusted(cls, data: dict[str, Any]) -> Case:
        """A line :func:`well_typed_case` accepted (the common case: a line evalsite wrote), built
        without the per-field checks of :meth:`_checked`."""
        get = data.get
        scores = tuple(
            Score(s["evaluator"], s.get("version"), _float(s.get("score")), s.get("passed"), s.get("label"),
                  s.get("detail"), s.get("error"), bool(s.get("skipped")), s.get("turn"), _float(s.get("spread")),
                  _float(s.get("cost_usd")))
            for s in get("scores") or ()
        )
        return cls(data["item_id"], data["repeat"], get("item_sha"), get("error"), None, _float(get("latency_ms")),
                   get("input_tokens"), get("output_tokens"), _float(get("cost_usd")), _float(get("scoring_cost_usd")),
                   get("finish_reason"), scores, _float(get("score")), get("passed"), get("started_at"), get("critical"),
                   data, get("emulated"))

    @classmethod
    def _checked(cls, data: Any, where: str) -> Case:
        fields = FieldReader(data, where, "a case")
        error, error_type = _error(fields, "error")
        scores = data.get("scores")
        if scores is not None and not isinstance(scores, list):
            raise fields.bad("scores", "a list", scores)
        return cls(
            item_id=fields.text("item_id", required=True) or "",
            repeat=fields.integer("repeat", required=True, minimum=0, maximum=MAX_REPEAT_INDEX) or 0,
            item_sha=fields.text("item_sha"),
            error=error,
            error_type=error_type,
            latency_ms=fields.number("latency_ms", CASE_RANGES["latency_ms"]),
            input_tokens=fields.integer("input_tokens", minimum=0, maximum=MAX_TOKENS),
            output_tokens=fields.integer("output_tokens", minimum=0, maximum=MAX_TOKENS),
            cost_usd=fields.number("cost_usd", CASE_RANGES["cost_usd"]),
            scoring_cost_usd=fields.number("scoring_cost_usd", CASE_RANGES["scoring_cost_usd"]),
            finish_reason=fields.text("finish_reason"),
            scores=tuple(Score.from_json(s, where, f"scores[{i}].") for i, s in enumerate(scores or [])),
            score=fields.number("score", CASE_RANGES["score"]),
            passed=fields.flag("passed"),
            started_at=fields.text("started_at"),
            critical=fields.flag("critical"),
            raw=data,
            emulated=fields.flag("emulated"),
        )

    @property
    def key(self) -> tuple[str, int]:
        """What identifies a case within its run: resume skips on it, comparisons pair on it."""
        return self.item_id, self.repeat

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)


#: The largest repeat index a case may record: a 64-bit integer, as every reader (DuckDB, Arrow, numpy) holds it.
MAX_REPEAT_INDEX = 2**63 - 1
_NONE = type(None)
_TEXT, _INT, _NUMBER, _FLAG = (str, _NONE), (int, _NONE), (int, float, _NONE), (bool, _NONE)
#: The Python types each field of a case line (and of one of its scores) may have: the lines
#: Case.from_json reads without checks, and (as JSON types) the lines the DuckDB views keep.
CASE_TYPES: dict[str, tuple[type, ...]] = {
    "item_id": (str,), "repeat": (int,), "item_sha": _TEXT, "error": _TEXT, "latency_ms": _NUMBER,
    "input_tokens": _INT, "output_tokens": _INT, "cost_usd": _NUMBER, "scoring_cost_usd": _NUMBER,
    "finish_reason": _TEXT, "scores": (list, _NONE), "score": _NUMBER, "passed": _FLAG, "started_at": _TEXT,
    "critical": _FLAG, "emulated": _FLAG,
}
SCORE_TYPES: dict[str, tuple[type, ...]] = {
    "evaluator": (str,), "version": _TEXT, "score": _NUMBER, "passed": _FLAG, "label": _TEXT, "detail": _TEXT,
    "error": _TEXT, "skipped": _FLAG, "turn": _INT, "spread": _NUMBER, "cost_usd": _NUMBER,
}


# ----------------------------------------------------------------------------- numbers

#: The ranges of a case's numbers (docs/reference/run-format.md#numbers), the one place they are
#: decided: the reader refuses a line with a number outside them, the DuckDB views leave it out
#: (:func:`evalsite.analysis.db.case_line_ok`), targets' and importers' numbers are checked against
#: them, and the writer never writes one (:func:`bounded_case`). Bounded numbers make every sum
#: safe: 10**12 cases at the largest cost still sum to a finite 1e18. The reader reads NaN and
#: ±Infinity in a number field as no value, as before the ranges (older runs may hold them).
MAX_COST_USD = 1e6  # a case's billed or priced cost, its judges' cost, a score's judge cost
MAX_TOKENS = 10**9  # a case's input or output tokens (every turn's together)
MAX_LATENCY_MS = 30 * 24 * 3600 * 1000  # 30 days: retries, backoff and every turn included
MAX_SCORE = 1e12  # a score or a judge's spread, either sign (metrics such as perplexity are not 0..1)
MIN_TURN, MAX_TURN = 0, 10**6  # a score's turn (1-based as evalsite writes it; 0 read too)
CASE_RANGES: dict[str, tuple[float, float]] = {
    "latency_ms": (0, MAX_LATENCY_MS), "input_tokens": (0, MAX_TOKENS), "output_tokens": (0, MAX_TOKENS),
    "cost_usd": (0, MAX_COST_USD), "scoring_cost_usd": (0, MAX_COST_USD), "score": (-MAX_SCORE, MAX_SCORE),
}
SCORE_RANGES: dict[str, tuple[float, float]] = {
    "score": (-MAX_SCORE, MAX_SCORE), "spread": (-MAX_SCORE, MAX_SCORE), "cost_usd": (0, MAX_COST_USD),
    "turn": (MIN_TURN, MAX_TURN),
}


def out_of_range(record: Mapping[str, Any], ranges: Mapping[str, tuple[float, float]] = CASE_RANGES) -> list[str]:
    """The keys of ``record`` whose number is outside its range or not finite: what a target, an
    importer or the writer may not record (a value of another type is the type checks' business)."""
    found = []
    get = record.get
    for key, (low, high) in ranges.items():  # a plain loop, None first: this runs for every case written
        value = get(key)
        if value is None:
            continue
        kind = type(value)  # an exact float or int first (a bool's type is bool): nearly every number
        if (kind is float or kind is int or (isinstance(value, (int, float)) and kind is not bool)) \
                and not low <= value <= high:
            found.append(key)
    return found


def range_problem(key: str, value: Any, ranges: Mapping[str, tuple[float, float]] = CASE_RANGES) -> str:
    """One line naming the number and its range: ``cost_usd=1e+308 is out of range (0 to 1e+06)``."""
    low, high = ranges[key]
    return f"{key}={shown(value)} is out of range ({low:g} to {high:g})"


def bounded_case(case: dict[str, Any]) -> dict[str, Any]:
    """``case`` as the writer records it: a number out of range or not finite (a sum over turns,
    a plugin evaluator's score) becomes null and is named in the case's error (in a score's own
    error for a score's number), so no line evalsite writes is one its reader refuses and no line
    holds NaN or Infinity. ``case`` itself when every number holds."""
    bounded = _bounded(case, CASE_RANGES)
    scores = case.get("scores")
    if not scores or not isinstance(scores, list):  # none: the common case of a run without evaluators
        return bounded
    kept = [_bounded(s, SCORE_RANGES) if isinstance(s, dict) else s for s in scores]
    if all(a is b for a, b in zip(kept, scores)):
        return bounded
    return {**bounded, "scores": kept}


def without_long_integers(case: dict[str, Any]) -> dict[str, Any]:
    """``case`` with every integer too long for JSON text (past Python's 4,300 digits: a project's
    target returned ``10**5000``) replaced by null, named in its error: what the writer records
    when ``case`` cannot be written as it is."""
    found: list[str] = []

    def kept(value: Any, path: str) -> Any:
        if isinstance(value, dict):
            return {key: kept(inner, f"{path}.{key}" if path else str(key)) for key, inner in value.items()}
        if isinstance(value, list):
            return [kept(inner, f"{path}[{index}]") for index, inner in enumerate(value)]
        if isinstance(value, int) and not isinstance(value, bool) and _too_long(value):
            found.append(path)
            return None
        return value

    record = kept(case, "")
    if not found:
        return case
    said = f"{found[0]} is an integer of more than 4300 digits, recorded as null"
    error = case.get("error")
    return {**record, "error": f"{error}; {said}" if isinstance(error, str) and error else said}


def _too_long(value: int) -> bool:
    if value.bit_length() < 14_000:  # fewer than 4,215 digits: written without a doubt
        return False
    try:
        str(value)
    except ValueError:
        return True
    return False


def _bounded(record: dict[str, Any], ranges: Mapping[str, tuple[float, float]]) -> dict[str, Any]:
    problems = out_of_range(record, ranges)
    if not problems:
        return record
    said = "; ".join(f"{range_problem(key, record[key], ranges)}, recorded as null" for key in problems)
    error = record.get("error")
    return {**record, **dict.fromkeys(problems), "error": f"{error}; {said}" if isinstance(error, str) and error else said}


def _well_typed(data: Any, types: dict[str, tuple[type, ...]], ranges: dict[str, tuple[float, float]]) -> bool:
    """Every field of ``data`` has exactly one of its allowed types (``type() in``, so a boolean is
    never an integer), every number is in its range and a repeat is not negative; anything else
    goes through the checks that name the bad field."""
    if type(data) is not dict:
        return False
    get = data.get
    for key, allowed in types.items():  # a plain loop: this runs for every case of every run read
        if type(get(key)) not in allowed:
            return False
    for key, (low, high) in ranges.items():
        value = get(key)
        if value is not None and not low <= value <= high and not (type(value) is float and not math.isfinite(value)):
            return False
    return type(get("repeat")) is not int or 0 <= data["repeat"] <= MAX_REPEAT_INDEX


def well_typed_case(data: Any) -> bool:
    """A case line whose every field has exactly one of its allowed types and every number its
    range (what :meth:`Case.from_json` reads without checks): the writer records whether every
    line of a run was one (``end.json``'s ``cases_sha256``)."""
    return _well_typed(data, CASE_TYPES, CASE_RANGES) and all(
        _well_typed(s, SCORE_TYPES, SCORE_RANGES) for s in data.get("scores") or ())


def checked_fields(cases: list[Any]) -> BatchFields | None:
    """The batch's fields (for the summary's columns of the same records to read again) when
    :func:`bounded_case` returns every record of ``cases`` as it is and each is a well-typed case
    (:func:`well_typed_case`): checked one field at a time over the whole batch (a third of the two
    checks case by case). None says only that some record needs those checks one at a time."""
    if set(map(type, cases)) - {dict}:
        return None
    fields = BatchFields(cases)
    if not fields_hold(fields.cases, CASE_TYPES, BATCH_CASE_RANGES):
        return None
    scores = fields.scores
    return None if set(map(type, scores.records)) - {dict} or not fields_hold(scores, SCORE_TYPES, SCORE_RANGES) else fields


def column_of(records: list[dict[str, Any]], key: str) -> list[Any]:
    """The values of ``key`` over ``records`` (None where absent)."""
    return list(map(dict.get, records, itertools.repeat(key, len(records))))


class Fields:
    """The values of each key over ``records`` (:func:`column_of`), each key's read once.
    ``known``: columns already at hand, each exactly :func:`column_of` of its key (the writer of an
    import gathers them while it builds the records; tests/test_import_columns.py holds them equal)."""

    def __init__(self, records: list[dict[str, Any]], known: dict[str, Sequence[Any]] | None = None):
        self.records = records
        self._read: dict[str, Sequence[Any]] = known or {}

    def __call__(self, key: str) -> Sequence[Any]:
        found = self._read.get(key)
        if found is None:
            found = self._read[key] = column_of(self.records, key)
        return found


class BatchFields:
    """A batch of case records and their scores read a field at a time, each field once: the
    writer's check of an import batch (:func:`checked_fields`) and the summary's columns of it
    (:func:`evalsite.analysis.case_columns.batch_columns`) read the same fields (reading a field
    over a batch was a fifth of writing it, each read twice). ``cases`` and ``scores`` may come
    with columns known already (:class:`Fields`)."""

    def __init__(self, cases: list[dict[str, Any]], known: dict[str, Sequence[Any]] | None = None,
                 scores: Fields | None = None):
        self.cases = Fields(cases, known)
        self._scores = scores

    @property
    def scores(self) -> Fields:
        """Every case's scores in order (its ``scores``, once they are known lists or null)."""
        if self._scores is None:
            self._scores = Fields([score for listed in self.cases("scores") if listed for score in listed])
        return self._scores


#: :data:`CASE_RANGES` and a repeat's: what a batch's case fields are checked against (:func:`checked_fields`)
BATCH_CASE_RANGES = {**CASE_RANGES, "repeat": (0, MAX_REPEAT_INDEX)}


def fields_hold(fields: Callable[[str], Sequence[Any]], types: Mapping[str, tuple[type, ...]],
                ranges: Mapping[str, tuple[float, float]]) -> bool:
    """Every value of each field in ``types`` (``fields(key)``: its column over a batch) of one of
    its allowed types (``type() in``, so a boolean is never a number) and every number in its range,
    finite."""
    for key, allowed in types.items():
        values = fields(key)
        kinds = set(map(type, values))
        if not kinds.issubset(allowed):
            return False
        if key in ranges and not kinds <= {_NONE} and not _numbers_hold(values, kinds, *ranges[key]):
            return False
    return True


def _numbers_hold(values: Sequence[Any], kinds: set[type], low: float, high: float) -> bool:
    """Every number of ``values`` (ints, floats and None: ``kinds``) from ``low`` to ``high``, in C
    loops: their sum is finite exactly when none is NaN or infinite (numbers in range sum to a
    finite total; one past it fails its bound anyway), and then min and max order them."""
    numbers = [value for value in values if value is not None] if _NONE in kinds else values
    try:
        return (float not in kinds or math.isfinite(sum(numbers))) and low <= min(numbers) and max(numbers) <= high
    except OverflowError:  # an integer past a float's range beside a float: out of range
        return False


def _float(value: int | float | None) -> float | None:
    return None if value is None else float(value)


# ----------------------------------------------------------------------------- end.json


@dataclass(frozen=True)
class Footer:
    """``end.json``: how the run stopped (written once, atomically, when it stops)."""

    status: RunStatus
    ended_at: str | None
    totals: RunTotals
    error: str | None
    cost_ceiling: dict[str, Any] | None
    stop_when: dict[str, Any] | None = None  # an adaptive run: its looks and why it stopped (run-format.md)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str) -> Footer:
        fields = FieldReader(data, where, "end.json")
        status = fields.text("status", required=True) or ""
        try:
            known = RunStatus(status)
        except ValueError:
            raise RunLogError(f"{where}: unknown status {shown(status)}") from None
        error, _ = _error(fields, "error")
        totals = RunTotals.from_json(fields.mapping("totals") or {}, where)
        return cls(known, fields.text("ended_at"), totals, error, fields.mapping("cost_ceiling"), _stop_record(fields), data)


def _stop_record(fields: FieldReader) -> dict[str, Any] | None:
    """``end.json``'s ``stop_when``: its ``reason`` and ``looks`` checked, the rest as written."""
    record = fields.mapping("stop_when")
    if record is None:
        return None
    inner = fields.inner("stop_when")
    inner.text("reason"), inner.integer("items_used", minimum=0)
    looks = record.get("looks", [])
    if not isinstance(looks, list) or not all(isinstance(look, dict) for look in looks):
        raise inner.bad("looks", "a list of objects", looks)
    return record
