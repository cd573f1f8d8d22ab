"""``evalsite compact``: finished runs as zstd Parquet."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from evalsite.cli.complete import complete_runs
from evalsite.cli.output import print_json, print_table
from evalsite.project import cwd_relative, find_project


@click.command("compact")
@click.argument("runs", metavar="[RUN]...", nargs=-1, shell_complete=complete_runs)
@click.option("--to", "destination", metavar="DIR|URI",
              help="Write partitions DIR/dataset=<id>/run=<run_id>/ (Parquet, run.json, end.json) instead of "
                   "cases.parquet beside each run's JSONL; a URI (s3://bucket/prefix) uploads them.")
@click.option("--json", "as_json", is_flag=True, help="Print what was compacted as JSON.")
def compact_command(runs: tuple[str, ...], destination: str | None, as_json: bool) -> None:
    """Store finished runs as zstd Parquet next to their JSONL (or under --to DIR)."""
    from evalsite.analysis.parquet import compact_runs

    done = compact_runs(find_project().local_runs_dir, list(runs), destination)
    rows = [{**asdict(c), "parquet": c.parquet if "://" in c.parquet else str(cwd_relative(Path(c.parquet))), "ratio": round(c.parquet_bytes / max(1, c.jsonl_bytes), 3)}
            for c in done]
    if as_json:
        print_json(rows)
    elif rows:
        print_table(rows, ["run_id", "cases", "jsonl_bytes", "parquet_bytes", "ratio", "parquet"])
    else:
        click.echo("nothing to compact: every finished run has a current cases.parquet", err=True)
