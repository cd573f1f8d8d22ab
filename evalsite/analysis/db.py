"""DuckDB views over the project's run logs: ``runs``, ``cases`` and ``scores``.

Case files are read with an explicit column schema (never auto-detected), so runs whose
optional fields differ still union cleanly, and with a ``maximum_object_size`` far above
DuckDB's 16 MB default, so a case holding a large output is read, not dropped. Every field is read
as raw JSON and its JSON type checked as the Python reader checks it (:func:`case_line_ok`), so lines
that are not cases (not an object, a field of the wrong type — ``true`` is no score) are left out of
the views exactly as the Python reader leaves them out, and no value is coerced. Runs whose header or footer cannot be read are reported by id with the reason
(``skipped``) and left out; they never break a query.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb
import pyarrow as pa

from evalsite.runlog.decisions import Decision, excluded_runs
from evalsite.runlog.records import CASE_RANGES, CASE_TYPES, SCORE_RANGES, SCORE_TYPES
from evalsite.runlog.store import Run, scan_runs

T = TypeVar("T")

if TYPE_CHECKING:
    from evalsite.analysis.parquet import CaseFiles

SCORE_TYPE = (
    "STRUCT(evaluator VARCHAR, version VARCHAR, score DOUBLE, passed BOOLEAN, label VARCHAR, "
    "detail VARCHAR, error VARCHAR, skipped BOOLEAN, turn INTEGER, spread DOUBLE, cost_usd DOUBLE)"
)
CASE_COLUMNS = {
    "item_id": "VARCHAR",
    "item_sha": "VARCHAR",
    "repeat": "BIGINT",
    "input": "JSON",
    "expected": "JSON",
    "output": "JSON",
    "error": "VARCHAR",
    "latency_ms": "DOUBLE",
    "input_tokens": "BIGINT",
    "output_tokens": "BIGINT",
    "cost_usd": "DOUBLE",
    "scoring_cost_usd": "DOUBLE",
    "finish_reason": "VARCHAR",
    "scores": f"{SCORE_TYPE}[]",
    "score": "DOUBLE",
    "passed": "BOOLEAN",
    "started_at": "VARCHAR",
    "critical": "BOOLEAN",
    "emulated": "BOOLEAN",
    # provenance, from provider targets only (NULL elsewhere)
    "request_ids": "VARCHAR[]",
    "served_model": "VARCHAR",
    "system_fingerprint": "VARCHAR",
    "thread_id": "VARCHAR",
    # present only where they apply (run-format.md): NULL elsewhere, whatever a line holds read as JSON first
    "attempts": "BIGINT",
    "transcript": "JSON",
    "turn_figures": "JSON",
    "turn_outputs": "JSON",
    "cache": "VARCHAR",
    "checkpoint": "VARCHAR",
}
#: The optional fields among them: never among the types a line is checked for (the Python
#: reader does not model them), so even a file read as typed columns reads them as raw JSON and
#: casts them, and a line holding an odd one (``"attempts": "2"``) still counts as the case it is.
OPTIONAL_CASE_COLUMNS = ("attempts", "transcript", "turn_figures", "turn_outputs", "cache", "checkpoint")
#: The largest case line the views read (DuckDB's default is 16 MB, less than one long transcript).
MAXIMUM_CASE_BYTES = 1 << 30

#: The JSON types a case line's fields may have: the Python types of
#: :data:`evalsite.runlog.records.CASE_TYPES` as DuckDB's ``json_type`` names them (a boolean is no
#: number; an absent key is allowed). ``item_id``, ``repeat``, ``scores`` and ``error`` are checked apart.
_JSON_TYPES = {str: ("VARCHAR",), int: ("UBIGINT", "BIGINT"), float: ("DOUBLE",), bool: ("BOOLEAN",),
               type(None): ("NULL",), list: ("ARRAY",)}
JSON_TEXT = ("VARCHAR", "NULL")


def _json_kinds(allowed: tuple[type, ...]) -> tuple[str, ...]:
    return tuple(kind for python_type in allowed for kind in _JSON_TYPES[python_type])


CASE_FIELD_TYPES = {name: _json_kinds(allowed) for name, allowed in CASE_TYPES.items()
                    if name not in ("item_id", "repeat", "scores", "error")}
SCORE_FIELD_TYPES = {name: _json_kinds(allowed) for name, allowed in SCORE_TYPES.items() if name not in ("evaluator", "error")}


def json_type_in(value: str, kinds: tuple[str, ...]) -> str:
    """SQL: the JSON value ``value`` (SQL NULL when its key is absent) has one of these JSON types."""
    listed = ", ".join(f"'{kind}'" for kind in kinds)
    return f"coalesce(json_type({value}) IN ({listed}), true)"


def _all_in(types: str, kinds: tuple[str, ...]) -> str:
    """SQL: every JSON type in the list ``types`` (NULL: no list) is one of ``kinds``."""
    listed = ", ".join(f"'{kind}'" for kind in kinds)
    return f"coalesce(list_bool_and(list_transform({types}, lambda t: t IN ({listed}))), true)"


def _case_error_ok(objects: bool) -> str:
    """The case's ``error`` is text or null; with ``objects``, also ``{message: text, type: text or null}``."""
    text = json_type_in("error", JSON_TEXT)
    if not objects:
        return text
    kind = json_type_in("json_extract(error, '$.type')", JSON_TEXT)
    return (f"({text} OR (json_type(error) = 'OBJECT' AND coalesce(json_type(error, '$.message') = 'VARCHAR', false) "
            f"AND {kind}))")


