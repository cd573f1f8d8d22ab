"""The ``evalsite`` command line: click commands only, one module per area, no logic here."""

from __future__ import annotations

import click

from evalsite import __version__
<<<<<<< HEAD
from evalsite.cli import build, claims, init, query, run, runs
=======
from evalsite.cli import build, compare, query, run, runs
>>>>>>> main


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalsite")
def main() -> None:
    """Run experiments into append-only run logs, test them honestly, publish a static site."""


<<<<<<< HEAD
for command in (*run.COMMANDS, *runs.COMMANDS, *query.COMMANDS, *build.COMMANDS, *claims.COMMANDS, *init.COMMANDS):
=======
for command in (*run.COMMANDS, *runs.COMMANDS, *query.COMMANDS, *build.COMMANDS, *compare.COMMANDS):
>>>>>>> main
    main.add_command(command)
