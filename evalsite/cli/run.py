"""``evalsite run``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalsite.cli.output import print_json, print_table
from evalsite.cli.run_report import report_batch, resume_line
from evalsite.manifest import load_manifest
from evalsite.plan import build_plan
from evalsite.progress import Progress
from evalsite.project import find_project
from evalsite.runner import execute_plan
from evalsite.site import build_site


@click.command("run")
@click.argument("manifest", type=click.Path(path_type=Path))
@click.option("--arm", "arm_ids", multiple=True, help="Run only this arm (repeatable).")
@click.option("--repeat", type=click.IntRange(min=1), help="Runs per item (overrides the manifest).")
@click.option("--concurrency", type=click.IntRange(min=1), help="Cases in flight at once.")
@click.option("--max-cost", type=click.FloatRange(min=0), envvar="EVALSITE_MAX_COST_USD", show_envvar=True,
              metavar="USD", help="Start no new call once this many dollars are spent (over limits.max_cost_usd).")
@click.option("--resume", metavar="RUN", help="Continue an interrupted or stopped run, skipping its recorded cases.")
@click.option("--build", "build_after", is_flag=True, help="Build the site afterwards.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summaries as JSON.")
@click.pass_context
def run_command(ctx, manifest: Path, arm_ids, repeat, concurrency, max_cost, resume, build_after, as_json) -> None:
    """Execute an experiment: one run per arm, written under runs/."""
    project = find_project()
    plan = build_plan(project, load_manifest(manifest), arm_ids=arm_ids, repeat=repeat)
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
    report_batch(ctx, batch)
    if build_after:
        report = build_site(project)
        click.echo(f"site: {report.out_dir / 'index.html'}", err=True)
    if not batch.ok:
        sys.exit(1)


COMMANDS = [run_command]
