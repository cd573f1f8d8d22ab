"""What ``evalsite run`` tells the user after a batch: warnings by item and the exact resume lines."""

from __future__ import annotations

import shlex

import click

from evalsite.cli.output import warn
from evalsite.errors import ProjectError
from evalsite.execute.outcomes import MAX_ERROR_RATE, BatchOutcome, RunOutcome
from evalsite.project import Project
from evalsite.runlog.records import RunStatus

LISTED_ITEMS = 20


def command_line(ctx: click.Context, drop: set[str], extra: list[str]) -> str:
    """This invocation's arguments as a shell line, without ``drop``-named parameters, plus ``extra``."""
    words = ["evalsite", ctx.info_name or "run"]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if param.name in drop or value is None or value is False or value == ():
            continue
        if isinstance(param, click.Argument):
            words.append(str(value))
            continue
        option = max(param.opts, key=len)
        if getattr(param, "is_flag", False):
            words.append(option)
        else:
            for one in value if param.multiple else [value]:
                words += [option, str(one)]
    return " ".join(shlex.quote(word) for word in [*words, *extra])


def resume_line(ctx: click.Context, run: RunOutcome) -> str | None:
    if run.status == RunStatus.COMPLETED:
        return None
    return command_line(ctx, {"resume"}, ["--resume", run.run_id])


def report_batch(ctx: click.Context, batch: BatchOutcome) -> None:
    """Warnings on stderr; when the batch stopped early, the commands that finish it."""
    for run in batch.runs:
        report_run(run, ceiling_set=batch.max_cost_usd is not None)
    if batch.stop_reason == RunStatus.STOPPED_COST_CEILING:
        warn(f"stopped at the cost ceiling: ${batch.spent_usd:.4f} spent this time, ceiling ${batch.max_cost_usd:g}")
    elif batch.stop_reason == RunStatus.CANCELED:
        warn("canceled: every case that finished is on disk")
    pending = [line for line in (resume_line(ctx, run) for run in batch.runs) if line]
    if batch.not_started:
        arms = [word for arm in batch.not_started for word in ("--arm", arm)]
        pending.append(command_line(ctx, {"resume", "arm_ids"}, arms))
    if pending:
        click.echo("to continue, run:", err=True)
        for line in pending:
            click.echo(f"  {line}", err=True)


def report_run(run: RunOutcome, *, ceiling_set: bool) -> None:
    totals = run.summary
    if totals["truncated_items"]:
        items = listing(totals["truncated_items"])
        warn(f"{run.arm_id}: outputs stopped at max_tokens (finish_reason length) on items {items}")
    if totals["critical_failures"]:
        warn(f"{run.arm_id}: critical rows failed: {listing(totals['critical_failures'])}")
    if totals["errors"]:
        warn(f"{run.arm_id}: {totals['errors']} case(s) failed to generate; see `evalsite show {run.run_id}`")
    if ceiling_set and totals["unknown_cost_cases"]:
        warn(
            f"{run.arm_id}: cost unknown for {totals['unknown_cost_cases']} case(s) (no billed cost, no price): "
            "the cost ceiling counted only known costs"
        )


def listing(item_ids: list[str]) -> str:
    shown = ", ".join(item_ids[:LISTED_ITEMS])
    return shown + (f" and {len(item_ids) - LISTED_ITEMS} more" if len(item_ids) > LISTED_ITEMS else "")


def max_error_rate(project: Project) -> float:
    """``[ci] max_error_rate`` of evalsite.toml: the share of an arm's cases that may fail to
    generate under --allow-failures (default 0.5)."""
    value = (project.settings.get("ci") or {}).get("max_error_rate", MAX_ERROR_RATE)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        raise ProjectError(f"evalsite.toml: [ci] max_error_rate must be a number from 0 to below 1, not {value!r}")
    return float(value)


def report_failures(reasons: list[str]) -> None:
    """Why ``run`` exits 1, one line per reason on stderr (never an empty stderr with exit 1)."""
    for reason in reasons:
        click.echo(f"failed: {reason}", err=True)
