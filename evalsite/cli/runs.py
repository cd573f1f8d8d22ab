"""``evalsite runs`` and ``evalsite show``."""

from __future__ import annotations

from typing import Any

import click

from evalsite.analysis.ci_files import markdown_table
from evalsite.analysis.run_views import run_listing, run_overview
from evalsite.cli.complete import complete_runs
from evalsite.cli.export import CSV, HTML, JSON, MARKDOWN, OutputFile, Result, output_option, write_output
from evalsite.cli.fit import Fit, fitted, wide_option
from evalsite.cli.output import joined, print_json, print_table, warn, warn_skipped_runs
from evalsite.jsonshape import JSONObject
from evalsite.project import Project, find_project
from evalsite.runlog.money import format_usd

EVALUATOR_COLUMNS = ["evaluator", "n", "ok", "errors", "skipped", "pass_rate", "mean", "passed"]
#: A narrow terminal keeps the run id whole (it is what the other commands take) and its mean score.
RUNS_FIT = Fit(drop=("experiment", "pass_rate", "cases", "arm", "excluded", "status"), wrap=False)
EVALUATORS_FIT = Fit(drop=("skipped", "ok", "n", "errors"), wrap=False)


@click.command("runs")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--exclude", "exclude", metavar="RUN", shell_complete=complete_runs, help="Keep RUN out of leaderboards, claims, baselines and the site (needs --reason).")
@click.option("--include", "include", metavar="RUN", shell_complete=complete_runs, help="Take an excluded RUN back (needs --reason).")
@click.option("--reason", help="Why, recorded in runs/decisions.jsonl with --exclude or --include.")
@wide_option
def runs_command(as_json: bool, exclude: str | None, include: str | None, reason: str | None) -> None:
    """List runs, newest first; or exclude a run from comparisons, or include it again."""
    project = find_project()
    if exclude or include:
        _decide(project, exclude, include, reason)
        return
    if reason is not None:
        raise click.UsageError("--reason goes with --exclude RUN or --include RUN")
    listing = run_listing(project)
    warn_skipped_runs(listing.skipped)
    if as_json:
        print_json(listing.rows)
    else:
        columns = ["run_id", "arm", "experiment", "status", "cases", "mean_score", "pass_rate"]
        print_table(listing.rows, columns + ["excluded"] * any(row["excluded"] for row in listing.rows), RUNS_FIT)


def _decide(project: Project, exclude: str | None, include: str | None, reason: str | None) -> None:
    from evalsite.analysis.exclusions import exclude_run, include_run

    if exclude and include:
        raise click.UsageError("give --exclude or --include, not both")
    if reason is None:
        raise click.UsageError(f"--{'exclude' if exclude else 'include'} needs --reason TEXT (recorded in runs/decisions.jsonl)")
    if exclude:
        decision = exclude_run(project, exclude, reason)
        click.echo(f"excluded {decision.run_id} from comparisons: {decision.reason}")
    else:
        decision = include_run(project, include or "", reason)
        click.echo(f"included {decision.run_id} in comparisons again: {decision.reason}")


@click.command("show")
@click.argument("run", shell_complete=complete_runs)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@output_option("show", JSON, CSV, MARKDOWN, HTML)
@wide_option
def show_command(run: str, as_json: bool, output: OutputFile | None) -> None:
    """One run's summary."""
    overview = run_overview(find_project(), run)
    for message in overview.warnings:
        warn(message)
    summary = overview.to_json()
    if overview.emulated:
        warn("emulated: every answer came from emulation.infra.llm: mock, not from the arm's target")
    if summary.get("served_model_changed"):
        warn(f"the served model changed mid-run: {', '.join(summary['served_models'])}")
    write_output(output, show_result(summary))
    if as_json:
        print_json(summary)
        return
    with fitted():
        print_summary(summary)


def print_summary(summary: JSONObject) -> None:
    """``show``'s text: the run's fields, then its evaluators and most common errors as tables."""
    fields = {key: value for key, value in summary.items() if key not in ("evaluators", "top_errors")}
    width = max(map(len, fields))
    for key, value in fields.items():
        click.echo(f"{key.ljust(width)}  {shown(key, value)}")
    if summary["evaluators"]:
        click.echo()
        rows = [{"evaluator": name, **{key: shown(key, value) for key, value in totals.items()}}
                for name, totals in summary["evaluators"].items()]
        print_table(rows, EVALUATOR_COLUMNS, EVALUATORS_FIT)
    if summary["top_errors"]:
        click.echo()
        print_table([{**e, "items": ", ".join(e["items"])} for e in summary["top_errors"]], ["count", "source", "message", "items"])


def shown(key: str, value: Any) -> str:
    """One of ``show``'s figures as the other commands print it: money to its significant digits
    (``$0.00000683``), milliseconds to a tenth, other fractions to three decimals, yes/no, lists
    in words; ``--json`` keeps the raw values."""
    money = key.endswith("_usd") or key.startswith("cost_per")
    if value is None:
        return "unknown" if money else "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):  # critical failures: one a failed critical item, maybe thousands
        return joined([str(entry) for entry in value]) if value else "none"
    if isinstance(value, float):
        return format_usd(value) if money else f"{value:.1f}" if key.endswith("_ms") else f"{value:.3f}"
    return str(value)


def show_result(summary: JSONObject) -> Result:
    """``show -o``: the ``--json`` data; as a table, one row of the run's fields (nested totals as
    dotted columns, ``evaluators.exact.pass_rate``); as markdown, the fields, evaluators and errors."""
    fields = {key: value for key, value in summary.items() if key not in ("evaluators", "top_errors")}
    row = {**fields, **{f"evaluators.{name}.{key}": value for name, totals in summary["evaluators"].items()
                        for key, value in totals.items()}}
    lines = [f"### evalsite show: {summary['run_id']}", "",
             markdown_table([{"field": key, "value": value} for key, value in fields.items()], ["field", "value"])]
    if summary["evaluators"]:
        lines += ["", markdown_table([{"evaluator": name, **totals} for name, totals in summary["evaluators"].items()],
                                     EVALUATOR_COLUMNS)]
    if summary["top_errors"]:
        lines += ["", markdown_table([{**e, "items": ", ".join(e["items"])} for e in summary["top_errors"]],
                                     ["count", "source", "message", "items"])]
    return Result(f"evalsite show {summary['run_id']}", summary, [row], markdown="\n".join(lines))
