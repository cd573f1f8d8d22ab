"""DuckDB prints a progress bar to standard output (a pipe too) during any query longer than two
seconds, which would land inside ``--json`` output, CSV and CI logs: evalsite's connections are
opened by one function, with the bar off."""

from __future__ import annotations

import ast
from pathlib import Path

import evalsite
from evalsite.analysis.db import connect, open_database

PACKAGE = Path(evalsite.__file__).parent


def progress_bar(connection) -> bool:
    return connection.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0]


def test_evalsite_s_connections_have_no_progress_bar(tmp_path):
    assert progress_bar(connect()) is False
    (tmp_path / "runs").mkdir()
    assert progress_bar(open_database(tmp_path / "runs").connection) is False


def test_every_connection_is_opened_by_analysis_db_connect():
    """Any other ``duckdb.connect(...)`` call in the package would open one with the bar on."""
    callers = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("connect", "sql", "query")
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "duckdb"):
                callers.append(str(path.relative_to(PACKAGE)))
    assert callers == ["analysis/db.py"]  # the one in connect()
