"""The ``evalsite`` command line: click commands only, one module per area, no logic here."""

from __future__ import annotations

import click

from evalsite import __version__
from evalsite.cli import build, query, run, runs
from evalsite.cli import importer


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalsite")
def main() -> None:
    """Run experiments into append-only run logs, test them honestly, publish a static site."""


for command in (*run.COMMANDS, *runs.COMMANDS, *query.COMMANDS, *build.COMMANDS):
    main.add_command(command)
for command in importer.COMMANDS:
    main.add_command(command)
