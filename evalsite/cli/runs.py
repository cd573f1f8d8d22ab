"""``evalsite runs`` and ``evalsite show``."""

from __future__ import annotations

import click

from evalsite.analysis.db import open_database
from evalsite.analysis.summary import summarise_cases
from evalsite.cli.output import print_json, print_table, warn, warn_skipped_runs
from evalsite.project import find_project
from evalsite.runlog.store import read_run, resolve_run

RUNS_SQL = """
SELECT r.run_id, r.arm_id AS arm, r.experiment, r.dataset_id, r.status,
       count(c.item_id) AS cases, avg(c.score) AS mean_score, avg(c.passed::INTEGER) AS pass_rate
FROM runs r LEFT JOIN cases c USING (run_id)
GROUP BY ALL ORDER BY r.run_id DESC
"""

EVALUATOR_COLUMNS = ["evaluator", "n", "ok", "errors", "skipped", "pass_rate", "mean", "passed"]


@click.command("runs")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def runs_command(as_json: bool) -> None:
    """List runs, newest first."""
    database = open_database(find_project().runs_dir)
    warn_skipped_runs(database.skipped)
    rows = database.rows(RUNS_SQL)
    if as_json:
        print_json(rows)
    else:
        print_table(rows, ["run_id", "arm", "experiment", "status", "cases", "mean_score", "pass_rate"])


@click.command("show")
@click.argument("run")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def show_command(run: str, as_json: bool) -> None:
    """One run's summary."""
    loaded = read_run(resolve_run(find_project().runs_dir, run))
    summary = {
        "run_id": loaded.run_id,
        "arm": loaded.header.arm_id,
        "experiment": loaded.header.experiment,
        "dataset_id": loaded.header.dataset.dataset_id,
        "status": loaded.status,
        "fingerprint_hash": loaded.header.fingerprint_hash,
        **summarise_cases(loaded.cases),
    }
    for message in loaded.warnings:
        warn(message)
    if as_json:
        print_json(summary)
    else:
        evaluators = summary.pop("evaluators")
        width = max(map(len, summary))
        for key, value in summary.items():
            click.echo(f"{key.ljust(width)}  {value if value is not None else '—'}")
        if evaluators:
            click.echo()
            print_table([{"evaluator": name, **totals} for name, totals in evaluators.items()], EVALUATOR_COLUMNS)


COMMANDS = [runs_command, show_command]
