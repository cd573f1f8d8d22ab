"""Printing helpers shared by commands: aligned text tables and JSON on stdout."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from evalsite.runlog.money import format_usd
from evalsite.runlog.store import scan_runs


def format_value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def format_cell(value: Any, column: str) -> str:
    """A table cell: dollar columns (``*cost_usd``) to significant digits, the rest by :func:`format_value`."""
    if column.endswith("cost_usd") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return format_usd(value)
    return format_value(value)


def print_table(rows: Iterable[dict], columns: list[str]) -> None:
    rows = [[format_cell(row.get(c), c) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    for row in rows:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str))


def warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def warn_skipped_runs(problems: Iterable[str]) -> None:
    """One warning per run a command left out because it cannot be read (id and reason)."""
    for problem in problems:
        warn(f"skipped run {problem}")


def warn_unreadable_runs(runs_dir: Path) -> None:
    """:func:`warn_skipped_runs` for the runs under ``runs_dir`` (for commands that do not open the views)."""
    warn_skipped_runs(scan_runs(runs_dir)[1])
