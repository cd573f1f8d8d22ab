"""Text that fits the terminal: how wide stdout may be, tables that give way by a declared
priority, and report lines wrapped at spaces.

The rule (docs/reference/commands/output.md#width): on a terminal, text fits its width (COLUMNS,
when set, wins over the terminal's own size); piped or redirected, stdout is written at full
width, as today, unless COLUMNS is set, so scripts and CI logs see every column; ``--wide``
always prints every column in full. A table narrower than the width is never changed.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

import click

from evalsite.cli.console import CONSOLE

#: Narrower than this, fitting gives up: nothing sensible fits.
MIN_WIDTH = 30
#: A wrapped last column keeps at least this many characters per line ("not separated").
MIN_WRAP = 13
GAP = 2
ELLIPSIS = "…"
WIDE_HINT = "--wide shows them"


def output_width() -> int | None:
    """How many columns stdout's text may take; None for no limit (``--wide``, or stdout is not a
    terminal and COLUMNS is not set)."""
    if CONSOLE.wide:
        return None
    columns = os.environ.get("COLUMNS", "").strip()
    try:
        given = int(columns) if columns.isdigit() else 0
    except ValueError:  # a digit int() does not read ('²'), or more digits than Python writes out (4,300)
        given = 0
    if given > 0:
        return max(given, MIN_WIDTH)
    stream = sys.stdout
    if not getattr(stream, "isatty", lambda: False)():
        return None
    try:
        width = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return None
    return max(width, MIN_WIDTH) if width > 0 else None


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: colour codes take none, wide (CJK) characters two."""
    if text.isascii() and "\x1b" not in text:
        return len(text)
    plain = click.unstyle(text)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in plain)


def pad(text: str, width: int) -> str:
    return text + " " * max(width - display_width(text), 0)


