"""What ``evalsite run`` tells the user after a batch: warnings by item and the exact resume lines."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import click

from evalsite.cli.output import LISTED, warn
from evalsite.errors import listed
from evalsite.execute.outcomes import BatchOutcome, RunOutcome
from evalsite.runlog.money import format_usd
from evalsite.runlog.records import RunStatus


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
    """The command that finishes ``run``; a timed-out run's line drops ``--timeout`` (that
    deadline was this invocation's, and would stop the resume again)."""
    if run.status == RunStatus.COMPLETED:
        return None
    return command_line(ctx, {"resume", *_spent_limits(run.status)}, ["--resume", run.run_id])


def _spent_limits(status: str | None) -> set[str]:
    return {"timeout"} if status == RunStatus.TIMED_OUT else set()


def report_batch(ctx: click.Context, batch: BatchOutcome) -> None:
    """Warnings on stderr; when the batch stopped early, the commands that finish it."""
    for run in batch.runs:
        report_run(run, ceiling_set=batch.max_cost_usd is not None)
    if batch.stop_reason == RunStatus.STOPPED_COST_CEILING and batch.unknown_cost:
        warn(f"stopped at the cost ceiling: {batch.unknown_cost} ({format_usd(batch.spent_usd)} counted this time, "
             f"ceiling {format_usd(batch.max_cost_usd)})")
    elif batch.stop_reason == RunStatus.STOPPED_COST_CEILING:
        warn(f"stopped at the cost ceiling: {format_usd(batch.spent_usd)} spent this time, "
             f"ceiling {format_usd(batch.max_cost_usd)}")
    elif batch.stop_reason == RunStatus.CANCELED:
        warn("canceled: every case that finished is on disk")
    elif batch.stop_reason == RunStatus.TIMED_OUT:
        warn("timed out: every case that finished is on disk")
    pending = [line for line in (resume_line(ctx, run) for run in batch.runs) if line]
    pending = pending[:1] if batch.together else pending  # one line resumes a stop_when batch's every run
    if batch.not_started:
        arms = [word for arm in batch.not_started for word in ("--arm", arm)]
        pending.append(command_line(ctx, {"resume", "arm_ids", *_spent_limits(batch.stop_reason)}, arms))
    if pending:
        click.echo("to continue, run:", err=True)
        for line in pending:
            click.echo(f"  {line}", err=True)


def report_run(run: RunOutcome, *, ceiling_set: bool) -> None:
    totals = run.summary
    if totals.truncated_items:
        items = listing(totals.truncated_items)
        warn(f"{run.arm_id}: outputs stopped at max_tokens (finish_reason length) on items {items}")
    if totals.critical_failures:
        warn(f"{run.arm_id}: critical rows failed: {listing(totals.critical_failures)}")
    if totals.served_model_changed:
        warn(f"{run.arm_id}: the served model changed mid-run: {', '.join(totals.served_models)}")
    if totals.errors:
        warn(f"{run.arm_id}: {totals.errors} case(s) failed to generate; see `evalsite show {run.run_id}`")
    if ceiling_set and totals.unknown_cost_cases:
        warn(
            f"{run.arm_id}: cost unknown for {totals.unknown_cost_cases} case(s) (no billed cost, no price): "
            "the cost ceiling counted only known costs"
        )


def listing(item_ids: Sequence[str]) -> str:
    return listed(item_ids, LISTED)


def report_failures(reasons: list[str]) -> None:
    """Why ``run`` exits 1, one line per reason on stderr (never an empty stderr with exit 1)."""
    for reason in reasons:
        click.echo(f"failed: {reason}", err=True)
