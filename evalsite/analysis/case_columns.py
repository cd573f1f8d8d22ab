"""A run's cases as parallel numpy columns: what :func:`evalsite.analysis.summary.summarise_run`
and the regression report read.

Two builders give the same columns: :func:`case_columns` from case records in memory (the
runner, ``rescore``, an import, a small run), and :func:`evalsite.analysis.case_scan.read_case_columns`
from a run's file through DuckDB (``compare``), which never makes a Python object per case. The
columns hold a case's fields as the summary reads them: a value of the wrong kind, or out of its range
(:data:`evalsite.runlog.records.CASE_RANGES`), is no value.

Encodings: NaN is "no value" in float columns; a verdict (``passed``, ``critical``) is 1 (true),
0 (false), -1 (none) or, for a score's ``passed`` only, 2 (a value that is neither a boolean nor
null: it gives the evaluator a pass rule but neither passes nor fails).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from itertools import repeat
from typing import Any

import numpy as np

from evalsite.runlog.records import CASE_RANGES, SCORE_RANGES, BatchFields, Case, Fields
from evalsite.runlog.rows import case_critical, finite_number, item_order, repeat_of, whole_number

NONE, FALSE, TRUE, OTHER = -1, 0, 1, 2
_NAN = float("nan")


@dataclass(frozen=True)
class ScoreColumns:
    """One entry per score (one per evaluator per case, or per turn), in the order of the cases.

    ``case`` is the index of the score's case; ``evaluator`` a code into ``evaluators`` (names in
    order of first appearance) and ``versions`` the version each evaluator's first score gave;
    ``label`` a code into ``labels`` (-1: none); ``turn`` the turn's text or None."""

    case: np.ndarray
    evaluator: np.ndarray
    evaluators: tuple[str, ...]
    versions: tuple[str | None, ...]
    score: np.ndarray
    passed: np.ndarray
    error: np.ndarray
    skipped: np.ndarray
    label: np.ndarray
    labels: tuple[str, ...]
    turn: np.ndarray

    def take(self, rows: np.ndarray, case_index: np.ndarray) -> ScoreColumns:
        """The scores at ``rows`` (indices), their cases renumbered by ``case_index`` (old → new)."""
        return ScoreColumns(case_index[self.case[rows]], self.evaluator[rows], self.evaluators, self.versions,
                            self.score[rows], self.passed[rows], self.error[rows], self.skipped[rows], self.label[rows],
                            self.labels, self.turn[rows])


@dataclass(frozen=True)
class CaseColumns:
    """One entry per case, in the order read. ``item`` is a code into ``item_ids``; ``error`` is
    True where the generation failed; ``served_models`` are the models providers said answered,
    in order of first appearance; ``item_sha`` a code into ``shas`` (-1: none); ``expected`` each
    case's expected value as JSON text (None: not read, as :func:`case_columns` does not)."""

    item: np.ndarray
    item_ids: tuple[str, ...]
    repeat: np.ndarray
    score: np.ndarray
    passed: np.ndarray
    error: np.ndarray
    critical: np.ndarray
    cost_usd: np.ndarray
    latency_ms: np.ndarray
    scoring_cost_usd: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    scores: ScoreColumns
    served_models: tuple[str, ...] = ()
    item_sha: np.ndarray | None = None
    shas: tuple[str, ...] = ()
    expected: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.item.size)

    def where(self, keep: np.ndarray) -> CaseColumns:
        """The cases where ``keep`` (a boolean mask) is True, with their scores."""
        index = np.flatnonzero(keep)
        renumber = np.full(self.size, -1, dtype=np.int64)
        renumber[index] = np.arange(index.size)
        score_rows = np.flatnonzero(keep[self.scores.case]) if self.scores.case.size else np.empty(0, dtype=np.int64)
        optional = {name: None if getattr(self, name) is None else getattr(self, name)[index]
                    for name in ("item_sha", "expected")}
        return CaseColumns(
            self.item[index], self.item_ids, self.repeat[index], self.score[index], self.passed[index], self.error[index],
            self.critical[index], self.cost_usd[index], self.latency_ms[index], self.scoring_cost_usd[index],
            self.input_tokens[index], self.output_tokens[index], self.scores.take(score_rows, renumber),
            self.served_models, shas=self.shas, **optional,
        )


