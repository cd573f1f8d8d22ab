"""The columnar store: finished runs compacted into zstd Parquet, read together with JSONL.

``cases.jsonl`` stays the format a run is written in. ``compact_run`` turns a finished run's
cases into ``cases.parquet`` (zstd, the explicit column schema of :mod:`evalsite.analysis.db`,
plus ``run_id``) in the run's folder, or, with a destination, into a Hive-style partition
``DEST/dataset=<dataset_id>/run=<run_id>/`` together with copies of ``run.json`` and
``end.json``, so the partition is itself a readable run folder. The Parquet file records the
SHA-256, size and case count of the JSONL it came from in its key-value metadata:

* the DuckDB views read a run from its Parquet file when the JSONL beside it still has the
  recorded size (a resumed run appends, and is read from JSONL again until recompacted) or
  when there is no JSONL (a published partition);
* ``evalsite validate`` recomputes the hash (:func:`parquet_problems`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb

from evalsite.analysis.db import (
    CASE_COLUMNS,
    MAXIMUM_CASE_BYTES,
    OPTIONAL_CASE_COLUMNS,
    SCORE_TYPE,
    case_line_ok,
    connect,
    error_text,
)
from evalsite.analysis.remote import URI_FILE, staging_dir, upload
from evalsite.errors import OutputError, RunLogError
from evalsite.runlog.hashing import file_sha256, side_by_side
from evalsite.runlog.records import RunHeader, is_folder_name
from evalsite.runlog.store import (
    CASES_FILE,
    CASES_SHA256,
    END_FILE,
    RUN_FILE,
    cases_as_written,
    read_header,
    resolve_run,
    run_directories,
    run_is_active,
    run_status,
)

PARQUET_FILE = "cases.parquet"
HASH_KEY = b"evalsite.jsonl_sha256"
BYTES_KEY = b"evalsite.jsonl_bytes"
CASES_KEY = b"evalsite.cases"


@dataclass(frozen=True)
class Compacted:
    run_id: str
    parquet: str  # a path, or the URI it was uploaded to
    cases: int
    jsonl_bytes: int
    parquet_bytes: int


def json_source(files: list[str]) -> str:
    """SQL selecting the case columns (and run_id, from the folder name) from JSONL files: every
    field read as raw JSON, only the lines the Python reader reads as cases
    (:func:`evalsite.analysis.db.case_line_ok`), each field cast to its column's type, and of
    two lines with one (item_id, repeat) only the first, as the reader keeps it — so the views
    count exactly the cases ``show`` counts, with the same values."""
    spec = "{" + ", ".join(f"'{name}': 'JSON'" for name in CASE_COLUMNS) + "}"
    columns = ", ".join(f"{_from_json(name, kind)} AS {_quoted(name)}" for name, kind in CASE_COLUMNS.items())
    texts = tuple(name for name, kind in CASE_COLUMNS.items() if kind == "JSON")
    lines = (f"SELECT {_RUN_ID}, {columns}, ordinality AS line_number FROM {_read_json(files, spec)} WITH ORDINALITY "
             f"WHERE {case_line_ok(error_objects=True, json_fields=texts)}")
    first = (f"SELECT * FROM ({lines}) QUALIFY row_number() OVER (PARTITION BY run_id, item_id, repeat "
             "ORDER BY line_number) = 1 ORDER BY line_number")
    return f"SELECT * EXCLUDE (line_number) FROM ({first})"


def written_json_source(files: list[str], names: Sequence[str] | None = None) -> str:
    """The same columns from JSONL files whose every line is a well-typed case
    (:attr:`CaseFiles.written`): read as typed columns directly, which for such lines gives
    exactly :func:`json_source`'s rows, at a fraction of the cost (no field is re-parsed).
    ``names``: only these columns (and run_id), the others not even read (~25% of the scan of
    realistic case lines, whose input, output and scores are most of their bytes)."""
    read = {name: CASE_COLUMNS[name] for name in names} if names is not None else CASE_COLUMNS
    kinds = {name: "JSON" if name in OPTIONAL_CASE_COLUMNS else kind for name, kind in read.items()}
    spec = "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in kinds.items()) + "}"
    columns = ", ".join(_quoted(name) if kinds[name] == kind else f"{_from_json(name, kind)} AS {_quoted(name)}"
                        for name, kind in read.items())
    return f"SELECT {_RUN_ID}, {columns} FROM {_read_json(files, spec)} WHERE item_id IS NOT NULL"


_RUN_ID = f"regexp_extract(replace(filename, '\\', '/'), '([^/]+)/{CASES_FILE}$', 1) AS run_id"


def _read_json(files: list[str], spec: str) -> str:
    return (f"read_json({_sql_list(files)}, format='newline_delimited', columns={spec}, "
            f"maximum_object_size={MAXIMUM_CASE_BYTES}, ignore_errors=true, filename=true)")


def _from_json(name: str, kind: str) -> str:
    """SQL: one raw JSON field of a case line as its column's type."""
    if kind == "JSON":
        return _quoted(name)
    if name == "error":
        return error_text("error")
    if name == "scores":  # one typed cast, exact for the lines kept; field by field where an error is an object
        fields = ", ".join(f"'{field}': {_score_field(field, field_kind)}" for field, field_kind in _SCORE_FIELDS)
        return (f"CASE WHEN json_type(scores) <> 'ARRAY' THEN NULL "
                f"WHEN list_contains(json_type(scores, '$[*].error'), 'OBJECT') "
                f"THEN CAST([{{{fields}}} FOR e IN scores::JSON[]] AS {SCORE_TYPE}[]) ELSE TRY_CAST(scores AS {SCORE_TYPE}[]) END")
    if kind == "VARCHAR":
        return f"{_quoted(name)}->>'$'"
    return f"TRY_CAST({_quoted(name)} AS {kind})"


