"""A run's ``cases.jsonl`` read by DuckDB into :class:`~evalsite.analysis.case_columns.CaseColumns`,
with no Python object per case: how ``compare`` reads two 100k-case runs in a fraction of a second.

The result always equals reading the file with the one Python reader
(:func:`evalsite.runlog.store.read_cases`) and building the columns from its cases: DuckDB reads
every field as raw JSON and checks its type exactly as :meth:`evalsite.runlog.records.Case.from_json`
trusts a line (a bool is not a number, a repeat is a non-negative whole number, …). When any line
is not such a line — or DuckDB did not read exactly one row per non-blank line, or two lines share
an (item_id, repeat) — the file is read by the Python reader instead, so a hand-edited run gets the reader's own rules and warnings.
A file its footer vouches for (``cases_sha256`` still holds: the writer wrote every line well-typed,
each with a key of its own, and no integer Python would refuse) is read as typed fields directly,
which gives the same values without parsing each field twice, and is not read by Python at all
unless some lines are asked for whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalsite.analysis.case_columns import NONE, CaseColumns, ScoreColumns, case_columns
from evalsite.analysis.case_texts import SHOWN, WHOLE_ONLY, CaseTexts, texts_from_arrow, texts_of_cases
from evalsite.analysis.db import (
    CASE_FIELD_TYPES,
    JSON_TEXT,
    PYTHON_INT_DIGITS,
    case_line_ok,
    connect,
    json_type_in,
    read_one_file,
)
from evalsite.analysis.parquet import written_lines
from evalsite.runlog.hashing import canonical_json
from evalsite.runlog.jsonread import has_digit_run
from evalsite.runlog.records import Case
from evalsite.runlog.store import CASES_FILE, read_cases

#: The score fields the summary reads, cast in one pass (exact for the lines trusted: errors are text).
_SCORES = "STRUCT(evaluator VARCHAR, version VARCHAR, score DOUBLE, passed BOOLEAN, error VARCHAR, skipped BOOLEAN, label VARCHAR, turn VARCHAR{detail})[]"
_RAW_FIELDS = ("item_id", "repeat", "scores", "error", "expected", "served_model", *CASE_FIELD_TYPES)
_TEXT_FIELDS = (*(name for name in SHOWN if name not in _RAW_FIELDS), *WHOLE_ONLY)


#: Each column as read from a line of raw JSON fields (every type checked apart, ``well_typed``).
_CHECKED = {
    "item_id": "item_id->>'$'", "repeat": "TRY_CAST(repeat AS BIGINT)", "item_sha": "nullif(item_sha->>'$', '')",
    "score": "TRY_CAST(score AS DOUBLE)", "passed": "TRY_CAST(passed AS BOOLEAN)",
    "error": "coalesce(error->>'$', '') <> ''", "critical": "TRY_CAST(critical AS BOOLEAN)",
    **{name: f"TRY_CAST({name} AS DOUBLE)" for name in ("cost_usd", "latency_ms", "scoring_cost_usd", "input_tokens",
                                                       "output_tokens")},
    "served_model": "nullif(served_model->>'$', '')", "expected": "expected::VARCHAR",
    "error_text": "error->>'$'", "finish_reason_text": "finish_reason->>'$'",
}
#: The same from typed fields, for a file of well-typed lines as its writer recorded them.
_WRITTEN = {
    **{name: name for name in ("item_id", "repeat", "score", "passed", "critical", "cost_usd", "latency_ms",
                               "scoring_cost_usd", "input_tokens", "output_tokens")},
    "item_sha": "nullif(item_sha, '')", "error": "coalesce(error, '') <> ''", "served_model": "nullif(served_model, '')",
    "expected": "expected::VARCHAR", "error_text": "error", "finish_reason_text": "finish_reason",
}
#: The typed fields such a file is read as (every other field as raw JSON).
_WRITTEN_TYPES = {"item_id": "VARCHAR", "repeat": "BIGINT", "item_sha": "VARCHAR", "score": "DOUBLE", "passed": "BOOLEAN",
                  "error": "VARCHAR", "critical": "BOOLEAN", "cost_usd": "DOUBLE", "latency_ms": "DOUBLE",
                  "scoring_cost_usd": "DOUBLE", "input_tokens": "DOUBLE", "output_tokens": "DOUBLE",
                  "served_model": "VARCHAR", "finish_reason": "VARCHAR"}
_COLUMNS = ("item_id", "repeat", "item_sha", "score", "passed", "error", "critical", "cost_usd", "latency_ms",
            "scoring_cost_usd", "input_tokens", "output_tokens", "served_model", "expected")


def _texts_sql(values: dict[str, str]) -> str:
    """The columns :func:`~evalsite.analysis.case_texts.texts_from_arrow` reads: each shown field
    that is a JSON string, and whether every shown field of the line is text or null (``plain``)."""
    plain = " AND ".join([*(json_type_in(name, JSON_TEXT) for name in SHOWN),
                          *(json_type_in(name, ("NULL",)) for name in WHOLE_ONLY)])
    texts = ", ".join(f"CASE WHEN json_type({name}) = 'VARCHAR' THEN {name}->>'$' END AS {name}_text" for name in SHOWN)
    return (f"{plain} AS plain, {texts}, {values['error_text']} AS error_text, "
            f"{values['finish_reason_text']} AS finish_reason_text,")


def _scan_sql(path: str, texts: bool, written: bool, *, largest: int | None) -> str:
    """The scan of ``path``; ``written``: a file whose footer vouches for it
    (:func:`~evalsite.analysis.parquet.as_written`), read as typed fields, which for its lines gives
    exactly the checked reading's values at a fraction of the cost (no field is parsed twice).
    ``largest``: the ``maximum_object_size`` (None: DuckDB's own)."""
    scores = _SCORES.format(detail=", detail VARCHAR" if texts else "")
    fields = (*_RAW_FIELDS, *(_TEXT_FIELDS if texts else ()))
    types = {name: _WRITTEN_TYPES.get(name, "JSON") for name in fields} if written else dict.fromkeys(fields, "JSON")
    if written:
        types["scores"] = scores
    spec = "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in types.items()) + "}"
    values = _WRITTEN if written else _CHECKED
    trusted = "true" if written else f"{case_line_ok(error_objects=False)} AND {json_type_in('served_model', JSON_TEXT)}"
    score_list = "scores" if written else f"CASE WHEN json_type(scores) = 'ARRAY' THEN TRY_CAST(scores AS {scores}) END"
    quoted = "'" + path.replace("'", "''") + "'"
    bound = "" if largest is None else f" maximum_object_size={largest},"
    return f"""
SELECT {trusted} AS well_typed, {", ".join(f"{values[name]} AS {name}" for name in _COLUMNS)},
       {_texts_sql(values) if texts else ""} {score_list} AS scores
FROM read_json({quoted}, format='newline_delimited', columns={spec},{bound} ignore_errors=true)
"""


