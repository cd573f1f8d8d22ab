"""Plain per-item files from any other tool: JSON Lines (``jsonl``) or CSV (``csv``), one row per case.

Fields: ``arm``, ``id`` (or ``item_id``), ``input``, ``expected``, ``output``, ``repeat``, ``error``,
``latency_ms``, ``input_tokens``, ``output_tokens``, ``cost_usd``, ``finish_reason``,
``started_at``, ``passed``; scores in ``score`` (an evaluator named ``score``), ``score.<name>``
columns, or (JSON Lines) a ``scores`` object. Nothing says which code produced the scores, so
without ``--scorer-file`` an evaluator's version is tied to this one file: its arms compare with
each other, not with another file's. The mapping is in docs/reference/importers/jsonl.md.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any

from evalsite.errors import SourceError
from evalsite.execute.importers.jsonstream import JsonLines, RunShare
from evalsite.execute.importers.plain_lane import (
    ARM_FIELD,
    SCORE_FIELD,
    SCORE_KIND,
    SCORE_PREFIX,
    SCORES_FIELD,
    PlainLane,
)
from evalsite.execute.importers.shared_reading import Packing, shared_reading
from evalsite.execute.importers.source_records import (
    ImportOptions,
    SourceCase,
    SourceItem,
    SourceRun,
    SourceScore,
    arm_from,
    checked_case,
    finite_number,
    item_name,
)
from evalsite.execute.importers.writer import CasePreparer, PreparedBlock, SourceImport
from evalsite.experiment.datasets import csv_reason
from evalsite.jsonshape import JSONObject
from evalsite.runlog.records import RunStatus

TOOL = "plain"
FIELDS = {"arm", "id", "item_id", "input", "expected", "output", "repeat", "error", "latency_ms", "input_tokens",
          "output_tokens", "cost_usd", "finish_reason", "started_at", "passed", SCORE_FIELD, SCORES_FIELD}
WORDS = {"true": True, "yes": True, "false": False, "no": False}
#: the share of the runs of lines decoded here when two processes read a file (shared_reading). The
#: second decodes each of its rows and prepares it for the writer (by the lane, plain_lane, for the common
#: rows) and sends each run's as one block; this process adds a block at a time (SourceImport.add_block),
#: decodes and prepares its own rows the same way and hashes the file. Reading CPU for 200,000 rows
#: (session 25, main15, load 7-9, this process's and the second's): 2/7 3.0-3.2 s and 3.8-4.0, 1/3
#: 3.2-3.25 and 3.6-3.7, 3/8 3.4-3.5 and 3.4, 2/5 3.6-3.7 and 3.3
MAIN_SHARE = Fraction(3, 8)


@dataclass(slots=True)
class _Sent:
    """A run's rows as the second process mapped them (:meth:`_Rows.mapped`): their cases as one
    block, and the ignored fields it found."""

    block: PreparedBlock
    ignored: list[str]

    def __len__(self) -> int:
        return len(self.block)


def _pack(mapped: list[list[Any]]) -> tuple[Any, bytes]:
    block = PreparedBlock.of([prepared for prepared, _ in mapped])
    return [block.columns(), sorted({name for _, ignored in mapped for name in ignored})], block.lines


def _unpack(packed: Any, lines: bytes) -> list[Any]:
    columns, ignored = packed
    return [_Sent(PreparedBlock(lines, *columns), ignored)]


#: a run's rows travel as one block of prepared cases, added here a block at a time
_BLOCKS = Packing(_pack, _unpack)


def read_jsonl(source: SourceImport, options: ImportOptions) -> None:
    """A large file's rows are mostly decoded and mapped by a second process
    (:mod:`~evalsite.execute.importers.shared_reading`): those arrive a run at a time, as :class:`_Sent`."""
    rows = _Rows(options, source.path.stem)
    share = shared_reading(source.path, partial(_lines, source.path, source.label), rows.mapped, MAIN_SHARE, _BLOCKS)
    lines = JsonLines(source.path, source.label, share)
    try:
        _read(source, options, rows, iter(lines), lambda: lines.truncated)
    finally:
        if share is not None:
            share.close()


def read_csv(source: SourceImport, options: ImportOptions) -> None:
    _read(source, options, _Rows(options, source.path.stem, lane=False), _csv_rows(source), lambda: False)


def _lines(path: Path, label: str, share: RunShare) -> Iterator[JSONObject]:
    """The rows the second process walks (the same runs as this process's :class:`JsonLines`)."""
    return (row for _, row in JsonLines(path, label, share))


def _csv_rows(source: SourceImport) -> Iterator[tuple[int, JSONObject]]:
    """Each record as ``(line, row)``, ``line`` the number of the line it starts on. Quotes are read
    strictly: an unclosed quote is an error naming the line of its record, not the rest of the
    file swallowed into one field."""
    previous_end = 0
    try:
        with open(source.path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle, strict=True)
            columns = reader.fieldnames or []
            previous_end = reader.line_num
            repeated = sorted({c for c in columns if columns.count(c) > 1})
            if repeated:
                raise SourceError(f"{source.label}: column {repeated[0]!r} appears twice in the header")
            for row in reader:
                start, previous_end = previous_end + 1, reader.line_num
                extra = row.pop(None, None)
                if extra:
                    raise SourceError(f"{source.label}: line {start}: more values than header columns")
                yield start, {k: (None if v == "" else v) for k, v in row.items()}
    except UnicodeDecodeError as exc:
        raise SourceError(f"{source.label}: not UTF-8 text ({exc.reason})") from None
    except csv.Error as exc:
        raise SourceError(f"{source.label}: invalid CSV in the record starting on line {previous_end + 1}: "
                          f"{csv_reason(exc)}") from None


class _Rows:
    """How this file's rows become cases: the options, the default arm (the file's name), and the
    rows' key lists seen so far (a file has a few), each with its ``score.<name>`` fields and their
    evaluators' names; the fields not in the format are gathered in ``ignored``. A JSON Lines row goes by the
    lane (:mod:`~evalsite.execute.importers.plain_lane`) when it takes it, else by :meth:`case`."""

    def __init__(self, options: ImportOptions, default_arm: str, lane: bool = True):
        self.options = options
        self.default_arm = default_arm
        self.arm_field = (options.arm_from or ARM_FIELD).split(".")[0]
        self.shapes: dict[tuple[str, ...], list[tuple[str, str]]] = {}
        self.ignored: set[str] = set()
        self.preparer = CasePreparer()  # this process's: the cases it prepares (by the lane or mapped)
        self.lane = PlainLane(default_arm, self.preparer) if lane and not options.arm_from else None

    def case(self, row: JSONObject, where: str) -> SourceCase:
        return _case(row, where, self.options, self.default_arm, self._score_fields(row))

    def prepared(self, row: JSONObject) -> list[Any] | None:
        """The row prepared by the lane, or None when the lane does not take it."""
        return None if self.lane is None else self.lane.prepared(row, self._score_fields(row))

    def mapped(self, row: JSONObject) -> list[Any]:
        """A row as the second process sends it: its case as
        :class:`~evalsite.execute.importers.writer.CasePreparer` prepares it for the writer and,
        after a key list not seen before, the ignored fields found so far. Anything wrong with the
        row raises, and this process maps it again, raising the error with the row's line."""
        new_shape = tuple(row) not in self.shapes
        prepared = self.prepared(row)
        if prepared is None:
            prepared = self.preparer.prepared(self.case(row, ""))
        return [prepared, sorted(self.ignored) if new_shape else []]

    def _score_fields(self, row: JSONObject) -> list[tuple[str, str]]:
        shape = tuple(row)
        score_fields = self.shapes.get(shape)
        if score_fields is None:
            score_fields = self.shapes[shape] = [(k, k[len(SCORE_PREFIX):]) for k in row
                                                 if k.startswith(SCORE_PREFIX)]
            self.ignored.update(k for k in row if k not in FIELDS and not k.startswith(SCORE_PREFIX)
                                and k != self.arm_field)
        return score_fields


def _read(source: SourceImport, options: ImportOptions, rows: _Rows, records: Iterator[tuple[int, Any]],
          truncated: Callable[[], bool]) -> None:
    """``records``: each row with the number of the line it starts on, or a run's rows as :class:`_Sent`."""
    for number, row in records:
        if type(row) is _Sent:  # mapped by the second process, as _Rows.mapped does
            rows.ignored.update(row.ignored)
            source.add_block(row.block)
        else:
            prepared = rows.prepared(row)
            if prepared is None:
                source.add_case(rows.case(row, f"{source.label}: line {number}"))
            else:
                source.add_prepared(prepared)
    if rows.ignored:
        source.warn(f"ignored fields (not in the plain format): {', '.join(sorted(rows.ignored))}")
    if truncated():
        source.warn("the last line is cut short; the complete lines were imported as an interrupted run")
    for run in source.run_keys:
        names = source.evaluators(run)
        if not names:
            source.warn(f"arm {run}: no score fields; its run is unscored")
        identity = None if options.scorer_sha256 else {"scored_by_unknown_code_in": source.sha256}
        source.describe(run, SourceRun(
            arm_id=run,
            experiment=source.path.stem,
            tool=TOOL,
            tool_version=None,
            config={"arm": run},
            scorers={name: identity for name in names},
            spec={"format": source.format_name},
            status=RunStatus.INTERRUPTED if truncated() else RunStatus.COMPLETED,
        ))


def _case(row: JSONObject, where: str, options: ImportOptions, default_arm: str,
          score_fields: list[tuple[str, str]]) -> SourceCase:
    if options.arm_from:
        arm = arm_from(row, options.arm_from, where)
    else:
        arm = default_arm if row.get(ARM_FIELD) is None else item_name(row[ARM_FIELD], ARM_FIELD, where)
    id_field = "id" if row.get("id") is not None else "item_id"
    item_id = row.get(id_field)
    if item_id is None and row.get("input") is None:
        raise SourceError(f"{where}: neither 'id' nor 'input': cannot tell which item this row is")
    return checked_case(SourceCase(  # positional, in the fields' order (a third of the keywords' cost)
        arm,
        SourceItem(None if item_id is None else item_name(item_id, id_field, where), row.get("input"), row.get("expected")),
        _integer(row, "repeat", where),
        None,  # input: the plain format has no prompt apart from the item's input
        row.get("output"),
        None if row.get("error") is None else str(row["error"]),
        _number(row, "latency_ms", where),
        _integer(row, "input_tokens", where),
        _integer(row, "output_tokens", where),
        _number(row, "cost_usd", where),
        row.get("finish_reason"),
        row.get("started_at"),
        _scores(row, where, score_fields),
        None,  # score: no combined score of the source's own
        _verdict(row.get("passed"), "passed", where),
    ), where)


def _scores(row: JSONObject, where: str, score_fields: list[tuple[str, str]]) -> list[SourceScore]:
    """The row's scores; ``score_fields``: its ``score.<name>`` keys, in order, with their names."""
    nested = row.get(SCORES_FIELD)
    if nested is not None and not isinstance(nested, dict):
        raise SourceError(f"{where}: field 'scores' must be an object of name: score")
    value = row.get(SCORE_FIELD)
    given = [] if value is None else [(SCORE_FIELD, value, SCORE_FIELD)]
    given += [(name, row[key], key) for key, name in score_fields if row[key] is not None]
    given += [(name, value, f"scores.{name}") for name, value in (nested or {}).items() if value is not None]
    fields: dict[str, str] = {}
    for name, _, field in given:  # two scores of one evaluator in a case would both count in its mean
        if fields.setdefault(name, field) != field:
            raise SourceError(f"{where}: evaluator {name!r} is scored twice, by {fields[name]!r} and {field!r}")
    return [_score(name, value, field, where) for name, value, field in given]


def _score(name: str, value: Any, field: str, where: str) -> SourceScore:
    if type(value) is float and math.isfinite(value):  # a bare number, the common case: what the rest gives it
        return SourceScore(name, value, None, None, None, None, SCORE_KIND)
    details = value if isinstance(value, dict) else {"score": value}
    raw = details.get("score")
    verdict = details.get("passed")
    passed = verdict if verdict is None or isinstance(verdict, bool) else _verdict(verdict, f"{field}.passed", where)
    number: float | None
    if isinstance(raw, bool) or (isinstance(raw, str) and raw.strip().lower() in WORDS):
        passed = _verdict(raw, field, where) if passed is None else passed
        number = 1.0 if _verdict(raw, field, where) else 0.0
    else:
        number = _to_number(raw, field, where)
    return SourceScore(name, number, passed, details.get("label"), details.get("detail"), details.get("error"),
                       SCORE_KIND)


def _to_number(value: Any, field: str, where: str) -> float | None:
    if value is None or (type(value) is float and math.isfinite(value)):  # the common cases, at once
        return value
    number = None if isinstance(value, bool) else finite_number(value)  # (a score's true/false: read by _score)
    if number is None and isinstance(value, str):
        try:
            number = finite_number(float(value))
        except ValueError:
            number = None
    if number is None:
        raise SourceError(f"{where}: field {field!r} is {value!r}, not a number")
    return number


def _number(row: JSONObject, field: str, where: str) -> float | None:
    return _to_number(row.get(field), field, where)


def _integer(row: JSONObject, field: str, where: str) -> int | None:
    value = row.get(field)
    if value is None or type(value) is int:
        return value  # exactly (checked_case bounds it); a float would round one past 2**53
    if type(value) is str and value.strip().isascii() and value.strip().isdigit():
        return int(value)  # a CSV cell's whole number, exactly too
    number = _number(row, field, where)
    if number is not None and not number.is_integer():
        raise SourceError(f"{where}: field {field!r} is {row[field]!r}, not a whole number")
    return None if number is None else int(number)


def _verdict(value: Any, field: str, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in WORDS:
        return WORDS[word]
    if word in ("1", "0", "1.0", "0.0"):
        return word.startswith("1")
    raise SourceError(f"{where}: field {field!r} is {value!r}, not true or false")