def _score_field(name: str, kind: str) -> str:
    value = f"json_extract(e, '$.{name}')"
    if name == "error":
        return error_text(value)
    return f"json_extract_string(e, '$.{name}')" if kind == "VARCHAR" else f"TRY_CAST({value} AS {kind})"


#: The fields of SCORE_TYPE with their SQL types, in order.
_SCORE_FIELDS = tuple(
    (part.split()[0], part.split()[1]) for part in SCORE_TYPE.removeprefix("STRUCT(").removesuffix(")").split(", ")
)


def parquet_source(files: list[str]) -> str:
    """SQL selecting the same columns, cast to the same types, from compacted Parquet files. A file
    compacted before a column existed (``cache`` and the other optional fields came later) reads
    it as NULL: the files are unioned by name, with an empty row set that holds every column."""
    columns = ", ".join(f"CAST({_quoted(name)} AS {kind}) AS {_quoted(name)}" for name, kind in CASE_COLUMNS.items())
    every = ", ".join(f"NULL::{kind} AS {_quoted(name)}" for name, kind in CASE_COLUMNS.items())
    files_read = (f"SELECT * FROM read_parquet({_sql_list(files)}, union_by_name=true) "
                  f"UNION ALL BY NAME SELECT NULL::VARCHAR AS run_id, {every} WHERE false")
    return f"SELECT CAST(run_id AS VARCHAR) AS run_id, {columns} FROM ({files_read})"


@dataclass(frozen=True)
class CaseFiles:
    """Where the cases of some run folders are read from: JSONL files as their writer recorded
    them (``written``: ``end.json``'s ``cases_sha256`` is still the file's, so every line is a
    well-typed case and typed columns read it exactly), other JSONL files (``checked``: every
    field's JSON type checked, :func:`json_source`) and compacted Parquet files or URIs."""

    written: list[str]
    checked: list[str]
    parquet: list[str]


def case_files(directories: list[Path]) -> CaseFiles:
    """The files to read the cases of these run folders from."""
    files = CaseFiles([], [], [])
    jsonl: list[tuple[Path, Path]] = []
    for directory in directories:
        if (directory / URI_FILE).exists():  # a mirrored partition: its Parquet is in the store
            files.parquet.append((directory / URI_FILE).read_text().strip())
            continue
        compacted = directory / PARQUET_FILE
        if compacted.exists() and _parquet_is_current(compacted, directory / CASES_FILE):
            files.parquet.append(str(compacted))
            continue
        path = directory / CASES_FILE
        if path.exists() and path.stat().st_size > 0:
            jsonl.append((directory, path))
    for (_, path), written in zip(jsonl, side_by_side(lambda pair: as_written(*pair), jsonl)):
        (files.written if written else files.checked).append(str(path))
    return files


