"""``evalsite runs`` and ``evalsite show``."""

from __future__ import annotations

import click

from evalsite.analysis.run_views import run_listing, run_overview
from evalsite.cli.output import print_json, print_table, warn, warn_skipped_runs
from evalsite.project import find_project

EVALUATOR_COLUMNS = ["evaluator", "n", "ok", "errors", "skipped", "pass_rate", "mean", "passed"]


@click.command("runs")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def runs_command(as_json: bool) -> None:
    """List runs, newest first."""
    listing = run_listing(find_project())
    warn_skipped_runs(listing.skipped)
    if as_json:
        print_json(listing.rows)
    else:
        print_table(listing.rows, ["run_id", "arm", "experiment", "status", "cases", "mean_score", "pass_rate"])


@click.command("show")
@click.argument("run")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def show_command(run: str, as_json: bool) -> None:
    """One run's summary."""
    overview = run_overview(find_project(), run)
    for message in overview.warnings:
        warn(message)
    summary = overview.to_json()
    if summary.get("served_model_changed"):
        warn(f"the served model changed mid-run: {', '.join(summary['served_models'])}")
    if as_json:
        print_json(summary)
        return
    errors = summary.pop("top_errors")
    evaluators = summary.pop("evaluators")
    width = max(map(len, summary))
    for key, value in summary.items():
        click.echo(f"{key.ljust(width)}  {value if value is not None else '—'}")
    if evaluators:
        click.echo()
        print_table([{"evaluator": name, **totals} for name, totals in evaluators.items()], EVALUATOR_COLUMNS)
    if errors:
        click.echo()
        print_table([{**e, "items": ", ".join(e["items"])} for e in errors], ["count", "source", "message", "items"])
