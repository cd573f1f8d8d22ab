"""``evalsite run``."""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import click

from evalsite.analysis.ci_files import write_junit, write_summary
from evalsite.analysis.markdown import compare_markdown, run_junit_outcomes, runs_markdown
from evalsite.cli.console import CONSOLE, info
from evalsite.cli.export import CSV, HTML, JSON, JUNIT, MARKDOWN, Result, output_option, pick_rows, write_output
from evalsite.cli.output import print_json, print_table, warn
from evalsite.cli.run_report import baseline_reports, regression_failed, report_batch, report_failures, resume_line
from evalsite.errors import OutputError, ProjectError
from evalsite.execute.prepare import prepare_plan
from evalsite.execute.progress import Progress
from evalsite.execute.runner import execute_plan
from evalsite.execute.stopping import parse_duration
from evalsite.experiment.estimate import PlanEstimate, estimate_plan
from evalsite.experiment.safety import MAX_CONCURRENCY, MAX_REPEAT
from evalsite.experiment.shards import parse_shard, plan_batch_id
from evalsite.project import RUNS_ENV, find_project, max_error_rate
from evalsite.runlog.records import RunStatus
from evalsite.runlog.store import read_footer


def _check_assignments(context, parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        if "=" not in value or not value.partition("=")[0].strip():
            raise click.BadParameter(f"{value!r} is not KEY=VALUE (e.g. arms.base.params.temperature=0)")
    return values


def _finite(context, parameter, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value!r} is not a finite number of dollars")
    return value


def _duration(context, parameter, value: str | None) -> float | None:
    try:
        return None if value is None else parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _print_estimate(report: PlanEstimate) -> None:
    columns = ["arm", "configs", "cases", "calls", "input_tokens", "output_tokens", "cost_usd"]
    print_table([*report.by_arm(), report.total()], columns)  # cost_usd to significant digits (format_usd)
    total = report.total()
    click.echo("estimate: tokens = characters / 4; output tokens from params.max_tokens, else the expected answer")
    if total["unpriced_arms"]:
        warn(f"no price for {', '.join(total['unpriced_arms'])}: their cost is unknown and not in the total")
    if total["unknown_output_calls"]:
        warn(f"{total['unknown_output_calls']} calls have no max_tokens and no expected answer: output counted as 0")
    if report.over_max_cost:
        warn(f"the estimate exceeds limits.max_cost_usd = {report.max_cost_usd}; the run stops at that ceiling")


def _run_on_ray(project, manifest: Path, plan, shards: int, as_json: bool, output, **options) -> None:
    from dataclasses import asdict

    from evalsite.execute.ray_executor import run_on_ray, shard_requests

    requests, batch_id = shard_requests(project.root, manifest.resolve(), plan, shards, **options)
    merged = run_on_ray(requests, project.runs_dir, batch_id)
    rows = [{**asdict(run), "shards": len(run.shards)} for run in merged]
    if as_json:
        print_json([asdict(run) for run in merged])
    else:
        print_table(rows, ["run_id", "arm_id", "batch_id", "shards", "cases", "status"])
    write_output(output, Result(f"evalsite run {plan.manifest.name}", [asdict(run) for run in merged], rows))
    if any(run.status != "completed" for run in merged):
        sys.exit(1)


def _report_stop(project, batch) -> None:
    """One line when a stop_when batch stopped: why, after how many items, and the calls it saved."""
    footers = [read_footer(project.runs_dir / run.run_id) for run in batch.runs]
    records = [f.stop_when for f in footers if f is not None and f.stop_when and f.status == RunStatus.COMPLETED]
    if records:
        first = records[0]
        detail = f" ({first['budget']})" if first.get("budget") else ""
        info(f"stop_when: {first['reason']}{detail} at look {first['look']}, after {first['items_used']:,} of "
             f"{first['items_planned']:,} items; {sum(r['calls_saved'] for r in records):,} calls saved")


RUN_COLUMNS = {name: name for name in ("run_id", "arm", "status", "cases", "errors", "mean_score", "pass_rate",
                                       "cost_usd", "resume")}


@click.command("run")
@click.argument("manifest", type=click.Path(path_type=Path))
@click.option("--arm", "--scenario", "arm_ids", multiple=True, help="Run only this arm, a.k.a. scenario (repeatable).")
@click.option("--item", "item_ids", multiple=True, metavar="ID", help="Run only this dataset item (repeatable).")
@click.option("--depth", type=click.Choice(["experiment", "arm", "item", "case"]),
              help="The outermost study level whose post steps run (default: experiment, every level).")
@click.option("--repeat", type=click.IntRange(1, MAX_REPEAT), help="Runs per item (overrides the manifest).")
@click.option("--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), help="Cases in flight at once.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", callback=_check_assignments,
              help="Patch the manifest before validation: a dotted KEY, a YAML VALUE (repeatable).")
@click.option("--until", type=click.Choice(["decided"]),
              help="decided: stop once every pair of arms is decided (the manifest's stop_when, or its defaults).")
@click.option("--dry-run", is_flag=True, help="Print calls, tokens and estimated cost per arm; call nothing.")
@click.option("--max-cost", type=click.FloatRange(min=0), callback=_finite, envvar="EVALSITE_MAX_COST_USD", show_envvar=True,
              metavar="USD", help="Start no new call once this many dollars are spent (over limits.max_cost_usd).")
@click.option("--timeout", "timeout", metavar="DURATION", callback=_duration,
              help="Stop starting calls this long in (90, 2s, 30m, 1.5h; over limits.timeout_s): status timed_out, resumable.")
@click.option("--resume", metavar="RUN", help="Continue an interrupted or stopped run, skipping its recorded cases.")
@click.option("--cache", "cache_mode", type=click.Choice(["off", "record", "replay", "auto"]),
              help="Response cache mode (over the manifest's emulation.cache).")
@click.option("--allow-failures", is_flag=True,
              help="Exit 0 when every run finished and every critical row passed, even if other items failed.")
@click.option("--baseline", metavar="RUN|promoted",
              help="When the batch completes, compare each run with RUN, or with its arm's promoted baseline.")
@click.option("--fail-on", type=click.Choice(["regression"]),
              help="With --baseline: exit 1 when a comparison's gate fails or a baseline is not comparable.")
@click.option("--shard", metavar="K/N", help="Run only shard K of N (a deterministic split by config and item); "
              "merge the N shard runs with `evalsite merge`.")
@click.option("--batch", "batch_name", metavar="NAME", help="Name the batch (its id is derived from the plan and NAME, "
              "so shards started apart agree on it).")
@click.option("--executor", type=click.Choice(["local", "ray"]),
              help="ray: run --shards shards as Ray tasks (RAY_ADDRESS, else a local Ray) and merge them "
                   "(default: local, in this process).")
@click.option("--shards", type=click.IntRange(min=1), help="How many shards --executor ray splits the plan into (default 2).")
@click.option("--build", "build_after", is_flag=True, help="Build the site afterwards.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summaries (or the dry-run estimate) as JSON.")
@click.option("--summary", "summary_file", type=click.Path(path_type=Path),
              help="Append a markdown summary here (also to $GITHUB_STEP_SUMMARY when set).")
@click.option("--junit", "junit_file", type=click.Path(path_type=Path),
              help="Write JUnit XML: one test case per arm and item.")
@output_option("run", JSON, CSV, MARKDOWN, JUNIT, HTML)
@click.pass_context
def run_command(ctx, manifest: Path, arm_ids, item_ids, depth, repeat, concurrency, overrides, until, dry_run, max_cost, timeout,
                resume,
                cache_mode, allow_failures, baseline, fail_on, shard, batch_name, executor, shards, build_after,
                as_json, summary_file, junit_file, output) -> None:
    """Execute an experiment: one run per arm, written under runs/.

    Exits 1, with one line per reason on stderr, when a run did not finish (failed, canceled,
    stopped at the cost ceiling, timed out), a critical row failed, or more than [ci]
    max_error_rate (0.5) of an arm's cases failed to generate; and (unless --allow-failures) when
    any case errored or an evaluator's pass rule failed."""
    project = find_project()
    if project.runs_dir != project.local_runs_dir:
        raise ProjectError(f"the runs location is {project.runs_location}, which only `evalsite compact --to` writes; "
                           f"unset {RUNS_ENV} / [store] runs to run here, then compact --to it")
    error_rate = max_error_rate(project)  # read before anything is spent
    if until == "decided":  # the shortcut is an override: a manifest's own stop_when settings stay
        overrides = ("stop_when.decided=true", *overrides)
    plan = prepare_plan(project, manifest, overrides=overrides, arm_ids=arm_ids, repeat=repeat, item_ids=item_ids)
    executor = executor or plan.manifest.schedule.get("runner", "local")  # --executor over schedule.runner
    if output is not None and output.extension == JUNIT and (dry_run or executor == "ray"):
        raise OutputError(f"{output.path}: run {'--dry-run' if dry_run else '--executor ray'} has no test cases "
                          "to write as JUnit XML; use .json, .csv, .md or .html")
    for message in plan.warnings:
        warn(message)
    if shard is not None:
        plan = replace(plan, shard=parse_shard(shard))
    if depth is not None:
        plan = replace(plan, depth=depth)
    batch_id = plan_batch_id(plan, batch_name) if shard is not None or batch_name else None
    if dry_run:
        report = estimate_plan(plan)
        if as_json:
            print_json(report.to_json())
        else:
            _print_estimate(report)
        write_output(output, Result(f"evalsite run --dry-run {plan.manifest.name}", report.to_json(),
                                    [*report.by_arm(), report.total()]))
        return
    if executor == "ray":
        _run_on_ray(project, manifest, plan, shards or 2, as_json, output, overrides=overrides, arm_ids=arm_ids, repeat=repeat,
                    item_ids=item_ids, depth=plan.depth, concurrency=concurrency, max_cost_usd=max_cost, batch_name=batch_name)
        return
    batch = execute_plan(
        project, plan, concurrency=concurrency, max_cost_usd=max_cost, resume=resume, progress=Progress(enabled=False if CONSOLE.quiet else None),
        timeout_s=timeout, cache=cache_mode, batch_id=batch_id,
    )
    diffs = baseline_reports(project, batch, baseline)
    rows = [
        {"run_id": o.run_id, "arm": o.arm_id, "status": o.status, **o.summary.to_json(), "resume": resume_line(ctx, o),
         **({"baseline_diff": diffs[o.run_id].to_json()} if o.run_id in diffs else {})}
        for o in batch.runs
    ]
    if as_json:
        print_json(rows)
    else:
        print_table(rows, ["run_id", "arm", "status", "cases", "errors", "mean_score", "pass_rate", "cost_usd"])
        for diff in diffs.values():
            from evalsite.cli.compare import print_report  # only with --baseline: it loads the statistics

            click.echo()
            print_report(diff)
    for diff in diffs.values():
        if diff.comparability is not None and not diff.comparability.comparable:
            warn(f"{diff.current.header.arm_id}: not comparable with its baseline: {diff.comparability.reason}")
    reasons = batch.failure_reasons(allow_failures, error_rate)
    report_failures(reasons)
    report_batch(ctx, batch)
    _report_stop(project, batch)
    for error in batch.hook_errors:
        click.echo(f"Error: {error}", err=True)
    markdown = "\n\n".join([runs_markdown(plan.manifest.name, batch), *map(compare_markdown, diffs.values())])
    write_summary(markdown, summary_file)
    suite = f"evalsite.run.{plan.manifest.name}"
    if junit_file:
        write_junit(junit_file, suite, run_junit_outcomes(project, batch))
    junit = (suite, run_junit_outcomes(project, batch)) if output and output.extension == JUNIT else None
    write_output(output, Result(f"evalsite run {plan.manifest.name}", rows, pick_rows(rows, RUN_COLUMNS), markdown, junit))
    if build_after:
        from evalsite.site import build_site  # only here: a run without --build needs no Jinja/DuckDB

        site = build_site(project)
        info(f"site: {site.out_dir / 'index.html'}")
    if reasons or (fail_on == "regression" and regression_failed(diffs)):
        sys.exit(1)
