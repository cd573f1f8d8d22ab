"""``-o/--output FILE``: a command's result written to a file in the format its extension names.

Every command that takes ``-o`` builds one :class:`Result` — its ``--json`` data, the rows of its
table picked out of that data, and, where the command has them, its own markdown summary and
JUnit test cases — and :func:`write_output` renders it by the file's extension and writes it
atomically (a temporary file beside the target, renamed over it), so an error never leaves a
half-written file. The extension is checked when the option is parsed, before any work (or
spending) starts. Only the standard library is used: ``run`` must stay light.
"""

from __future__ import annotations

import csv
import html
import io
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from evalsite.analysis.ci_files import TestOutcome, junit_xml, markdown_table, write_atomic
from evalsite.analysis.rows import cell, column_names, html_table
from evalsite.cli.output import json_text
from evalsite.errors import OutputError
from evalsite.project import find_project

log = logging.getLogger(__name__)

JSON, CSV, MARKDOWN, JUNIT, HTML = ".json", ".csv", ".md", ".junit.xml", ".html"
#: Longest first, so ``x.junit.xml`` is JUnit and never "``.xml``".
EXTENSIONS = (JUNIT, JSON, CSV, MARKDOWN, HTML)


@dataclass(frozen=True)
class OutputFile:
    """Where ``-o`` writes and in which format (one of :data:`EXTENSIONS`)."""

    path: Path
    extension: str


@dataclass(frozen=True)
class Result:
    """One command's result, ready for any format.

    ``data`` is exactly what ``--json`` prints; ``rows`` its table (values picked out of ``data``
    by :func:`evalsite.analysis.rows.pick_rows`, never recomputed); ``markdown`` the command's own summary (else the
    table under ``title``); ``junit`` a suite name and its test cases."""

    title: str
    data: Any
    rows: list[dict[str, Any]]
    markdown: str | None = None
    junit: tuple[str, list[TestOutcome]] | None = None


def extension_of(path: Path) -> str | None:
    name = path.name.lower()
    return next((extension for extension in EXTENSIONS if name.endswith(extension) and name != extension), None)


def output_file(path: Path, command: str, extensions: Sequence[str]) -> OutputFile:
    """``path`` with its format, or :class:`OutputError` naming the file and what ``command`` writes."""
    extension = extension_of(path)
    if extension is None or extension not in extensions:
        what = f"{command} does not write {extension}" if extension else "unknown output format"
        raise OutputError(f"{path}: {what}; {command} -o writes {', '.join(extensions)}")
    if not path.parent.is_dir():  # refused before the command spends anything
        raise OutputError(f"{path}: the folder {path.parent} does not exist")
    return OutputFile(not_a_project_input(path, "-o"), extension)


def not_a_project_input(path: Path, option: str) -> Path:
    """``path``, unless writing it (``-o``, ``--junit``, ``--summary``) would replace or append to one of
    the project's inputs: ``evalsite.toml`` or a file under its runs, data or experiments folder (a
    run's ``run.json``, a ``.csv`` or ``.json`` dataset). Symlinks are resolved, so a link to one is
    refused too."""
    project = find_project()
    root, target = project.root.resolve(), Path(os.path.realpath(path))
    if target == root / "evalsite.toml":
        raise OutputError(f"{path}: {option} would overwrite the project's evalsite.toml; choose another file")
    for folder in (project.runs_dir, project.local_runs_dir, project.data_dir, project.experiments_dir):
        resolved = Path(os.path.realpath(folder))
        if resolved == target or resolved in target.parents:
            shown = project.relative(resolved)
            raise OutputError(f"{path}: {option} would write into the project's {shown}/ folder, whose files are "
                              "its runs, datasets and manifests; choose a file outside it")
    return path


def project_input_refused(context: click.Context, parameter: click.Parameter, value: Path | None) -> Path | None:
    """A click callback: :func:`not_a_project_input` for a file option (``--junit``, ``--summary``)."""
    return None if value is None else not_a_project_input(value, parameter.opts[0])


def output_option(command: str, *extensions: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The ``-o/--output FILE`` option of ``command``, checked against the ``extensions`` it writes."""

    def check(context: click.Context, parameter: click.Parameter, value: Path | None) -> OutputFile | None:
        return None if value is None else output_file(value, command, extensions)

    return click.option(
        "-o", "--output", "output", metavar="FILE", type=click.Path(path_type=Path), callback=check,
        help=f"Also write the result to FILE, in the format its extension names: {', '.join(extensions)}.",
    )


def write_output(output: OutputFile | None, result: Result) -> None:
    """Render ``result`` in ``output``'s format and write it atomically (nothing when None)."""
    if output is None:
        return
    write_atomic(output.path, RENDERERS[output.extension](result))
    log.info("wrote %s", output.path)


def _json(result: Result) -> str:
    return json_text(result.data) + "\n"


def _csv(result: Result) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=column_names(result.rows), lineterminator="\n")
    writer.writeheader()
    writer.writerows({key: cell(value) for key, value in row.items()} for row in result.rows)
    return buffer.getvalue()


def _markdown(result: Result) -> str:
    if result.markdown is not None:
        return result.markdown.rstrip("\n") + "\n"
    return f"### {result.title}\n\n{markdown_table(result.rows, column_names(result.rows))}\n"


def _junit(result: Result) -> str:
    if result.junit is None:  # output_option lists JUnit only for commands that give test cases
        raise OutputError(f"{result.title}: has no test cases to write as JUnit XML")
    return junit_xml(*result.junit)


def _html(result: Result) -> str:
    title = html.escape(result.title)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>\n'
        "<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
        "th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left}th{background:#f4f4f4}</style>\n"
        f"</head><body>\n<h1>{title}</h1>\n{html_table(result.rows)}\n</body></html>\n"
    )


RENDERERS: dict[str, Callable[[Result], str]] = {JSON: _json, CSV: _csv, MARKDOWN: _markdown, JUNIT: _junit, HTML: _html}