def case_columns(cases: Iterable[Mapping[str, Any]], dataset_critical: Mapping[str, bool] | None = None) -> CaseColumns:
    """The columns of case records (typed cases or plain mappings of their lines), one pass.

    ``dataset_critical`` (item id → critical) stands in for cases that did not record their
    ``critical`` flag (:func:`evalsite.runlog.rows.case_critical`)."""
    builder = _Builder()
    for case in cases:
        builder.add(case, dataset_critical)
    return builder.columns()


def batch_columns(batches: Iterable[tuple[list[dict[str, Any]], BatchFields | bool]]) -> CaseColumns:
    """:func:`case_columns` of case records that come in batches, each with whether its records
    are known bounded and well typed (an import's, as :meth:`~evalsite.runlog.store.RunWriter.append_cases`
    wrote them; true as the fields that check read, :class:`~evalsite.runlog.records.BatchFields`):
    those batches are read a field at a time."""
    builder = _Builder()
    for cases, checked in batches:
        if checked:
            builder.add_checked(checked if isinstance(checked, BatchFields) else BatchFields(cases))
        else:
            for case in cases:
                builder.add(case, None)
    return builder.columns()


def with_dataset_critical(columns: CaseColumns, dataset_critical: Mapping[str, bool] | None) -> CaseColumns:
    """``columns`` with ``dataset_critical`` standing in for the critical flags cases did not record,
    as :func:`case_columns` reads them with it."""
    unknown = columns.critical == NONE
    if dataset_critical is None or not unknown.any():
        return columns
    by_code = np.array([int(dataset_critical.get(item_id, False)) for item_id in columns.item_ids], dtype=np.int8)
    return replace(columns, critical=np.where(unknown, by_code[columns.item], columns.critical).astype(np.int8))


#: The widest number :func:`_numbered_keys` pads; ids of longer numbers take ``item_order``'s keys.
PADDED_DIGITS = 64


def natural_order(columns: CaseColumns) -> np.ndarray:
    """The case indices in natural item order, then repeat, cases of equal keys in the order read
    (as ``sorted(cases, key=case_order)`` orders their records)."""
    if not columns.size:
        return np.empty(0, dtype=np.int64)
    return np.lexsort((columns.repeat, _item_ranks(tuple(columns.item_ids))[1][columns.item]))


def item_natural_order(item_ids: Sequence[str]) -> np.ndarray:
    """The positions of ``item_ids`` in natural order (:func:`~evalsite.runlog.rows.item_order`):
    sorted once per distinct list of ids in a process, so the runs of one dataset (whose cases
    list its items in the same order) share one sort."""
    return _item_ranks(tuple(item_ids))[0]


def natural_ids(item_ids: Iterable[str]) -> tuple[str, ...]:
    """The distinct ids in natural order, ids of equal keys (``q01``, ``q1``) first seen first: the
    same order whatever the process (a sorted set's would follow its strings' hashes)."""
    distinct = tuple(dict.fromkeys(item_ids))
    return tuple(distinct[position] for position in _ranks(distinct)[0].tolist())


