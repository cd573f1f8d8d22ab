"""``evalsite schema``: the manifest JSON Schema, for editors and other tools (evalsite.execute.editor_schema)."""

from __future__ import annotations

from pathlib import Path

import click

from evalsite.analysis.ci_files import write_atomic
from evalsite.execute.editor_schema import editor_schema_text


@click.command("schema")
@click.option("--write", "destination", type=click.Path(dir_okay=False, path_type=Path),
              help="Save it to this file instead of printing it.")
def schema_command(destination: Path | None) -> None:
    """Print the manifest JSON Schema (Draft 2020-12), known evaluator types and target kinds listed."""
    text = editor_schema_text()
    if destination is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    write_atomic(destination, text, make_folder=True)
    click.echo(f"wrote {destination}", err=True)
