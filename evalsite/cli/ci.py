"""``evalsite ci summary``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from evalsite.analysis.ci_files import STEP_SUMMARY_ENV, write_summary
from evalsite.analysis.markdown import ci_summary_markdown
from evalsite.cli.complete import complete_runs
from evalsite.cli.console import info
from evalsite.cli.export import MARKDOWN, OutputFile, Result, output_option, write_output
from evalsite.errors import OutputError, ProjectError
from evalsite.project import ci_plan, find_project


@click.group("ci")
def ci_group() -> None:
    """Helpers for CI jobs: what to run, and the job summary."""


def _run_ids(path: Path) -> list[str]:
    """The ``run_id`` of every row of a JSON list that ``evalsite run --json`` (or ``-o x.json``) wrote."""
    def refused(why: object) -> ProjectError:
        return ProjectError(f"{path}: not the JSON list of runs `evalsite run --json` prints ({why})")

    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: not UTF-8, not JSON, an integer past 4,300 digits
        raise refused(exc) from None
    if not isinstance(rows, list) or not all(isinstance(row, dict) and isinstance(row.get("run_id"), str) for row in rows):
        raise refused("each row must be an object whose run_id is a string")
    return [row["run_id"] for row in rows]


@ci_group.command("experiments")
def experiments_command() -> None:
    """Print the manifests [ci] experiments lists, each with [ci] max_cost_usd (tab-separated)."""
    plan = ci_plan(find_project())
    for manifest in plan.experiments:
        click.echo(f"{manifest}\t{'' if plan.max_cost_usd is None else f'{plan.max_cost_usd:g}'}")


@ci_group.command("summary")
@click.argument("runs", metavar="[RUN]...", nargs=-1, shell_complete=complete_runs)
@click.option("--from", "from_files", metavar="FILE", multiple=True, type=click.Path(path_type=Path),
              help="Also summarise the runs listed in FILE, the JSON `evalsite run --json` printed (repeatable).")
@click.option("--claims/--no-claims", default=True, show_default=True, help="Check the reports' claims too.")
@output_option("ci summary", MARKDOWN)
def summary_command(runs: tuple[str, ...], from_files: tuple[Path, ...], claims: bool, output: OutputFile | None) -> None:
    """Append the markdown summary (runs, each against its baseline, claims) to $GITHUB_STEP_SUMMARY.

    With -o FILE it is written to FILE instead. The summary reports; it never fails a job
    (that is what `compare --fail-on regression` and `check-claims` do)."""
    if output is None and not os.environ.get(STEP_SUMMARY_ENV):
        raise OutputError(f"${STEP_SUMMARY_ENV} is not set (GitHub Actions sets it in every step); "
                          "pass -o FILE to write the summary to a file")
    references = [*runs, *(run_id for path in from_files for run_id in _run_ids(path))]
    markdown = ci_summary_markdown(find_project(), references, claims=claims)
    if output is not None:
        write_output(output, Result("evalsite ci summary", markdown, [], markdown))
    else:
        write_summary(markdown, None)
        info(f"appended the summary to ${STEP_SUMMARY_ENV}")
