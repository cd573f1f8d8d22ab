"""``evalsite query``: ad-hoc DuckDB SQL over the views."""

from __future__ import annotations

import csv
import sys

import click
import duckdb

from evalsite.analysis.db import open_database
from evalsite.cli.output import print_json, print_table, warn_skipped_runs
from evalsite.errors import EvalsiteError
from evalsite.project import find_project


@click.command("query")
@click.argument("sql")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def query_command(sql: str, as_csv: bool, as_json: bool) -> None:
    """Run SQL over the views runs, cases and scores."""
    database = open_database(find_project().runs_dir)
    warn_skipped_runs(database.skipped)
    try:
        cursor = database.connection.execute(sql)
    except duckdb.Error as exc:
        raise EvalsiteError(f"query failed: {str(exc).splitlines()[0]}") from None
    if cursor.description is None:
        return
    columns = [d[0] for d in cursor.description]
    rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
    if as_json:
        print_json(rows)
    elif as_csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    else:
        print_table(rows, columns)
