"""``evalsite run``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalsite.analysis.ci_files import write_junit, write_summary
from evalsite.analysis.markdown import run_junit_outcomes, runs_markdown
from evalsite.cli.output import print_json, print_table, warn
from evalsite.cli.run_report import max_error_rate, report_batch, report_failures, resume_line
from evalsite.execute.prepare import prepare_plan
from evalsite.execute.progress import Progress
from evalsite.execute.runner import execute_plan
from evalsite.experiment.estimate import PlanEstimate, estimate_plan
from evalsite.project import find_project
from evalsite.site import build_site


def _check_assignments(context, parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        if "=" not in value or not value.partition("=")[0].strip():
            raise click.BadParameter(f"{value!r} is not KEY=VALUE (e.g. arms.base.params.temperature=0)")
    return values


def _print_estimate(report: PlanEstimate) -> None:
    columns = ["arm", "configs", "cases", "calls", "input_tokens", "output_tokens", "cost_usd"]
    rows = [{**row, "cost_usd": _dollars(row["cost_usd"])} for row in [*report.by_arm(), report.total()]]
    print_table(rows, columns)
    total = report.total()
    click.echo("estimate: tokens = characters / 4; output tokens from params.max_tokens, else the expected answer")
    if total["unpriced_arms"]:
        warn(f"no price for {', '.join(total['unpriced_arms'])}: their cost is unknown and not in the total")
    if total["unknown_output_calls"]:
        warn(f"{total['unknown_output_calls']} calls have no max_tokens and no expected answer: output counted as 0")
    if report.over_max_cost:
        warn(f"the estimate exceeds limits.max_cost_usd = {report.max_cost_usd}; the run stops at that ceiling")


def _dollars(value: float | None) -> str | None:
    return None if value is None else f"{value:.4f}"


@click.command("run")
@click.argument("manifest", type=click.Path(path_type=Path))
@click.option("--arm", "arm_ids", multiple=True, help="Run only this arm (repeatable).")
@click.option("--repeat", type=click.IntRange(min=1), help="Runs per item (overrides the manifest).")
@click.option("--concurrency", type=click.IntRange(min=1), help="Cases in flight at once.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", callback=_check_assignments,
              help="Patch the manifest before validation: a dotted KEY, a YAML VALUE (repeatable).")
@click.option("--dry-run", is_flag=True, help="Print calls, tokens and estimated cost per arm; call nothing.")
@click.option("--max-cost", type=click.FloatRange(min=0), envvar="EVALSITE_MAX_COST_USD", show_envvar=True,
              metavar="USD", help="Start no new call once this many dollars are spent (over limits.max_cost_usd).")
@click.option("--resume", metavar="RUN", help="Continue an interrupted or stopped run, skipping its recorded cases.")
@click.option("--allow-failures", is_flag=True,
              help="Exit 0 when every run finished and every critical row passed, even if other items failed.")
@click.option("--build", "build_after", is_flag=True, help="Build the site afterwards.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summaries (or the dry-run estimate) as JSON.")
@click.option("--summary", "summary_file", type=click.Path(path_type=Path),
              help="Append a markdown summary here (also to $GITHUB_STEP_SUMMARY when set).")
@click.option("--junit", "junit_file", type=click.Path(path_type=Path),
              help="Write JUnit XML: one test case per arm and item.")
@click.pass_context
def run_command(ctx, manifest: Path, arm_ids, repeat, concurrency, overrides, dry_run, max_cost, resume,
                allow_failures, build_after, as_json, summary_file, junit_file) -> None:
    """Execute an experiment: one run per arm, written under runs/.

    Exits 1, with one line per reason on stderr, when a run did not finish, a critical row
    failed, or more than [ci] max_error_rate (0.5) of an arm's cases failed to generate; and
    (unless --allow-failures) when any case errored or an evaluator's pass rule failed."""
    project = find_project()
    error_rate = max_error_rate(project)  # read before anything is spent
    plan = prepare_plan(project, manifest, overrides=overrides, arm_ids=arm_ids, repeat=repeat)
    if dry_run:
        report = estimate_plan(plan)
        if as_json:
            print_json(report.to_json())
        else:
            _print_estimate(report)
        return
    batch = execute_plan(
        project, plan, concurrency=concurrency, max_cost_usd=max_cost, resume=resume, progress=Progress()
    )
    rows = [
        {"run_id": o.run_id, "arm": o.arm_id, "status": o.status, **o.summary, "resume": resume_line(ctx, o)}
        for o in batch.runs
    ]
    if as_json:
        print_json(rows)
    else:
        print_table(rows, ["run_id", "arm", "status", "cases", "errors", "mean_score", "pass_rate", "cost_usd"])
    reasons = batch.failure_reasons(allow_failures, error_rate)
    report_failures(reasons)
    report_batch(ctx, batch)
    write_summary(runs_markdown(plan.manifest.name, batch), summary_file)
    if junit_file:
        write_junit(junit_file, f"evalsite.run.{plan.manifest.name}", run_junit_outcomes(project, batch))
    if build_after:
        report = build_site(project)
        click.echo(f"site: {report.out_dir / 'index.html'}", err=True)
    if reasons:
        sys.exit(1)


COMMANDS = [run_command]