def as_written(directory: Path, cases: Path) -> bool:
    """The run's footer records the sha256 of a cases file of well-typed lines, and it is this file's
    (its digest only, once per file version in a process: choosing how to read a file needs no
    count of its lines)."""
    return cases_as_written(cases, _footer_sha256(directory))


def written_lines(directory: Path, cases: Path) -> int | None:
    """The number of lines of ``cases`` when the run's footer records its sha256 (then every line is
    a well-typed case, :func:`~evalsite.runlog.store.cases_as_written`), else None."""
    if not as_written(directory, cases):
        return None
    try:
        state = cases.stat()
    except OSError:
        return None
    return _lines_of(str(cases), state.st_size, state.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _lines_of(path: str, size: int, modified_ns: int) -> int:
    """The file's number of lines (the last one counted whether or not it ends in a newline), once
    per file version in a process (a command reads a run's file through several views and scans)."""
    lines, last = 0, b"\n"
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


def compact_run(directory: Path, destination: Path | None = None) -> Compacted:
    """Write the finished run in ``directory`` as zstd Parquet (see the module docstring)."""
    header = read_header(directory)
    status = run_status(directory)
    if not status.finished or run_is_active(directory):
        raise RunLogError(f"{directory.name}: only finished runs are compacted (this one is {status})")
    source = directory / CASES_FILE
    if not source.exists():
        raise RunLogError(f"{directory.name}: no {CASES_FILE} to compact")
    target_dir = directory if destination is None else _partition(destination, header)
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where a folder of the path should be
        raise OutputError(f"{target_dir}: cannot make the folder: {exc.strerror or exc}") from None
    if destination is not None:
        for name in (RUN_FILE, END_FILE):
            shutil.copy2(directory / name, target_dir / name)
    target = target_dir / PARQUET_FILE
    partial = target.with_name(PARQUET_FILE + ".partial")
    size = source.stat().st_size
    digest, lines = _sha256_and_lines(source)
    select = (written_json_source if _footer_sha256(directory) == digest else json_source)([str(source)])
    connection = connect()
    try:
        cases = _copy(connection, select, partial, {HASH_KEY: digest, BYTES_KEY: str(size), CASES_KEY: str(lines)})
        if cases != lines:  # some line is no case, or repeats a key: the count recorded is the rows written
            rewritten = partial.with_name(PARQUET_FILE + ".counted")
            _copy(connection, f"SELECT * FROM read_parquet({_quoted_literal(str(partial))})", rewritten,
                  {HASH_KEY: digest, BYTES_KEY: str(size), CASES_KEY: str(cases)})
            rewritten.replace(partial)
    finally:
        connection.close()
    partial.replace(target)
    return Compacted(header.run_id, str(target), cases, size, target.stat().st_size)


def _copy(connection: duckdb.DuckDBPyConnection, select: str, path: Path, metadata: dict[bytes, str]) -> int:
    """Write ``select``'s rows to ``path`` as zstd Parquet with ``metadata`` in one DuckDB COPY
    (JSON parsed and cast by DuckDB's threads, no Python object per row); the rows written."""
    pairs = ", ".join(f"{_quoted_literal(key.decode())}: {_quoted_literal(value)}" for key, value in metadata.items())
    written = connection.execute(f"COPY ({select}) TO {_quoted_literal(str(path))} "
                                 f"(FORMAT parquet, COMPRESSION zstd, KV_METADATA {{{pairs}}})").fetchone()
    return int(written[0]) if written else 0


def _sha256_and_lines(path: Path) -> tuple[str, int]:
    """The file's sha256 (:func:`~evalsite.runlog.hashing.file_sha256`) and its number of lines
    (the last one counted whether or not it ends in a newline), in one pass over its bytes."""
    digest, lines, last = hashlib.sha256(), 0, b"\n"
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return digest.hexdigest(), lines + (last != b"\n")


def _footer_sha256(directory: Path) -> str | None:
    """The ``cases_sha256`` the run's footer records (None: none, or no readable footer). When it is
    the cases file's, every line is a well-typed case and :func:`written_json_source` reads it."""
    try:
        footer = json.loads((directory / END_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    recorded = footer.get(CASES_SHA256) if isinstance(footer, dict) else None
    return recorded if isinstance(recorded, str) else None


def compact_runs(runs_dir: Path, references: list[str], destination: str | None = None) -> list[Compacted]:
    """Compact the named runs, or every finished run whose Parquet is missing or stale, beside
    their JSONL or as partitions under ``destination`` (a folder, or a URI they are uploaded to)."""
    if destination is not None and "://" in destination:
        with staging_dir() as staged:
            done = _compact_runs(runs_dir, references, Path(staged))
            upload(Path(staged), destination)
        prefix = destination.rstrip("/")
        return [replace(c, parquet=f"{prefix}/{Path(c.parquet).relative_to(staged).as_posix()}") for c in done]
    return _compact_runs(runs_dir, references, None if destination is None else _partitions_folder(runs_dir, destination))


def _partitions_folder(runs_dir: Path, destination: str) -> Path:
    """``--to DIR`` as the folder to write partitions under: never the runs folder compacted from,
    whose readers would then read every run twice (its folder and its partition)."""
    if not destination.strip():
        raise OutputError("compact --to: the folder is empty; name the folder to write partitions under")
    folder = Path(destination)
    if folder.resolve() == runs_dir.resolve():
        raise OutputError(f"compact --to {destination}: is the runs folder compacted from, whose readers would read "
                          "each run twice (its folder and its partition); name another folder")
    return folder


def _compact_runs(runs_dir: Path, references: list[str], destination: Path | None) -> list[Compacted]:
    if references:
        folders = [resolve_run(runs_dir, reference) for reference in references]
    else:
        folders = [
            folder for folder in run_directories(runs_dir)
            if run_status(folder).finished and not run_is_active(folder)
            and (destination is not None or not _parquet_is_current(folder / PARQUET_FILE, folder / CASES_FILE))
        ]
    return [compact_run(folder, destination) for folder in folders]


def parquet_problems(directory: Path) -> list[str]:
    """Why a run's Parquet file does not match its JSONL (empty when it does or there is none)."""
    compacted, source = directory / PARQUET_FILE, directory / CASES_FILE
    if not compacted.exists():
        return []
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_schema(compacted).metadata or {}
    except (OSError, ValueError) as exc:
        return [f"{compacted}: unreadable Parquet: {exc}"]
    if HASH_KEY not in metadata:
        return [f"{compacted}: records no hash of the JSONL it was compacted from"]
    if not source.exists():
        return []  # a published partition: the recorded hash is what it claims to be
    recorded, actual = metadata[HASH_KEY].decode(), file_sha256(source)
    if recorded != actual:
        return [f"{compacted}: compacted from a cases.jsonl with sha256 {recorded[:12]}…, "
                f"which is now {actual[:12]}…; run `evalsite compact {directory.name}` again"]
    return []


def _parquet_is_current(compacted: Path, source: Path) -> bool:
    if not compacted.exists():
        return False
    if not source.exists():
        return True
    import pyarrow.parquet as pq

    try:
        recorded = (pq.read_schema(compacted).metadata or {}).get(BYTES_KEY)
    except (OSError, ValueError):
        return False
    return recorded is not None and int(recorded) == source.stat().st_size


def _partition(destination: Path, header: RunHeader) -> Path:
    """The run's folder under ``destination``: ``dataset=<id>/run=<id>``, each one folder name (the
    reader holds a run id to that; a run.json edited to a dataset id holding ``/`` would otherwise
    write outside ``destination``)."""
    dataset_id = header.dataset.dataset_id or "unknown"
    if not is_folder_name(dataset_id):
        raise RunLogError(f"{header.run_id!r}: its dataset_id {dataset_id!r} cannot name a folder of the partitions "
                          "(not one folder name: run.json edited by hand?)")
    return destination / f"dataset={dataset_id}" / f"run={header.run_id}"


def _sql_list(files: list[str]) -> str:
    return "[" + ", ".join(_quoted_literal(f) for f in files) + "]"


def _quoted_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