def cut(text: str, width: int, *, middle: bool = False) -> str:
    """``text`` in ``width`` columns, an ellipsis where it was cut (its middle, for ids whose ends tell them apart)."""
    if display_width(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    if middle:
        head = width // 2
        return _take(text, head) + ELLIPSIS + _take_end(text, width - 1 - head)
    return _take(text, width - 1).rstrip() + ELLIPSIS


def _take(text: str, width: int) -> str:
    out, used = [], 0
    for char in text:
        used += display_width(char)
        if used > width:
            break
        out.append(char)
    return "".join(out)


def _take_end(text: str, width: int) -> str:
    return _take(text[::-1], width)[::-1]


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` columns, every line after the first
    starting with ``indent``; a word longer than a line is split. The spacing between words on a
    line is kept; a break drops the spaces at it."""
    lines: list[str] = []
    line, used = "", 0
    room = max(width - display_width(indent), 1)
    for space, word in _words(text):
        limit = width if not lines else room
        size = display_width(word)
        if line and used + display_width(space) + size <= limit:
            line, used = line + space + word, used + display_width(space) + size
            continue
        if line:
            lines.append(line)
            line, used, limit = "", 0, room
        elif not lines and space:  # the text's own indent, kept on its first line
            word, size = space + word, display_width(space) + size
        while size > limit and "\x1b" not in word:
            lines.append(_take(word, limit) or word[0])
            word = word[len(lines[-1]):]
            size, limit = display_width(word), room
        line, used = word, size
    if line or not lines:
        lines.append(line)
    return [lines[0], *(indent + rest for rest in lines[1:])]


def _words(text: str) -> Iterator[tuple[str, str]]:
    """(the spaces before it, a word) for each word of ``text``."""
    for match in re.finditer(r"(\s*)(\S+)", text):
        yield match.group(1), match.group(2)


def wrap_line(line: str, width: int) -> list[str]:
    """A report line in ``width`` columns: continuation lines indented two beyond the line's own indent."""
    if display_width(line) <= width:
        return [line]
    own = len(line) - len(line.lstrip(" "))
    return wrap(line, width, " " * (own + GAP))


# Tables --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shrink:
    """A column that may be cut (with an ellipsis) down to ``minimum`` columns; ``middle`` cuts
    its middle, for names and ids whose ends tell them apart."""

    column: str
    minimum: int
    middle: bool = False


@dataclass(frozen=True)
class Fit:
    """How a table gives way to a narrow terminal: first ``drop`` columns in that order (none of
    the others is ever dropped), then ``shrink`` columns in that order; last, its last column
    wraps onto more lines (unless ``wrap`` is off: figures are never broken)."""

    drop: tuple[str, ...] = ()
    shrink: tuple[Shrink, ...] = ()
    wrap: bool = True


@dataclass
class TablePlan:
    """Which columns are shown, how wide, and which were hidden to fit."""

    columns: list[int]
    widths: list[int]
    hidden: list[str] = field(default_factory=list)
    middle: set[int] = field(default_factory=set)
    wrap_last: bool = False


def plan_table(headers: Sequence[str], cells: Sequence[Sequence[str]], width: int | None, fit: Fit) -> TablePlan:
    """The columns of a table fitted to ``width`` by ``fit`` (all of them, in full, for no width).

    A table fits when its last column, wrapped onto more lines if need be (``fit.wrap``), keeps
    at least :data:`MIN_WRAP` columns: columns are dropped, then cut, only until it does."""
    natural = [max([display_width(h), *(display_width(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    plan = TablePlan(list(range(len(headers))), natural)
    if width is None:
        return plan
    index = {name: i for i, name in enumerate(headers)}

    def excess(*, wrapped: bool = fit.wrap) -> int:
        last = plan.columns[-1]
        floor = max(MIN_WRAP, display_width(headers[last])) if wrapped else plan.widths[last]
        others = sum(plan.widths[i] for i in plan.columns[:-1]) + GAP * (len(plan.columns) - 1)
        return others + min(plan.widths[last], floor) - width

    for name in fit.drop:
        if excess() <= 0:
            break
        if name in index and index[name] in plan.columns and len(plan.columns) > 1:
            plan.columns.remove(index[name])
            plan.hidden.append(name)
    for shrink in fit.shrink:
        i = index.get(shrink.column)
        if i is None or i not in plan.columns or i == plan.columns[-1] or excess() <= 0:
            continue
        floor = max(shrink.minimum, display_width(headers[i]))
        plan.widths[i] = max(floor, plan.widths[i] - excess())
        if shrink.middle:
            plan.middle.add(i)
    over = excess(wrapped=False)
    if fit.wrap and over > 0 and len(plan.columns) > 1:
        last = plan.columns[-1]
        plan.widths[last] = max(plan.widths[last] - over, MIN_WRAP, display_width(headers[last]))
        plan.wrap_last = True
    return plan


def table_lines(headers: Sequence[str], cells: Sequence[Sequence[str]], plan: TablePlan,
                paint: Callable[[str, int], str] = lambda text, i: text) -> Iterator[str]:
    """The header and rows of a planned table; ``paint(cell, column)`` may colour a cell's words."""
    yield from _row_lines(headers, plan, lambda text, i: text)
    for row in cells:
        yield from _row_lines(row, plan, paint)


def _row_lines(row: Sequence[str], plan: TablePlan, paint: Callable[[str, int], str]) -> Iterator[str]:
    last = plan.columns[-1]
    parts: list[list[str]] = []
    for i in plan.columns:
        text, width = row[i], plan.widths[i]
        if i == last and plan.wrap_last:
            parts.append(wrap(text, width, ""))
        else:
            parts.append([cut(text, width, middle=i in plan.middle)])
    for n in range(max(len(p) for p in parts)):
        cells = [p[n] if n < len(p) else "" for p in parts]
        yield "  ".join(pad(paint(c, i) if n == 0 else c, plan.widths[i]) if c else " " * plan.widths[i]
                        for c, i in zip(cells, plan.columns)).rstrip()


def hidden_note(plan: TablePlan, width: int | None) -> str | None:
    if not plan.hidden:
        return None
    return f"(hidden at {width} columns: {', '.join(plan.hidden)}; {WIDE_HINT})"


# Report lines --------------------------------------------------------------------------------------


class _WrappingStdout:
    """stdout for a text report: each line wider than ``width`` is wrapped at spaces
    (:func:`wrap_line`) before it reaches the real stream; everything else passes through."""

    def __init__(self, stream: TextIO, width: int) -> None:
        self.stream, self.width, self.pending = stream, width, ""

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            self.stream.write("\n".join(wrap_line(line, self.width)) + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def close_pending(self) -> None:
        if self.pending:
            self.stream.write("\n".join(wrap_line(self.pending, self.width)))
            self.pending = ""
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, errors: the real stream's
        return getattr(self.stream, name)


@contextmanager
def fitted() -> Iterator[None]:
    """Inside, every line written to stdout fits :func:`output_width` (no change without a width)."""
    width = output_width()
    if width is None:
        yield
        return
    real = sys.stdout
    wrapper = _WrappingStdout(real, width)
    sys.stdout = wrapper
    try:
        yield
    finally:
        wrapper.close_pending()
        sys.stdout = real


def _set_wide(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    CONSOLE.wide = value
    return value


wide_option = click.option(
    "--wide", is_flag=True, expose_value=False, callback=_set_wide, is_eager=True,
    help="Print every column in full, however wide (default on a terminal: fit its width).",
)
