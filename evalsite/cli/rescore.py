"""``evalsite rescore``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalsite.cli.complete import complete_runs
from evalsite.cli.output import format_value, joined, print_json, warn
from evalsite.project import find_project

VERDICTS = {True: "passed", False: "failed", None: "no pass rule"}


@click.command("rescore")
@click.argument("run", shell_complete=complete_runs)
@click.option("--manifest", "manifest_path", type=click.Path(path_type=Path),
              help="Score with this manifest's evaluators (default: the manifest the run recorded).")
@click.option("--allow-failures", is_flag=True,
              help="Exit 0 although items fail the pass rule (as run's flag); a failed critical row still exits 1.")
@click.option("--json", "as_json", is_flag=True, help="Print the new run's summary as JSON.")
def rescore_command(run: str, manifest_path: Path | None, allow_failures: bool, as_json: bool) -> None:
    """Re-score a run's outputs as a new run.

    Uses the manifest's current evaluators and the dataset's current expected values; no
    target is called.
    """
    from evalsite.execute.rescore import rescore_run

    outcome = rescore_run(find_project(), run, manifest_path=manifest_path)
    for item_id in outcome.left_out:
        warn(f"item {item_id} is no longer in the dataset; left out")
    summary = outcome.summary
    if as_json:
        print_json({"run_id": outcome.run_id, "derived_from": outcome.derived_from, "status": outcome.status,
                    "left_out": outcome.left_out, **summary.to_json()})
    else:
        click.echo(
            f"{outcome.run_id} (from {outcome.derived_from}): {summary.cases} cases, "
            f"mean score {format_value(summary.mean_score)}, pass rate {format_value(summary.pass_rate)}, "
            f"{'unscored' if summary.unscored else VERDICTS[summary.passed]}"
        )
        if summary.critical_failures:
            click.echo("critical failures: " + joined(summary.critical_failures))
    if not outcome.acceptable(allow_failures):
        sys.exit(1)
