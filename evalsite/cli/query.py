"""``evalsite query``: ad-hoc DuckDB SQL over the views."""

from __future__ import annotations

import click
import duckdb

from evalsite.analysis.db import open_database
from evalsite.cli.export import CSV, HTML, JSON, MARKDOWN, RENDERERS, OutputFile, Result, output_option, write_output
from evalsite.cli.output import print_json, print_table, warn_skipped_runs
from evalsite.errors import EvalsiteError
from evalsite.project import find_project


@click.command("query")
@click.argument("sql")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV (as -o FILE.csv writes it).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@output_option("query", JSON, CSV, MARKDOWN, HTML)
def query_command(sql: str, as_csv: bool, as_json: bool, output: OutputFile | None) -> None:
    """Run SQL over the views runs, cases and scores."""
    database = open_database(find_project().runs_dir)
    warn_skipped_runs(database.skipped)
    try:
        cursor = database.connection.execute(sql)
    except duckdb.Error as exc:
        raise EvalsiteError(f"query failed: {str(exc).splitlines()[0]}") from None
    if cursor is None:  # DuckDB returns no cursor for text without a statement ("", ";", a comment)
        raise EvalsiteError(f"query: {sql!r} holds no SQL statement")
    if cursor.description is None:
        return
    columns = distinct_names([d[0] for d in cursor.description])
    rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
    result = Result("evalsite query", rows, rows)
    if as_json:
        print_json(rows)
    elif as_csv:
        click.echo(RENDERERS[CSV](result), nl=False)
    else:
        print_table(rows, columns)
    write_output(output, result)


def distinct_names(names: list[str]) -> list[str]:
    """The result's column names, a name given again renamed as DuckDB renames it in a subquery
    (``a``, ``a_1``): each row is keyed by name, so a repeated name (``SELECT 1 AS a, 2 AS a``, or
    ``run_id`` of two joined views) would silently lose all but its last column."""
    taken: set[str] = set()
    distinct = []
    for name in names:
        unique, suffix = name, 0
        while unique in taken:
            suffix += 1
            unique = f"{name}_{suffix}"
        taken.add(unique)
        distinct.append(unique)
    return distinct