@dataclass(frozen=True)
class ScannedCases:
    """A run's cases as columns (with ``item_sha`` and ``expected`` filled), and their lines for
    the few items whose records are needed whole (re-scoring edited ground truth)."""

    columns: CaseColumns
    #: What pages show of each case (read only when asked for: ``scan_cases(..., texts=True)``).
    texts: CaseTexts | None = None
    #: Problems the Python reader met reading the file (none when DuckDB read it).
    warnings: list[str] = field(default_factory=list)
    _lines: list[bytes] = field(repr=False, default_factory=list)
    _cases: list[Case] | None = field(repr=False, default=None)
    _source: Path | None = field(repr=False, default=None)
    #: A file of well-typed lines (its footer vouches for it) whose ``_lines`` are read when first asked for.
    _lines_of: Path | None = field(repr=False, default=None)

    @classmethod
    def kept(cls, columns: CaseColumns, path: Path) -> ScannedCases:
        """Columns an earlier reading of ``path`` by the Python reader gave (:func:`cases_in_hand`,
        kept by the caller, e.g. in the site's cache); the file is read again only if whole
        records are asked for."""
        return cls(columns, _source=path)

    def line(self, row: int) -> bytes:
        """The ``row``-th case line (of a file DuckDB read)."""
        if not self._lines and self._lines_of is not None:  # one slice assignment: two threads asking write the same
            self._lines[:] = [line for line in self._lines_of.read_bytes().split(b"\n") if line.strip()]
        return self._lines[row]

    def errors_at(self, rows: list[int]) -> dict[int, tuple[Any, list[Any]]]:
        """Each of these cases' generation error and its scores' errors (in their order), as its
        line holds them (a vouched run's are text or null), so a caller that did not read the texts
        reads only the cases it needs."""
        return {row: (record.get("error"), [score.get("error") for score in record.get("scores") or []])
                for row, record in zip(rows, self._records(rows))}

    def records_of(self, item_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
        """The case lines of these items as plain dicts, each item's in the order of the file."""
        codes = {code for code, item_id in enumerate(self.columns.item_ids) if item_id in item_ids}
        rows = np.flatnonzero(np.isin(self.columns.item, list(codes))).tolist()
        grouped: dict[str, list[dict[str, Any]]] = {}
        for row, record in zip(rows, self._records(rows)):
            if record.get("item_id") != self.columns.item_ids[self.columns.item[row]]:
                raise AssertionError(f"case line {row + 1} is not the case DuckDB read there")
            grouped.setdefault(str(record["item_id"]), []).append(record)
        return grouped

    def _records(self, rows: list[int]) -> Iterator[dict[str, Any]]:
        """The case lines at ``rows`` as plain dicts: from the records in hand, else the lines of a
        file DuckDB read, else (kept columns) the file read again whole."""
        cases = self._cases
        if cases is None and rows and self._source is not None:
            cases = read_cases(self._source)
        for row in rows:
            yield cases[row].raw if cases is not None else json.loads(self.line(row))


def scan_cases(directory: Path, *, texts: bool = False, vouched: bool = True) -> ScannedCases:
    """Read ``directory``'s ``cases.jsonl`` into columns (see the module docstring); with ``texts``,
    also what pages show of each case (:class:`~evalsite.analysis.case_texts.CaseTexts`). With
    ``vouched`` false, every line is checked even when the footer's sha256 vouches for the file
    (``evalsite validate``, which tests the footer itself): then the columns, and the warnings of
    a file read in Python, are exactly those of the Python reader."""
    path = Path(directory) / CASES_FILE
    written = written_lines(Path(directory), path) if vouched else None
    if written:  # its lines are read only if a caller asks for some whole (re-scoring, texts)
        table = _scan(path, texts, written=True)
        if table.num_rows != written or _repeats_a_key(table):
            return _read_in_python(path, texts)
        scanned = ScannedCases(columns_from_arrow(table), _lines_of=path)
        return replace(scanned, texts=texts_from_arrow(table, scanned.line) if texts else None)
    try:
        data = path.read_bytes()
    except OSError:
        return _read_in_python(path, texts)
    lines = [line for line in data.split(b"\n") if line.strip()]
    # a run of more digits than Python's json reads in an integer: a line the Python reader refuses
    # whatever field holds it, which DuckDB would read (as an infinite double); digits inside a
    # string match too (reading such a file in Python is only slower, never different)
    if not lines or has_digit_run(data, PYTHON_INT_DIGITS + 1):
        return _read_in_python(path, texts)
    del data
    table = _scan(path, texts, written=False)
    if table.num_rows != len(lines) or not pc.all(table.column("well_typed")).as_py() or _repeats_a_key(table):
        return _read_in_python(path, texts)
    shown = texts_from_arrow(table, lines.__getitem__) if texts else None
    return ScannedCases(columns_from_arrow(table), shown, _lines=lines)


def _scan(path: Path, texts: bool, *, written: bool) -> pa.Table:
    """The file read on all DuckDB's threads (:func:`~evalsite.analysis.db.read_one_file`)."""
    connection = connect()
    try:
        return read_one_file(lambda largest: connection.sql(_scan_sql(str(path), texts, written, largest=largest)).to_arrow_table())
    finally:
        connection.close()


def _repeats_a_key(table: pa.Table) -> bool:
    """Some (item_id, repeat) is on two lines: the Python reader keeps only the first."""
    if table.num_rows < 2:
        return False
    items = dictionary_codes(table.column("item_id")).indices.to_numpy(zero_copy_only=False)
    repeats = table.column("repeat").to_numpy()
    order = np.lexsort((repeats, items))
    items, repeats = items[order], repeats[order]
    return bool(np.any((items[1:] == items[:-1]) & (repeats[1:] == repeats[:-1])))


def _read_in_python(path: Path, texts: bool) -> ScannedCases:
    warnings: list[str] = []
    cases = read_cases(path, warnings)
    scanned = cases_in_hand(cases)
    return replace(scanned, texts=texts_of_cases(cases) if texts else None, warnings=warnings)


def cases_in_hand(cases: list[Case], columns: CaseColumns | None = None) -> ScannedCases:
    """The same for cases already read by the one Python reader (``columns``: their
    ``case_columns(cases)``, without a dataset standing in for critical flags, when the caller
    has them), so a caller that has read a run never reads it again."""
    expected = np.array([None if "expected" not in case else canonical_json(case["expected"]) for case in cases], dtype=object)
    return ScannedCases(replace(case_columns(cases) if columns is None else columns, expected=expected), _cases=cases)


#: The same columns from the ``cases`` view (whose lines the reader reads, with the same values).
VIEW_COLUMNS_SQL = """
SELECT run_id, item_id, repeat, nullif(item_sha, '') AS item_sha, score, passed, coalesce(error, '') <> '' AS error,
       critical, cost_usd, latency_ms, scoring_cost_usd, input_tokens::DOUBLE AS input_tokens,
       output_tokens::DOUBLE AS output_tokens, nullif(served_model, '') AS served_model, NULL::VARCHAR AS expected,
       [{'evaluator': s.evaluator, 'version': s.version, 'score': s.score, 'passed': s.passed, 'error': s.error,
         'skipped': s.skipped, 'label': s.label, 'turn': s.turn::VARCHAR} FOR s IN coalesce(scores, [])] AS scores
FROM cases
"""


def columns_by_run(table: pa.Table) -> dict[str, CaseColumns]:
    """Each run's columns from a :data:`VIEW_COLUMNS_SQL` table (cases in the order read)."""
    runs = dictionary_codes(table.column("run_id"))
    codes = runs.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(runs.dictionary) + 1))
    return {str(run_id): columns_from_arrow(table.take(pa.array(order[bounds[n]:bounds[n + 1]])))
            for n, run_id in enumerate(runs.dictionary.to_pylist())}


