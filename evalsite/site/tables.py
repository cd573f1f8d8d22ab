"""Tables as data: every table a page shows is a :class:`Table`, rendered by one template macro and
written beside its page as CSV and JSON downloads (``<page>.<table id>.csv`` / ``.json``)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Iterator

#: How a column's cells are shown; downloads always carry the raw value.
COLUMN_KINDS = ("text", "code", "number", "percent", "usd", "ms", "count", "interval", "status", "when")


@dataclass(frozen=True)
class Link:
    """A cell that links somewhere in the site; ``href`` is relative to the site root."""

    text: str
    href: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Interval:
    """A value with its interval (``low``/``high`` are ``None`` when no interval was computed)."""

    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    kind: str = "text"
    help: str = ""

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise ValueError(f"column {self.key!r}: unknown kind {self.kind!r}")


@dataclass
class Table:
    """Rows keyed by column key; a row's optional ``_class`` key styles it (never downloaded)."""

    id: str
    columns: list[Column]
    rows: list[dict]
    caption: str = ""
    note: str = ""
    sortable: bool = True
    download_stem: str = field(default="", compare=False)

    def records(self) -> list[dict]:
        """Rows as plain JSON values, in column order."""
        return [{c.key: _plain(row.get(c.key)) for c in self.columns} for row in self.rows]

    def to_json(self) -> str:
        return json.dumps(self.records(), indent=1, ensure_ascii=False, allow_nan=False) + "\n"

    def to_csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        header = []
        for column in self.columns:
            header += [column.label, f"{column.label} low", f"{column.label} high"] if column.kind == "interval" else [column.label]
        writer.writerow(header)
        for row in self.rows:
            cells = []
            for column in self.columns:
                value = row.get(column.key)
                if column.kind == "interval":
                    interval = value if isinstance(value, Interval) else Interval(value)
                    cells += [_csv(interval.value), _csv(interval.low), _csv(interval.high)]
                else:
                    cells.append(_csv(_plain(value)))
            writer.writerow(cells)
        return buffer.getvalue()


def _plain(value: Any) -> Any:
    if isinstance(value, Link):
        return value.text
    if isinstance(value, Interval):
        return {"value": value.value, "low": value.low, "high": value.high}
    if isinstance(value, float) and value != value:
        return None
    return value


def _csv(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def tables_in(value: Any) -> Iterator[Table]:
    """Every :class:`Table` reachable from a page context (dataclass fields, lists, dicts)."""
    if isinstance(value, Table):
        yield value
    elif is_dataclass(value) and not isinstance(value, type):
        for item in fields(value):
            yield from tables_in(getattr(value, item.name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tables_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tables_in(item)
