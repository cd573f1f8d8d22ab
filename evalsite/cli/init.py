"""``evalsite init``."""

from __future__ import annotations

from pathlib import Path

import click

from evalsite.cli.output import print_json
from evalsite.execute.editor_schema import editor_schema_text
from evalsite.experiment.scaffold import init_project


@click.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--install", metavar="REQUIREMENT",
              help="What the CI workflow pip-installs: 'evalsite==X', 'git+URL@tag' or a path "
                   "(default: this evalsite's exact version).")
@click.option("--json", "as_json", is_flag=True, help="Print the written files as JSON.")
def init_command(directory: Path, install: str | None, as_json: bool) -> None:
    """Scaffold a project: example dataset, manifest, targets, report, .gitignore, CI workflow."""
    report = init_project(directory, editor_schema_text(), install)
    if as_json:
        print_json({"root": str(report.root), "written": report.written})
        return
    for path in report.written:
        click.echo(f"wrote {directory / path}")
    click.echo(f"next: cd {directory} && evalsite run experiments/example.yaml --allow-failures && evalsite build")