def columns_from_arrow(table: pa.Table) -> CaseColumns:
    """:class:`CaseColumns` from an Arrow table of :func:`_scan_sql`'s columns."""
    items, shas = dictionary_codes(table.column("item_id")), dictionary_codes(table.column("item_sha"))
    served = dictionary_codes(table.column("served_model"))
    scores = table.column("scores").combine_chunks()
    flat = pc.list_flatten(scores)
    return CaseColumns(
        item=items.indices.to_numpy(zero_copy_only=False).astype(np.int64),
        item_ids=tuple(str(item) for item in items.dictionary.to_pylist()),
        repeat=table.column("repeat").to_numpy().astype(np.int64),
        score=finite_floats(table.column("score")), passed=_verdicts(table.column("passed")),
        error=table.column("error").to_numpy().astype(bool), critical=_verdicts(table.column("critical")),
        cost_usd=finite_floats(table.column("cost_usd")), latency_ms=finite_floats(table.column("latency_ms")),
        scoring_cost_usd=finite_floats(table.column("scoring_cost_usd")),
        input_tokens=finite_floats(table.column("input_tokens")), output_tokens=finite_floats(table.column("output_tokens")),
        scores=_score_columns(flat, pc.list_parent_indices(scores)),
        served_models=tuple(str(model) for model in _first_appearance(served)),
        item_sha=pc.fill_null(shas.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64),
        shas=tuple(str(sha) for sha in shas.dictionary.to_pylist()),
        expected=table.column("expected").to_numpy(zero_copy_only=False),
    )