def _scores_ok(objects: bool) -> str:
    """SQL: ``scores`` (an array, or absent) holds only objects with a text ``evaluator`` and
    fields of the allowed JSON types. JSON path wildcards (``$[*].score``: the types of every
    element's ``score``, elements without one left out) read the array once per field instead of
    once per field and element."""
    def types(path: str) -> str:
        return f"json_type(scores, '$[*]{path}')"

    errors = types(".error")
    checks = [
        _all_in(types(""), ("OBJECT",)),
        f"coalesce(len({types('.evaluator')}) = json_array_length(scores), true)",
        _all_in(types(".evaluator"), ("VARCHAR",)),
        *(_all_in(types(f".{name}"), kinds) for name, kinds in SCORE_FIELD_TYPES.items()),
    ]
    if objects:  # an error object holds a text message and a text or null type
        objects_there = f"len(list_filter(coalesce({errors}, []), lambda t: t = 'OBJECT'))"
        checks += [_all_in(errors, ("VARCHAR", "NULL", "OBJECT")), _all_in(types(".error.message"), ("VARCHAR",)),
                   f"coalesce(len({types('.error.message')}), 0) = {objects_there}", _all_in(types(".error.type"), JSON_TEXT)]
    else:
        checks.append(_all_in(errors, JSON_TEXT))
    return " AND ".join(checks)


def _number_ok(value: str, bounds: tuple[float, float]) -> str:
    """SQL: the raw JSON ``value`` (a number or null, its type checked apart) is one the Python
    reader reads: a finite number within ``bounds``, or ``NaN``/``Infinity``/``1e400`` (no value).
    An integer DuckDB reads as an infinite double (past 1.8e308, or past Python's 4,300 digits) is
    an integer out of range to the reader, which refuses its line."""
    number = f"TRY_CAST({value} AS DOUBLE)"
    return (f"coalesce(CASE WHEN isfinite({number}) THEN {number} BETWEEN {bounds[0]!r} AND {bounds[1]!r} "
            f"ELSE NOT regexp_matches({value}::VARCHAR, '^-?[0-9]+$') END, true)")


#: The most digits Python's ``json`` reads in an integer (``sys.get_int_max_str_digits``'s default).
PYTHON_INT_DIGITS = 4300


def _numbers_ok() -> list[str]:
    """SQL: every number of the case and of each of its scores is in its range
    (:data:`~evalsite.runlog.records.CASE_RANGES`, :data:`~evalsite.runlog.records.SCORE_RANGES`)."""
    case = [_number_ok(name, bounds) for name, bounds in CASE_RANGES.items()]
    scores = [f"coalesce(list_bool_and(list_transform(json_extract(scores, '$[*].{name}'), "
              f"lambda v: {_number_ok('v', bounds)})), true)" for name, bounds in SCORE_RANGES.items()]
    return [*case, f"(json_type(scores) IS DISTINCT FROM 'ARRAY' OR ({' AND '.join(scores)}))"]


