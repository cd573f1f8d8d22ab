"""DuckDB views over the project's run logs: ``runs``, ``cases`` and ``scores``.

Case files are read with an explicit column schema (never auto-detected), so runs whose
optional fields differ still union cleanly. Runs whose header cannot be read are reported by id
with the reason and left out; they never break a query.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from evalsite.errors import RunLogError
from evalsite.runlog.store import footer_status, read_end, read_header

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
}
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

    def rows(self, sql: str, parameters: list | None = None) -> list[dict]:
        cursor = self.connection.execute(sql, parameters or [])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]


def _run_record(directory: Path) -> dict:
    header = read_header(directory)
    end = read_end(directory)
    dataset = header.get("dataset") or {}
    return {
        "run_id": header["run_id"],
        "batch_id": header.get("batch_id"),
        "experiment": header.get("experiment"),
        "arm_id": header.get("arm_id"),
        "config_id": header.get("config_id"),
        "dataset_id": dataset.get("dataset_id"),
        "dataset_path": dataset.get("path"),
        "fingerprint_hash": header.get("fingerprint_hash"),
        "started_at": header.get("started_at"),
        "status": str(footer_status(end, directory)),
        "ended_at": end.get("ended_at") if end else None,
        "directory": str(directory),
    }


def open_database(runs_dir: Path, database: str = ":memory:") -> RunsDatabase:
    """Connect DuckDB and define the views over every readable run under ``runs_dir``."""
    from evalsite.analysis.store import run_folders  # store builds on this module's schema

    records, skipped = [], []
    for directory in run_folders(runs_dir):
        try:
            records.append(_run_record(directory))
        except RunLogError as exc:
            skipped.append(exc.message)
    connection = duckdb.connect(database)
    connection.register("runs_table", pa.Table.from_pylist(records, schema=RUN_SCHEMA))
    connection.execute("CREATE OR REPLACE VIEW runs AS SELECT * FROM runs_table")
    _define_case_views(connection, [Path(r["directory"]) for r in records])
    return RunsDatabase(connection, skipped)


def _define_case_views(connection: duckdb.DuckDBPyConnection, directories: list[Path]) -> None:
    from evalsite.analysis.remote import register_filesystems
    from evalsite.analysis.store import case_files, json_source, parquet_source

    jsonl, parquet = case_files(directories)  # compacted runs are read from their Parquet files
    register_filesystems(connection, parquet)  # Parquet in object storage, through fsspec
    sources = ([json_source(jsonl)] if jsonl else []) + ([parquet_source(parquet)] if parquet else [])
    if sources:
        source = " UNION ALL ".join(sources)
    else:
        nulls = ", ".join(f"NULL::{kind} AS {name}" for name, kind in CASE_COLUMNS.items())
        source = f"SELECT NULL::VARCHAR AS run_id, {nulls} WHERE false"
    connection.execute(f"CREATE OR REPLACE VIEW cases AS {source}")
    connection.execute(
        "CREATE OR REPLACE VIEW scores AS SELECT run_id, item_id, repeat, s.evaluator, s.version, "
        "s.score, s.passed, s.label, s.detail, s.error, s.skipped, s.turn, s.spread, s.cost_usd "
        "FROM (SELECT run_id, item_id, repeat, unnest(scores) AS s FROM cases)"
    )
