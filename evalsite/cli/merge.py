"""``evalsite merge``: shard runs of a batch become one run per config."""

from __future__ import annotations

from dataclasses import asdict

import click

from evalsite.cli.output import print_json, print_table
from evalsite.execute.merge import merge_batches
from evalsite.project import find_project


@click.command("merge")
@click.argument("batches", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the merged runs as JSON.")
def merge_command(batches: tuple[str, ...], as_json: bool) -> None:
    """Merge the shard runs of each BATCH (default: every batch with shards) into one run per config."""
    merged = merge_batches(find_project().runs_dir, list(batches))
    rows = [{**asdict(run), "shards": len(run.shards)} for run in merged]
    if as_json:
        print_json([asdict(run) for run in merged])
    else:
        print_table(rows, ["run_id", "arm_id", "batch_id", "shards", "cases", "status"])