def _no_long_integer(value: str) -> str:
    """SQL: the raw JSON ``value`` holds no integer of more digits than Python's json reads (one
    anywhere in a line makes the reader refuse the line). Strings are cut out first, so digits in
    text never count; an integer is a digit run with no sign of a fraction or exponent around it."""
    text = f"{value}::VARCHAR"
    run = "[0-9]{1000}" * (PYTHON_INT_DIGITS // 1000) + f"[0-9]{{{PYTHON_INT_DIGITS % 1000 + 1}}}"  # RE2 repeats <= 1000
    numbers = f"regexp_replace({text}, '\"(\\\\.|[^\"\\\\])*\"', '', 'g')"
    return (f"coalesce(CASE WHEN length({text}) > {PYTHON_INT_DIGITS} THEN NOT regexp_matches({numbers}, "
            f"'(^|[^0-9.eE+-])-?{run}[0-9]*([^0-9.eE]|$)') ELSE true END, true)")


def case_line_ok(*, error_objects: bool, json_fields: tuple[str, ...] = ()) -> str:
    """SQL over a row of a case file read with every field as raw JSON: true when
    :meth:`~evalsite.runlog.records.Case.from_json` reads the line as a case (its fields' JSON
    types, then its numbers' ranges). With ``error_objects`` false, only lines it trusts without
    checks (errors stored as text). ``json_fields``: the other fields read (``input``, ``output``…),
    checked for an integer the reader cannot read (a field not read is not checked)."""
    return " AND ".join(
        ["coalesce(json_type(item_id) = 'VARCHAR', false)",
         "coalesce(json_type(repeat) = 'UBIGINT' AND TRY_CAST(repeat AS BIGINT) IS NOT NULL, false)",
         json_type_in("scores", ("ARRAY", "NULL")), _case_error_ok(error_objects),
         f"(json_type(scores) IS DISTINCT FROM 'ARRAY' OR ({_scores_ok(error_objects)}))"]
        + [json_type_in(name, kinds) for name, kinds in CASE_FIELD_TYPES.items()]
        + _numbers_ok() + [_no_long_integer(name) for name in json_fields]
    )


def error_text(value: str) -> str:
    """SQL: an error's message, whether stored as text or as ``{type, message}``."""
    return f"CASE WHEN json_type({value}) = 'OBJECT' THEN json_extract_string({value}, '$.message') ELSE {value}->>'$' END"
RUN_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("batch_id", pa.string()),
    ("experiment", pa.string()),
    ("arm_id", pa.string()),
    ("config_id", pa.string()),
    ("dataset_id", pa.string()),
    ("dataset_path", pa.string()),
    ("fingerprint_hash", pa.string()),
    ("started_at", pa.string()),
    ("status", pa.string()),
    ("ended_at", pa.string()),
    ("directory", pa.string()),
])


@dataclass
class RunsDatabase:
    connection: duckdb.DuckDBPyConnection
    skipped: list[str] = field(default_factory=list)
    runs: dict[str, Run] = field(default_factory=dict)
    #: Run id → the decision that keeps it out of comparisons that pick runs themselves.
    excluded: dict[str, Decision] = field(default_factory=dict)

    def rows(self, sql: str, parameters: list[Any] | None = None) -> list[dict[str, Any]]:
        cursor = self.connection.execute(sql, parameters or [])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def arrow(self, sql: str, parameters: list[Any] | None = None) -> pa.Table:
        """The result as an Arrow table (columns, no Python object per row)."""
        return self.connection.sql(sql, params=parameters or []).to_arrow_table()

    def for_thread(self) -> RunsDatabase:
        """The same database on a connection of its own (DuckDB's ``cursor``), for another thread:
        one connection is never used by two threads at once. Close it when done."""
        return replace(self, connection=self.connection.cursor())


def _run_record(run: Run) -> dict[str, Any]:
    header = run.header
    return {
        "run_id": run.run_id,
        "batch_id": header.batch_id,
        "experiment": header.experiment,
        "arm_id": header.arm_id,
        "config_id": header.config_id,
        "dataset_id": header.dataset.dataset_id,
        "dataset_path": header.dataset.path,
        "fingerprint_hash": header.fingerprint_hash,
        "started_at": header.started_at,
        "status": str(run.status),
        "ended_at": run.footer.ended_at if run.footer else None,
        "directory": str(run.directory),
    }