def _score_columns(flat: pa.StructArray, parents: pa.Array) -> ScoreColumns:
    evaluators, labels = dictionary_codes(flat.field("evaluator")), dictionary_codes(flat.field("label"))
    codes = evaluators.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    _, first = np.unique(codes, return_index=True)  # each evaluator's first score (codes: in order of appearance)
    return ScoreColumns(
        case=parents.to_numpy(zero_copy_only=False).astype(np.int64), evaluator=codes,
        evaluators=tuple(str(name) for name in evaluators.dictionary.to_pylist()),
        versions=tuple(flat.field("version").take(pa.array(first, pa.int64())).to_pylist()),
        score=finite_floats(flat.field("score")), passed=_verdicts(flat.field("passed")),
        error=_truthy_text(flat.field("error")),
        skipped=np.asarray(pc.fill_null(flat.field("skipped"), False).to_numpy(zero_copy_only=False), dtype=bool),
        label=pc.fill_null(labels.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64),
        labels=tuple(str(label) for label in labels.dictionary.to_pylist()),
        turn=flat.field("turn").to_numpy(zero_copy_only=False).astype(object),
    )


def dictionary_codes(column: pa.Array | pa.ChunkedArray) -> pa.DictionaryArray:
    """Dictionary-encoded in one chunk, values in order of first appearance (null stays null). Chunks
    that each equal the first (the item ids of several runs' kept cells, concatenated) are encoded
    once and its codes repeated: the same codes, without hashing every chunk's values again."""
    if isinstance(column, pa.ChunkedArray) and column.num_chunks > 1 and all(
            chunk.equals(column.chunk(0)) for chunk in column.chunks[1:]):
        once = pc.dictionary_encode(column.chunk(0))
        return pa.DictionaryArray.from_arrays(pa.concat_arrays([once.indices] * column.num_chunks), once.dictionary)
    encoded = pc.dictionary_encode(column)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks() if encoded.num_chunks else pa.DictionaryArray.from_arrays(
            pa.array([], pa.int32()), pa.array([], pa.string()))
    assert isinstance(encoded, pa.DictionaryArray)
    return encoded


def _first_appearance(encoded: pa.DictionaryArray) -> list[Any]:
    return [value for value in encoded.dictionary.to_pylist() if value is not None]


def finite_floats(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """As floats, NaN for no value: null or a non-finite number (the summary counts neither)."""
    values = np.asarray(pc.fill_null(column.cast(pa.float64()), np.nan).to_numpy(zero_copy_only=False), dtype=float)
    return np.where(np.isfinite(values), values, np.nan)


def _truthy_text(column: pa.Array) -> np.ndarray:
    """Non-empty text (an error message) as True, empty or null as False."""
    return np.asarray(pc.fill_null(pc.greater(pc.utf8_length(column), 0), False).to_numpy(zero_copy_only=False), dtype=bool)


def _verdicts(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """True / false / null as 1 / 0 / -1."""
    as_int = pc.fill_null(column.cast(pa.int8()), NONE)
    return np.asarray(as_int.to_numpy(zero_copy_only=False), dtype=np.int8)
