"""``evalsite cache stats|prune``: inspect and trim the response cache."""

from __future__ import annotations

import click

from evalsite.cli.output import print_json, print_table
from evalsite.cli.params import NOT_NEGATIVE
from evalsite.execute.cache import ResponseCache, cache_dir
from evalsite.project import find_project


@click.group("cache")
def cache_group() -> None:
    """Inspect and trim the response cache (.evalsite/cache/)."""


@cache_group.command("stats")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def stats_command(as_json: bool) -> None:
    """Entries, bytes and entries per target in the response cache."""
    stats = ResponseCache(cache_dir(find_project().root)).stats()
    if as_json:
        print_json(stats)
        return
    click.echo(f"{stats['path']}: {stats['entries']} responses, {stats['bytes']} bytes "
               f"(recorded {stats['oldest'] or '-'} to {stats['newest'] or '-'})")
    print_table([{"target": t, "responses": n} for t, n in stats["by_target"].items()], ["target", "responses"])


@cache_group.command("prune")
@click.option("--older-than", "older_than", type=NOT_NEGATIVE, metavar="DAYS",
              help="Delete only responses recorded more than DAYS days ago.")
@click.option("--all", "everything", is_flag=True, help="Delete every stored response.")
def prune_command(older_than: float | None, everything: bool) -> None:
    """Delete stored responses: those older than --older-than DAYS, or --all."""
    if (older_than is None) == (not everything):
        raise click.UsageError("give exactly one of --older-than DAYS or --all")
    removed = ResponseCache(cache_dir(find_project().root)).prune(None if everything else older_than)
    click.echo(f"removed {removed} cached response{'s' if removed != 1 else ''}")

