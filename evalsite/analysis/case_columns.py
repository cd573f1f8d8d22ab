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

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
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


def natural_order(columns: CaseColumns) -> np.ndarray:
    """The case indices in natural item order, then repeat, cases of equal keys in the order read
    (as ``sorted(cases, key=case_order)`` orders their records)."""
    keys = [item_order(item_id) for item_id in columns.item_ids]
    ranked = sorted(range(len(keys)), key=keys.__getitem__)
    rank = np.zeros(len(keys), dtype=np.int64)
    for position in range(1, len(ranked)):  # item ids of equal keys ("q01", "q1") share a rank
        same = keys[ranked[position]] == keys[ranked[position - 1]]
        rank[ranked[position]] = rank[ranked[position - 1]] + (not same)
    return np.lexsort((columns.repeat, rank[columns.item])) if columns.size else np.empty(0, dtype=np.int64)


class _Builder:
    """Lists of each field, appended case by case, turned into arrays once."""

    def __init__(self) -> None:
        self.items: dict[str, int] = {}
        self.evaluators: dict[str, int] = {}
        self.versions: list[str | None] = []
        self.labels: dict[str, int] = {}
        self.served: dict[str, None] = {}
        self.shas: dict[str, int] = {}
        self.case_fields: dict[str, list[Any]] = {name: [] for name in (*_CASE_FIELDS, "item_sha")}
        self.score_fields: dict[str, list[Any]] = {name: [] for name in _SCORE_FIELDS}
        self._case_lists = [self.case_fields[name] for name in _CASE_FIELDS]  # appended to in field order
        self._score_lists = [self.score_fields[name] for name in _SCORE_FIELDS]

    def add(self, case: Mapping[str, Any], dataset_critical: Mapping[str, bool] | None) -> None:
        if isinstance(case, Case):  # the same fields, read from its line: a dict's get is 3x a Mapping's
            case = case.raw
        index = len(self.case_fields["item"])
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
        filled a field at a time over the batch."""
        start = len(self.case_fields["item"])
        column = batch.cases
        items, shas = self.items, self.shas
        values: tuple[Sequence[Any], ...] = (
            [items.setdefault(item, len(items)) for item in column("item_id")], column("repeat"),
            _floats(column("score")), _verdicts(column("passed")), list(map(bool, column("error"))),
            _verdicts(column("critical")), _floats(column("cost_usd")), _floats(column("latency_ms")),
            _floats(column("scoring_cost_usd")), _floats(column("input_tokens")), _floats(column("output_tokens")),
        )
        for field_values, values_of_field in zip(self._case_lists, values):
            field_values.extend(values_of_field)
        self.case_fields["item_sha"].extend(shas.setdefault(sha, len(shas)) if sha else -1 for sha in column("item_sha"))
        self.served.update(dict.fromkeys(str(model) for model in column("served_model") if model))
        listed = column("scores")
        self._add_checked_scores([start + index for index, scores in enumerate(listed) if scores for _ in scores],
                                 batch.scores)

    def _add_checked_scores(self, cases: list[int], column: Fields) -> None:
        """:meth:`_add_score` of each score (of the cases at ``cases``), known well typed and bounded."""
        evaluators, labels, names = self.evaluators, self.labels, column("evaluator")
        if not evaluators.keys() >= set(names):  # (a batch's scores are of evaluators seen before, as a rule)
            for name, version in zip(names, column("version")):
                if name not in evaluators:
                    evaluators[name] = len(evaluators)
                    self.versions.append(version)
        values: tuple[Sequence[Any], ...] = (
            cases, list(map(evaluators.__getitem__, names)), _floats(column("score")),
            _verdicts(column("passed")), list(map(bool, column("error"))), list(map(bool, column("skipped"))),
            [-1 if label is None else labels.setdefault(label, len(labels)) for label in column("label")],
            [None if turn is None else str(turn) for turn in column("turn")],
        )
        for field_values, values_of_field in zip(self._score_lists, values):
            field_values.extend(values_of_field)

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

    def columns(self) -> CaseColumns:
        c, s = self.case_fields, self.score_fields
        scores = ScoreColumns(
            case=np.array(s["case"], dtype=np.int64), evaluator=np.array(s["evaluator"], dtype=np.int64),
            evaluators=tuple(self.evaluators), versions=tuple(self.versions), score=np.array(s["score"], dtype=float),
            passed=np.array(s["passed"], dtype=np.int8), error=np.array(s["error"], dtype=bool),
            skipped=np.array(s["skipped"], dtype=bool), label=np.array(s["label"], dtype=np.int64),
            labels=tuple(self.labels), turn=np.array(s["turn"], dtype=object),
        )
        def floats(name: str) -> np.ndarray:
            return np.array(c[name], dtype=float)

        return CaseColumns(
            item=np.array(c["item"], dtype=np.int64), item_ids=tuple(self.items), repeat=np.array(c["repeat"], dtype=np.int64),
            score=floats("score"), passed=np.array(c["passed"], dtype=np.int8), error=np.array(c["error"], dtype=bool),
            critical=np.array(c["critical"], dtype=np.int8), cost_usd=floats("cost_usd"), latency_ms=floats("latency_ms"),
            scoring_cost_usd=floats("scoring_cost_usd"), input_tokens=floats("input_tokens"),
            output_tokens=floats("output_tokens"), scores=scores, served_models=tuple(self.served),
            item_sha=np.array(c["item_sha"], dtype=np.int64), shas=tuple(self.shas),
        )


_CASE_FIELDS = ("item", "repeat", "score", "passed", "error", "critical", "cost_usd", "latency_ms", "scoring_cost_usd",
                "input_tokens", "output_tokens")
_SCORE_FIELDS = ("case", "evaluator", "score", "passed", "error", "skipped", "label", "turn")


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


def _floats(values: Sequence[Any]) -> list[float]:
    """Numbers known finite and in range (or None) as :func:`_number` and :func:`_whole` read them."""
    return [_NAN if value is None else float(value) for value in values]


def _verdicts(values: Sequence[bool | None]) -> list[int]:
    """Checked verdicts (booleans or none) as :func:`_verdict` codes them, by look-up."""
    return list(map(_VERDICT_CODES.__getitem__, values))


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