@functools.lru_cache(maxsize=32)
def _item_ranks(item_ids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_ranks` of a run's or a dataset's ids, kept: the runs of a dataset share one sort."""
    return _ranks(item_ids)


def _ranks(item_ids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The ids' positions in natural order (equal keys in the order given), and each id's rank:
    ids of equal keys (``q01``, ``q1``) share one."""
    keys: list[Any] | None = _numbered_keys(item_ids)
    if keys is None:
        keys = [item_order(item_id) for item_id in item_ids]
    order = np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)
    ordered = [keys[position] for position in order.tolist()]
    new_key = [ordered[n] != ordered[n - 1] for n in range(1, len(ordered))]
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.cumsum([0, *new_key]) if keys else order
    order.setflags(write=False)
    rank.setflags(write=False)
    return order, rank


def _numbered_keys(item_ids: tuple[str, ...]) -> list[str] | None:
    """Keys that order ids that are one text and a number each, of any width (``q1``, …,
    ``q10000``; the common shape of a dataset's ids) as :func:`~evalsite.runlog.rows.item_order`
    does, without its tuple per id; None for any other ids. Such ids' keys are (text, number, ""):
    with the text the same, the numbers order them, and ids of equal numbers (``q01``, ``q1``) have
    equal keys. The text holds no digit ``item_order`` would split at (any decimal digit), the
    numbers ASCII digits only, of at most :data:`PADDED_DIGITS` (each key is that wide: one id of
    a million digits would make every key a megabyte)."""
    if len(item_ids) < 2:
        return None
    first = item_ids[0]
    text = first.rstrip("0123456789")
    if len(text) == len(first) or any(character.isdecimal() for character in text):
        return None
    numbers = [item_id[len(text):] for item_id in item_ids]
    digits = "".join(numbers)
    if not (digits.isascii() and digits.isdigit() and all(numbers) and all(map(str.startswith, item_ids, repeat(text)))):
        return None
    width = max(map(len, numbers))  # right-aligned without leading zeros, numbers order as text (no int's limit)
    return [number.lstrip("0").rjust(width) for number in numbers] if width <= PADDED_DIGITS else None


class _Builder:
    """Each field's values: appended case by case (:meth:`add`) as lists, or a checked batch's at
    once (:meth:`add_checked`) as arrays; the lists become an array before each batch's arrays and
    at the end, so the columns keep the cases' order."""

    def __init__(self) -> None:
        self.items: dict[str, int] = {}
        self.evaluators: dict[str, int] = {}
        self.versions: list[str | None] = []
        self.labels: dict[str, int] = {}
        self.served: dict[str, None] = {}
        self.shas: dict[str, int] = {}
        self.cases = 0
        self.case_fields: dict[str, list[Any]] = {name: [] for name in _CASE_DTYPES}
        self.score_fields: dict[str, list[Any]] = {name: [] for name in _SCORE_DTYPES}
        self._case_lists = [self.case_fields[name] for name in _CASE_FIELDS]  # appended to in field order
        self._score_lists = [self.score_fields[name] for name in _SCORE_FIELDS]
        self._case_arrays: dict[str, list[np.ndarray]] = {name: [] for name in _CASE_DTYPES}
        self._score_arrays: dict[str, list[np.ndarray]] = {name: [] for name in _SCORE_DTYPES}

    def add(self, case: Mapping[str, Any], dataset_critical: Mapping[str, bool] | None) -> None:
        if isinstance(case, Case):  # the same fields, read from its line: a dict's get is 3x a Mapping's
            case = case.raw
        index = self.cases
        self.cases += 1
        item = str(case.get("item_id"))
        passed, critical = case.get("passed"), case_critical(case, dataset_critical)
        values = (
            self.items.setdefault(item, len(self.items)), repeat_of(case), _number(case, "score"),
            _verdict(passed) if isinstance(passed, bool) else NONE, bool(case.get("error")),
            NONE if critical is None else int(critical), _number(case, "cost_usd"), _number(case, "latency_ms"),
            _number(case, "scoring_cost_usd"), _whole(case, "input_tokens"), _whole(case, "output_tokens"),
        )
        for column, value in zip(self._case_lists, values):
            column.append(value)
        sha = case.get("item_sha")
        self.case_fields["item_sha"].append(self.shas.setdefault(str(sha), len(self.shas)) if sha else -1)
        if case.get("served_model"):
            self.served.setdefault(str(case.get("served_model")), None)
        for score in case.get("scores") or []:
            if isinstance(score, dict):
                self._add_score(index, score)

    def add_checked(self, batch: BatchFields) -> None:
        """:meth:`add` of each record (no dataset's critical flags), for records known bounded and
        well typed (:func:`~evalsite.runlog.records.checked_fields`): every number None
        or an int or float in its range, every other field of its one type, so each column is
        made a field at a time over the batch, as an array."""
        self._flush()
        start, column, items = self.cases, batch.cases, self.items
        count = len(column.records)
        self.cases += count
        shas = column("item_sha")
        arrays = (
            np.array([items.setdefault(item, len(items)) for item in column("item_id")], dtype=np.int64),
            np.array(column("repeat"), dtype=np.int64),
            _float_array(column("score")), _verdict_array(column("passed")), _flag_array(column("error")),
            _verdict_array(column("critical")), _float_array(column("cost_usd")), _float_array(column("latency_ms")),
            _float_array(column("scoring_cost_usd")), _float_array(column("input_tokens")),
            _float_array(column("output_tokens")),
            np.full(count, -1, dtype=np.int64) if shas.count(None) == count
            else np.array([self.shas.setdefault(sha, len(self.shas)) if sha else -1 for sha in shas], dtype=np.int64),
        )
        for name, array in zip(_CASE_DTYPES, arrays):
            self._case_arrays[name].append(array)
        models = column("served_model")
        if models.count(None) < count:
            self.served.update(dict.fromkeys(str(model) for model in models if model))
        listed = column("scores")
        per_case = np.array([len(scores) if scores else 0 for scores in listed], dtype=np.int64)
        self._add_checked_scores(np.repeat(np.arange(start, start + count, dtype=np.int64), per_case), batch.scores)

    def _add_checked_scores(self, cases: np.ndarray, column: Fields) -> None:
        """:meth:`_add_score` of each score (of the cases at ``cases``), known well typed and bounded."""
        evaluators, names = self.evaluators, column("evaluator")
        if not evaluators.keys() >= set(names):  # (a batch's scores are of evaluators seen before, as a rule)
            for name, version in zip(names, column("version")):
                if name not in evaluators:
                    evaluators[name] = len(evaluators)
                    self.versions.append(version)
        labels, turns, count = column("label"), column("turn"), len(cases)
        arrays = (
            cases, np.array(list(map(evaluators.__getitem__, names)), dtype=np.int64), _float_array(column("score")),
            _verdict_array(column("passed")), _flag_array(column("error")), _flag_array(column("skipped")),
            np.full(count, -1, dtype=np.int64) if labels.count(None) == count
            else np.array([-1 if label is None else self.labels.setdefault(label, len(self.labels)) for label in labels],
                          dtype=np.int64),
            np.full(count, None, dtype=object) if turns.count(None) == count
            else np.array([None if turn is None else str(turn) for turn in turns], dtype=object),
        )
        for name, array in zip(_SCORE_DTYPES, arrays):
            self._score_arrays[name].append(array)

    def _add_score(self, case: int, score: dict[str, Any]) -> None:
        name = str(score.get("evaluator"))
        if name not in self.evaluators:
            self.evaluators[name] = len(self.evaluators)
            self.versions.append(score.get("version"))
        label, turn = score.get("label"), score.get("turn")
        values = (
            case, self.evaluators[name], _number(score, "score", SCORE_RANGES), _verdict(score.get("passed")),
            bool(score.get("error")), bool(score.get("skipped")),
            -1 if label is None else self.labels.setdefault(str(label), len(self.labels)),
            None if turn is None else str(turn),
        )
        for column, value in zip(self._score_lists, values):
            column.append(value)

    def _flush(self) -> None:
        """The values appended case by case so far, as one array a field."""
        for lists, arrays, dtypes in ((self.case_fields, self._case_arrays, _CASE_DTYPES),
                                      (self.score_fields, self._score_arrays, _SCORE_DTYPES)):
            if any(lists.values()):
                for name, values in lists.items():
                    arrays[name].append(np.array(values, dtype=dtypes[name]))
                    values.clear()

    def _column(self, arrays: dict[str, list[np.ndarray]], name: str, dtype: Any) -> np.ndarray:
        parts = arrays[name]
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.array([], dtype=dtype)

    def columns(self) -> CaseColumns:
        self._flush()
        c = {name: self._column(self._case_arrays, name, dtype) for name, dtype in _CASE_DTYPES.items()}
        s = {name: self._column(self._score_arrays, name, dtype) for name, dtype in _SCORE_DTYPES.items()}
        scores = ScoreColumns(
            case=s["case"], evaluator=s["evaluator"], evaluators=tuple(self.evaluators), versions=tuple(self.versions),
            score=s["score"], passed=s["passed"], error=s["error"], skipped=s["skipped"], label=s["label"],
            labels=tuple(self.labels), turn=s["turn"],
        )
        return CaseColumns(
            item=c["item"], item_ids=tuple(self.items), repeat=c["repeat"], score=c["score"], passed=c["passed"],
            error=c["error"], critical=c["critical"], cost_usd=c["cost_usd"], latency_ms=c["latency_ms"],
            scoring_cost_usd=c["scoring_cost_usd"], input_tokens=c["input_tokens"],
            output_tokens=c["output_tokens"], scores=scores, served_models=tuple(self.served), item_sha=c["item_sha"],
            shas=tuple(self.shas),
        )


#: each field's array type, in the order :meth:`_Builder.add` appends them (item_sha apart, last)
_CASE_DTYPES: dict[str, Any] = {
    "item": np.int64, "repeat": np.int64, "score": float, "passed": np.int8, "error": bool, "critical": np.int8,
    "cost_usd": float, "latency_ms": float, "scoring_cost_usd": float, "input_tokens": float, "output_tokens": float,
    "item_sha": np.int64,
}
_SCORE_DTYPES: dict[str, Any] = {"case": np.int64, "evaluator": np.int64, "score": float, "passed": np.int8,
                                 "error": bool, "skipped": bool, "label": np.int64, "turn": object}
_CASE_FIELDS = tuple(_CASE_DTYPES)[:-1]
_SCORE_FIELDS = tuple(_SCORE_DTYPES)


def _number(record: Mapping[str, Any], key: str, ranges: Mapping[str, tuple[float, float]] = CASE_RANGES) -> float:
    """``record[key]`` as a float, NaN for no value: absent, not a finite number, or out of its
    range (which the reader refuses a line for, so only a record that was never read or written
    can hold one; the sums over these columns then never overflow)."""
    value = record.get(key)
    if value is None:
        return _NAN
    low, high = ranges[key]
    if type(value) is float:  # the common case at once (NaN and infinity fail the comparison)
        return value if low <= value <= high else _NAN
    number = finite_number(value)
    return number if number is not None and low <= number <= high else np.nan


def _whole(record: Mapping[str, Any], key: str) -> float:
    value = record.get(key)
    if value is None:
        return _NAN
    low, high = CASE_RANGES[key]
    if type(value) is int:  # the common case at once
        return float(value) if low <= value <= high else _NAN
    number = whole_number(value)
    return float(number) if number is not None and low <= number <= high else np.nan


def _float_array(values: Sequence[Any]) -> np.ndarray:
    """Numbers known finite and in range (or None) as :func:`_number` and :func:`_whole` read them:
    NaN for None; a column of only one or the other converted at once."""
    nones = values.count(None)
    if nones == len(values):
        return np.full(len(values), _NAN)
    return np.array(values if not nones else [_NAN if value is None else value for value in values], dtype=float)


def _verdict_array(values: Sequence[bool | None]) -> np.ndarray:
    """Checked verdicts (booleans or none) as :func:`_verdict` codes them, by look-up."""
    if values.count(None) == len(values):
        return np.full(len(values), NONE, dtype=np.int8)
    return np.array(list(map(_VERDICT_CODES.__getitem__, values)), dtype=np.int8)


def _flag_array(values: Sequence[Any]) -> np.ndarray:
    """Each value's truth (an error's text, a skip's flag), False for every None at once."""
    if values.count(None) == len(values):
        return np.zeros(len(values), dtype=bool)
    return np.array(list(map(bool, values)), dtype=bool)


_VERDICT_CODES = {None: NONE, False: FALSE, True: TRUE}


def _verdict(value: Any) -> int:
    if value is None:
        return NONE
    if isinstance(value, bool):
        return int(value)
    return OTHER


def joined(first: CaseColumns, second: CaseColumns) -> CaseColumns:
    """The cases of both, ``first``'s then ``second``'s, their codes merged (ids, evaluators,
    labels and item_shas keep ``first``'s codes)."""
    item_ids, items = _merged(first.item_ids, second.item_ids)
    evaluators, evaluator_codes = _merged(first.scores.evaluators, second.scores.evaluators)
    labels, label_codes = _merged(first.scores.labels, second.scores.labels)
    known = set(first.scores.evaluators)
    versions = first.scores.versions + tuple(
        version for name, version in zip(second.scores.evaluators, second.scores.versions) if name not in known
    )
    a, b = first.scores, second.scores
    scores = ScoreColumns(
        case=np.r_[a.case, b.case + first.size].astype(np.int64), evaluator=np.r_[a.evaluator, evaluator_codes[b.evaluator]],
        evaluators=evaluators, versions=versions, score=np.r_[a.score, b.score], passed=np.r_[a.passed, b.passed],
        error=np.r_[a.error, b.error], skipped=np.r_[a.skipped, b.skipped],
        label=np.r_[a.label, np.where(b.label < 0, -1, label_codes[np.maximum(b.label, 0)] if label_codes.size else -1)],
        labels=labels, turn=np.r_[a.turn, b.turn],
    )
    shas, sha_codes = _merged(first.shas, second.shas)
    item_sha = None
    if first.item_sha is not None and second.item_sha is not None:
        item_sha = np.r_[first.item_sha, np.where(second.item_sha < 0, -1, sha_codes[np.maximum(second.item_sha, 0)]
                                                  if sha_codes.size else -1)]
    expected = None if first.expected is None or second.expected is None else np.r_[first.expected, second.expected]
    def both(name: str) -> np.ndarray:
        joined_column: np.ndarray = np.r_[getattr(first, name), getattr(second, name)]
        return joined_column

    return CaseColumns(
        item=np.r_[first.item, items[second.item]].astype(np.int64), item_ids=item_ids, repeat=both("repeat"),
        score=both("score"), passed=both("passed"), error=both("error"), critical=both("critical"),
        cost_usd=both("cost_usd"), latency_ms=both("latency_ms"), scoring_cost_usd=both("scoring_cost_usd"),
        input_tokens=both("input_tokens"), output_tokens=both("output_tokens"), scores=scores,
        served_models=tuple(dict.fromkeys(first.served_models + second.served_models)), item_sha=item_sha, shas=shas,
        expected=expected,
    )


def _merged(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[tuple[str, ...], np.ndarray]:
    """``first`` extended by the values of ``second`` it lacks, and each of ``second``'s codes in it."""
    codes = {value: code for code, value in enumerate(first)}
    for value in second:
        codes.setdefault(value, len(codes))
    return tuple(codes), np.array([codes[value] for value in second], dtype=np.int64)


def columns_arrays(columns: CaseColumns) -> dict[str, np.ndarray]:
    """The columns as plain numpy arrays (numbers as they are; names, texts and optional values as
    UTF-8 JSON), for a cache that stores arrays and never pickles objects: :func:`columns_of_arrays`
    gives the same columns back."""
    arrays: dict[str, np.ndarray] = {}
    for prefix, part in (("", columns), ("scores.", columns.scores)):
        for item in fields(part):
            value = getattr(part, item.name)
            if isinstance(value, ScoreColumns):
                continue
            if isinstance(value, np.ndarray) and value.dtype != object:
                arrays[prefix + item.name] = value
            else:
                plain = value.tolist() if isinstance(value, np.ndarray) else value
                arrays[prefix + item.name + ".json"] = np.frombuffer(
                    json.dumps(plain, ensure_ascii=False).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    return arrays


def columns_of_arrays(arrays: Mapping[str, np.ndarray]) -> CaseColumns:
    """:func:`columns_arrays` read back."""
    def part(cls: type, prefix: str) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for item in fields(cls):
            key = prefix + item.name
            if key in arrays:
                found[item.name] = arrays[key]
            elif key + ".json" in arrays:
                plain = json.loads(arrays[key + ".json"].tobytes().decode("utf-8", "surrogatepass"))
                found[item.name] = tuple(plain) if item.name in _NAMES else None if plain is None else np.array(plain, dtype=object)
        return found

    return CaseColumns(**part(CaseColumns, ""), scores=ScoreColumns(**part(ScoreColumns, "scores.")))


#: The fields that hold names (tuples), not one value per case or score.
_NAMES = {"item_ids", "served_models", "shas", "evaluators", "versions", "labels"}
