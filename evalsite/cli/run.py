"""``evalsite run``: parse the options, call :func:`evalsite.api.run_experiment` (the one batch
function, which holds every guard), print its :class:`~evalsite.api.BatchResult`."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

import click

from evalsite.analysis.ci_files import write_summary
from evalsite.analysis.rows import pick_rows
from evalsite.api import BatchResult, CacheMode, Depth, Executor, FailOn, Until, run_experiment
from evalsite.cli.complete import complete_runs
from evalsite.cli.console import CONSOLE, info
from evalsite.cli.export import (
    CSV,
    HTML,
    JSON,
    JUNIT,
    MARKDOWN,
    OutputFile,
    Result,
    output_option,
    project_input_refused,
    write_output,
)
from evalsite.cli.output import print_json, print_table, warn
from evalsite.cli.params import NOT_NEGATIVE
from evalsite.cli.run_report import report_batch, report_failures, resume_line
from evalsite.execute.outcomes import BatchOutcome
from evalsite.experiment.safety import MAX_CONCURRENCY, MAX_REPEAT

if TYPE_CHECKING:  # loading the command (shell completion of --resume) loads no model client, YAML or schema
    from evalsite.experiment.estimate import PlanEstimate


def _duration(context: click.Context, parameter: click.Parameter, value: str | None) -> float | None:
    if value is None:  # click calls this even while completing: nothing loaded then
        return None
    from evalsite.execute.stopping import parse_duration

    try:
        return parse_duration(value)
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


def _show_estimate(result: BatchResult, report: PlanEstimate, as_json: bool, output: OutputFile | None) -> None:
    if as_json:
        print_json(report.to_json())
    else:
        _print_estimate(report)
    write_output(output, Result(f"evalsite run --dry-run {result.manifest}", report.to_json(),
                                [*report.by_arm(), report.total()]))


def _show_merged(result: BatchResult, as_json: bool, output: OutputFile | None) -> None:
    data = [asdict(run) for run in result.merged]
    rows = [{**asdict(run), "shards": len(run.shards)} for run in result.merged]
    if as_json:
        print_json(data)
    else:
        print_table(rows, ["run_id", "arm_id", "batch_id", "shards", "cases", "status"])
    write_output(output, Result(f"evalsite run {result.manifest}", data, rows))
    report_failures(list(result.reasons))


def _show_batch(ctx: click.Context, result: BatchResult, as_json: bool) -> list[dict[str, Any]]:
    rows = result.rows(resume=lambda run: resume_line(ctx, run))
    if as_json:
        print_json(rows)
        return rows
    print_table(rows, ["run_id", "arm", "status", "cases", "errors", "mean_score", "pass_rate", "cost_usd"])
    for diff in result.baselines.values():
        from evalsite.cli.compare import print_report  # only with --baseline: it loads the statistics

        click.echo()
        base = diff.baseline.run_id if diff.baseline is not None else ""  # no baseline: no list to cut
        print_report(diff, all_of_them=f"--json, or evalsite compare {diff.current.run_id} --baseline {base} --all")
    return rows


def _report(ctx: click.Context, result: BatchResult, batch: BatchOutcome) -> None:
    """Everything on stderr after a local ``batch``: baselines not comparable, failures, resume lines."""
    for diff in result.baselines.values():
        if diff.comparability is not None and not diff.comparability.comparable:
            warn(f"{diff.current.header.arm_id}: not comparable with its baseline: {diff.comparability.reason}")
    report_failures(list(result.reasons))
    report_batch(ctx, batch)
    if result.stop_line:
        info(result.stop_line)
    for error in batch.hook_errors:
        click.echo(f"Error: {error}", err=True)


RUN_COLUMNS = {name: name for name in ("run_id", "arm", "status", "cases", "errors", "mean_score", "pass_rate",
                                       "cost_usd", "resume")}


@click.command("run")
@click.argument("manifest", type=click.Path(path_type=Path))
@click.option("--arm", "--scenario", "arm_ids", multiple=True, help="Run only this arm, a.k.a. scenario (repeatable).")
@click.option("--item", "item_ids", multiple=True, metavar="ID", help="Run only this dataset item (repeatable).")
@click.option("--depth", type=click.Choice(get_args(Depth)),
              help="The outermost study level whose post steps run (default: experiment, every level).")
@click.option("--repeat", type=click.IntRange(1, MAX_REPEAT), help="Runs per item (overrides the manifest).")
@click.option("--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), help="Cases in flight at once.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Patch the manifest before validation: a dotted KEY, a YAML VALUE (repeatable).")
@click.option("--until", type=click.Choice(get_args(Until)),
              help="decided: stop once every pair of arms is decided (the manifest's stop_when, or its defaults).")
@click.option("--dry-run", is_flag=True, help="Print calls, tokens and estimated cost per arm; call nothing.")
@click.option("--max-cost", type=NOT_NEGATIVE, envvar="EVALSITE_MAX_COST_USD", show_envvar=True,
              metavar="USD", help="Start no new call once this many dollars are spent (over limits.max_cost_usd).")
@click.option("--timeout", "timeout", metavar="DURATION", callback=_duration,
              help="Stop starting calls this long in (90, 2s, 30m, 1.5h; over limits.timeout_s): status timed_out, resumable.")
@click.option("--resume", metavar="RUN", shell_complete=complete_runs, help="Continue an interrupted or stopped run, skipping its recorded cases.")
@click.option("--cache", "cache_mode", type=click.Choice(get_args(CacheMode)),
              help="Response cache mode (over the manifest's emulation.cache).")
@click.option("--allow-failures", is_flag=True,
              help="Exit 0 when every run finished and every critical row passed, even if other items failed.")
@click.option("--baseline", metavar="RUN|promoted", shell_complete=complete_runs,
              help="When the batch completes, compare each run with RUN, or with its arm's promoted baseline.")
@click.option("--fail-on", type=click.Choice(get_args(FailOn)),
              help="With --baseline: exit 1 when a comparison's gate fails or a baseline is not comparable.")
@click.option("--shard", metavar="K/N", help="Run only shard K of N (a deterministic split by config and item); "
              "merge the N shard runs with `evalsite merge`.")
@click.option("--batch", "batch_name", metavar="NAME", help="Name the batch (its id is derived from the plan and NAME, "
              "so shards started apart agree on it).")
@click.option("--executor", type=click.Choice(get_args(Executor)),
              help="ray: run --shards shards as Ray tasks (RAY_ADDRESS, else a local Ray) and merge them "
                   "(default: local, in this process).")
@click.option("--shards", type=click.IntRange(min=1), help="How many shards --executor ray splits the plan into (default 2).")
@click.option("--build", "build_after", is_flag=True, help="Build the site afterwards.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summaries (or the dry-run estimate) as JSON.")
@click.option("--summary", "summary_file", type=click.Path(path_type=Path), callback=project_input_refused,
              help="Append a markdown summary here (also to $GITHUB_STEP_SUMMARY when set).")
@click.option("--junit", "junit_file", type=click.Path(path_type=Path), callback=project_input_refused,
              help="Write JUnit XML: one test case per arm and item.")
@output_option("run", JSON, CSV, MARKDOWN, JUNIT, HTML)
@click.pass_context
def run_command(ctx: click.Context, manifest: Path, arm_ids: tuple[str, ...], item_ids: tuple[str, ...],
                depth: Depth | None, repeat: int | None, concurrency: int | None, overrides: tuple[str, ...],
                until: Until | None, dry_run: bool, max_cost: float | None, timeout: float | None, resume: str | None,
                cache_mode: CacheMode | None, allow_failures: bool, baseline: str | None, fail_on: FailOn | None,
                shard: str | None, batch_name: str | None, executor: Executor | None, shards: int | None,
                build_after: bool, as_json: bool, summary_file: Path | None, junit_file: Path | None,
                output: OutputFile | None) -> None:
    """Execute an experiment: one run per arm, written under runs/.

    Exits 1, with one line per reason on stderr, when a run did not finish (failed, canceled,
    stopped at the cost ceiling, timed out), a critical row failed, or more than [ci]
    max_error_rate (0.5) of an arm's cases failed to generate; and (unless --allow-failures) when
    any case errored or an evaluator's pass rule failed."""
    junit_out = output.path if output is not None and output.extension == JUNIT else None
    result = run_experiment(
        manifest, arms=arm_ids, item_ids=item_ids, depth=depth, overrides=overrides, repeat=repeat,
        concurrency=concurrency, until=until, max_cost_usd=max_cost, timeout=timeout, resume=resume, cache=cache_mode,
        shard=shard, batch_name=batch_name, executor=executor, shards=shards, dry_run=dry_run,
        allow_failures=allow_failures, baseline=baseline, fail_on=fail_on, junit=junit_file or junit_out,
        build=build_after, progress=False if CONSOLE.quiet else None)
    if result.estimate is not None:
        _show_estimate(result, result.estimate, as_json, output)
    elif result.batch is None:
        _show_merged(result, as_json, output)
    else:
        rows = _show_batch(ctx, result, as_json)
        _report(ctx, result, result.batch)
        write_summary(result.markdown, summary_file)
        write_output(output, Result(f"evalsite run {result.manifest}", rows, pick_rows(rows, RUN_COLUMNS),
                                    result.markdown, result.junit))
    if result.site is not None:
        info(f"site: {result.site.out_dir / 'index.html'}")
    if not result.ok:
        sys.exit(1)
