"""A report's table: rows picked out of its JSON data, and their cells as CSV and HTML show them.

One definition for every table a report gives: ``-o FILE.csv`` / ``.html`` (evalsite.cli.export)
and a report's own :meth:`~evalsite.analysis.json_data.Tabular.table` in a notebook. Only the
standard library is used: ``run`` must stay light.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any


def pick_rows(records: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> list[dict[str, Any]]:
    """Rows of ``column -> value`` where each value is the record's field at a dotted path
    (``summary.cost.per_case``); a missing field is None."""
    return [{name: _at(record, path) for name, path in columns.items()} for record in records]


def _at(record: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(record, Mapping):
            return None
        record = record.get(key)
    return record


def column_names(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every key of ``rows``, in the order they first appear."""
    return list(dict.fromkeys(key for row in rows for key in row))


def cell(value: Any) -> Any:
    """A CSV/HTML cell: lists and objects as JSON text, None as empty."""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


def html_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """``rows`` as an HTML ``<table>``, every header and cell escaped."""
    columns = column_names(rows) if columns is None else columns
    head = "".join(f"<th>{html.escape(column)}</th>" for column in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(cell(row.get(column))))}</td>" for column in columns) + "</tr>\n"
        for row in rows
    )
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>"
