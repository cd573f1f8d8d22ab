"""Tables as data: every table a page shows is a :class:`Table`, rendered by one template macro and
written beside its page as CSV and JSON downloads (``<page>.<table id>.csv`` / ``.json``)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cache
from json.encoder import encode_basestring
from typing import Any, Protocol, cast, get_args, get_type_hints

#: How a column's cells are shown; downloads always carry the raw value.
COLUMN_KINDS = ("text", "code", "number", "pvalue", "percent", "usd", "ms", "count", "interval", "status", "when")


@dataclass(frozen=True)
class Link:
    """A cell that links somewhere in the site; ``href`` is relative to the site root."""

    text: str
    href: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class ShownInterval:
    """A value with its interval (``low``/``high`` are ``None`` when no interval was computed)."""

    value: float | None
    low: float | None = None
    high: float | None = None


class Bounds(Protocol):
    """An interval of the analysis as a page reads it, by its bounds (the site imports no statistics)."""

    @property
    def low(self) -> float: ...

    @property
    def high(self) -> float: ...


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    kind: str = "text"
    help: str = ""
    secondary: bool = False  # hidden until the reader asks for every column
    #: The downloads' name for the column (default its key): the name the CLI's ``-o FILE.csv``
    #: gives the same figure, where a command writes it (docs/reference/site.md, "Download columns").
    download: str = ""
    #: An interval column's CSV names of its low and high bounds (default ``<name>_low``/``<name>_high``).
    bounds: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise ValueError(f"column {self.key!r}: unknown kind {self.kind!r}")

    @property
    def name(self) -> str:
        """The column's name in both downloads."""
        return self.download or self.key

    def csv_names(self) -> list[str]:
        """The column's CSV header: its name, and an interval's two bounds after it."""
        name = self.name
        if self.kind != "interval":
            return [name]
        return [name, *(self.bounds or (f"{name}_low", f"{name}_high"))]


@dataclass
class Table:
    """Rows keyed by column key; a row's optional ``_class`` key styles it (never downloaded)."""

    id: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    caption: str = ""
    note: str = ""
    sortable: bool = True
    legend: bool = False  # list every column's help under the table (instead of only hover titles)
    download_stem: str = field(default="", compare=False)
    shown: int | None = None  # draw only the first rows as HTML (the downloads hold them all)

    @property
    def shown_rows(self) -> list[dict[str, Any]]:
        return self.rows if self.shown is None else self.rows[: self.shown]

    def records(self) -> list[dict[str, Any]]:
        """Rows as plain JSON values under the columns' download names, in column order."""
        names = [c.name for c in self.columns]
        return [dict(zip(names, cells)) for cells in self._each_row([self._plain_column(c) for c in self.columns])]

    def to_json(self) -> str:
        """A JSON array, one record per line (compact, and quick to diff): each record as
        ``json.dumps`` writes it, its values encoded a column at a time."""
        names = [c.name for c in self.columns]
        if len(set(names)) < len(names):  # a record keeps one value per name
            lines = list(map(_JSON.encode, self.records()))
        else:
            line = (
                "{{"
                + ", ".join(_JSON.encode(name).replace("{", "{{").replace("}", "}}") + ": {}" for name in names)
                + "}}"
            )
            lines = [
                line.format(*cells)
                for cells in self._each_row([_json_cells(self._plain_column(c)) for c in self.columns])
            ]
        return "[\n" + ",\n".join(lines) + "\n]\n" if lines else "[]\n"

    def to_csv(self) -> str:
        """The rows under the columns' CSV names (:meth:`Column.csv_names`: the CLI's ``-o`` names
        where a command writes the figure, else the key; an interval as its name and two bounds):
        machine names a script can rely on, never the display labels, which may change with the
        wording of a page."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([name for column in self.columns for name in column.csv_names()])
        cells: list[list[str]] = []
        for column in self.columns:
            if column.kind == "interval":
                intervals = [_interval(row.get(column.key)) for row in self.rows]
                cells += [
                    _csv_cells([getattr(interval, bound) for interval in intervals])
                    for bound in ("value", "low", "high")
                ]
            else:
                cells.append(_csv_cells(self._plain_column(column)))
        writer.writerows(self._each_row(cells))
        return buffer.getvalue()

    def _each_row(self, columns: list[list[Any]]) -> Iterator[tuple[Any, ...]]:
        """Lists over the rows, one per column, as one tuple per row (an empty one per row when there are no columns)."""
        return zip(*columns) if columns else iter([()] * len(self.rows))

    def _plain_column(self, column: Column) -> list[Any]:
        """The column's values in every row as plain JSON values (:func:`_plain`), a column at a time."""
        key = column.key
        values = [row.get(key) for row in self.rows]
        kinds = set(map(type, values))
        if kinds <= _PLAIN:
            return values
        if kinds <= _PLAIN | {float}:
            return [None if value != value else value for value in values]  # NaN: no value
        if kinds == {Link}:
            return [value.text for value in cast(list[Link], values)]
        return list(map(_plain, values))