def connect(database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A DuckDB connection without DuckDB's progress bar, which it prints to standard output (a pipe
    too) during any query longer than two seconds: into ``--json`` output, CSV and CI logs."""
    connection = duckdb.connect(database)
    connection.execute("SET enable_progress_bar = false")  # (as a connect option, DuckDB refuses it)
    return connection


def read_one_file(read: Callable[[int | None], T]) -> T:
    """``read(bound)`` of one JSON Lines file, first under DuckDB's own bound on a line's size
    (``None``): DuckDB cuts a file into blocks of twice that bound (32 MiB) and parses them on all its
    threads, where under :data:`MAXIMUM_CASE_BYTES` the whole file is one block parsed on one thread
    (a 130 MB run: 0.55 s against 0.25 s on two cores). A line too long for a block makes DuckDB
    refuse the file (it never drops the line: lines of 17-40 MB tried at offsets up to 64 MB), and
    ``read`` is called again under :data:`MAXIMUM_CASE_BYTES`. The views, which read many files
    at once, one per thread, keep the large bound, and so does ``compact``'s COPY, whose Parquet
    writing already keeps DuckDB's threads busy (the small bound cost it 12-35 % more CPU for
    0.87-0.98 of the wall)."""
    try:
        return read(None)
    except duckdb.InvalidInputException as exc:
        if "maximum_object_size" not in str(exc):
            raise
        return read(MAXIMUM_CASE_BYTES)


def open_database(runs_dir: Path, database: str = ":memory:", *, case_views: bool = True) -> RunsDatabase:
    """Connect DuckDB and define the views over every readable run under ``runs_dir``.
    ``case_views`` false defines only ``runs`` (the ``cases`` and ``scores`` views check every
    case file's recorded hash), for a caller that reads cases only through
    :func:`evalsite.analysis.items.item_matrix` of runs it chose, which reads their own files."""
    from evalsite.analysis.remote import run_folders  # remote builds on this module through parquet

    runs, skipped = scan_runs(runs_dir, run_folders(runs_dir))
    records = [_run_record(run) for run in runs]
    connection = connect(database)
    connection.register("runs_table", pa.Table.from_pylist(records, schema=RUN_SCHEMA))
    connection.execute("CREATE OR REPLACE VIEW runs AS SELECT * FROM runs_table")
    if case_views:
        define_case_views(connection, [run.directory for run in runs])
    return RunsDatabase(connection, skipped, {run.run_id: run for run in runs}, excluded_runs(runs_dir))


def define_case_views(connection: duckdb.DuckDBPyConnection, directories: list[Path]) -> None:
    """The ``cases`` and ``scores`` views over the cases of these run folders."""
    from evalsite.analysis.parquet import case_files
    from evalsite.analysis.remote import register_filesystems

    files = case_files(directories)
    register_filesystems(connection, files.parquet)  # Parquet in object storage, through fsspec
    connection.execute(f"CREATE OR REPLACE VIEW cases AS {case_source(directories, files)}")
    connection.execute(f"CREATE OR REPLACE VIEW scores AS {scores_of('cases')}")


def case_source(directories: list[Path], files: CaseFiles | None = None, names: Sequence[str] | None = None) -> str:
    """SQL selecting the cases of these run folders (the ``cases`` view's columns, or run_id and
    ``names`` only): compacted runs from their Parquet files, the others from their JSONL
    (``files``: where each is, when the caller has looked already)."""
    from evalsite.analysis.parquet import case_files, json_source, parquet_source, written_json_source

    files = files or case_files(directories)
    read = CASE_COLUMNS if names is None else {name: CASE_COLUMNS[name] for name in names}
    picked = ", ".join(["run_id", *(f'"{name}"' for name in read)])

    def only_read(source: str) -> str:
        return source if names is None else f"SELECT {picked} FROM ({source})"

    sources = ([written_json_source(files.written, names)] if files.written else []) + [
        only_read(make(found)) for make, found in ((json_source, files.checked), (parquet_source, files.parquet)) if found]
    if sources:
        return " UNION ALL ".join(sources)
    nulls = ", ".join(f"NULL::{kind} AS {name}" for name, kind in read.items())
    return f"SELECT NULL::VARCHAR AS run_id, {nulls} WHERE false"


def scores_of(cases: str) -> str:
    """SQL selecting one row per score of the cases in the relation ``cases`` (the ``scores`` view)."""
    return (
        "SELECT run_id, item_id, repeat, s.evaluator, s.version, "
        "s.score, s.passed, s.label, s.detail, s.error, s.skipped, s.turn, s.spread, s.cost_usd "
        f"FROM (SELECT run_id, item_id, repeat, unnest(scores) AS s FROM {cases})"
    )
