"""``evalsite build``."""

from __future__ import annotations

from pathlib import Path

import click

from evalsite.cli.output import warn
from evalsite.project import find_project
from evalsite.site import build_site


@click.command("build")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), help="Output folder (default: site/).")
def build_command(out_dir: Path | None) -> None:
    """Render the static site."""
    report = build_site(find_project(), out_dir)
    for reason in report.skipped_runs:
        warn(f"skipped run {reason}")
    click.echo(f"built {report.pages} pages; open {report.out_dir / 'index.html'}")


COMMANDS = [build_command]