#: Exact types :func:`_plain` returns as they are (a float is, unless it is NaN).
_PLAIN = frozenset({str, int, bool, type(None)})
#: Every JSON download's encoder (``json.dumps`` with these options makes one per call).
_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def _json_cells(values: list[Any]) -> list[str]:
    """Each value as the JSON downloads' encoder writes it, plain text and finite numbers without a call each."""
    kinds = set(map(type, values))
    if kinds <= _TEXTS:
        return ["null" if value is None else encode_basestring(value) for value in values]
    if kinds <= _NUMBERS and all(map(math.isfinite, (value for value in values if value is not None))):
        return ["null" if value is None else repr(value) for value in values]
    if kinds <= _VERDICTS:
        return ["null" if value is None else "true" if value else "false" for value in values]
    return list(map(_JSON.encode, values))


def _interval(value: Any) -> ShownInterval:
    return value if isinstance(value, ShownInterval) else ShownInterval(value)


def _plain(value: Any) -> Any:
    if isinstance(value, Link):
        return value.text
    if isinstance(value, ShownInterval):
        return {"value": value.value, "low": value.low, "high": value.high}
    if isinstance(value, float) and value != value:
        return None
    return value


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv(value: Any) -> str:
    """A cell as text. Text that a spreadsheet would run as a formula (a model output such as
    ``=HYPERLINK(...)``) gets a leading ``'``; numbers are written as they are, and the JSON
    download always keeps the raw value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    text = json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _csv_cells(values: list[Any]) -> list[str]:
    """:func:`_csv` of each value, with the common columns (numbers, plain text) taken whole."""
    kinds = set(map(type, values))
    if kinds <= _NUMBERS:
        return ["" if value is None else str(value) for value in values]
    if kinds <= _TEXTS:
        return ["" if value is None else "'" + value if value.startswith(FORMULA_STARTS) else value for value in values]
    if kinds <= _VERDICTS:
        return ["" if value is None else "true" if value else "false" for value in values]
    return list(map(_csv, values))


_NUMBERS = frozenset({int, float, type(None)})
_TEXTS = frozenset({str, type(None)})
_VERDICTS = frozenset({bool, type(None)})


def tables_in(value: Any) -> Iterator[Table]:
    """Every :class:`Table` reachable from a page context through fields whose declared type can
    hold one (so the thousands of case rows of a listing are not walked)."""
    if isinstance(value, Table):
        yield value
    elif is_dataclass(value) and not isinstance(value, type):
        for name in _table_fields(type(value)):
            yield from tables_in(getattr(value, name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tables_in(item)


@cache
def _table_fields(cls: type) -> tuple[str, ...]:
    hints = get_type_hints(cls)
    return tuple(f.name for f in fields(cls) if _may_hold_table(hints.get(f.name)))


def _may_hold_table(hint: Any) -> bool:
    if hint is Table:
        return True
    if isinstance(hint, type) and is_dataclass(hint):
        return bool(_table_fields(hint))
    return any(_may_hold_table(arg) for arg in get_args(hint))
