"""``evalsite import``."""

from __future__ import annotations

from pathlib import Path

import click

from evalsite.cli.output import print_json, print_table, warn
from evalsite.execute.importers import IMPORTERS, ImportOptions, import_files
from evalsite.execute.importers.evalzip import DEFAULT_MAX_MEMBER_BYTES
from evalsite.project import find_project
from evalsite.runlog.hashing import file_sha256


def _known_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """An unknown FORMAT is a usage error (exit 2); the installed plugins' formats count."""
    if IMPORTERS.find(value) is None:
        raise click.BadParameter(IMPORTERS.unknown(value))
    return value


def _regular_file(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """A scorer file is hashed whole: a device would be read forever (/dev/zero), a pipe block."""
    if value is not None and not value.is_file():
        raise click.BadParameter(f"{value} is not a regular file")
    return value


def _field(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An empty --arm-from (an unset variable in a script) would leave the arms to the default silently."""
    if value is not None and not value.strip():
        raise click.BadParameter("names no field; give the dotted source field that names the arm")
    return value


@click.command("import")
@click.argument("format_name", metavar="FORMAT", callback=_known_format)
@click.argument("paths", metavar="PATH...", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--dataset", "dataset_name", metavar="NAME", help="Dataset name in the dataset id (default: imported).")
@click.option("--arm-from", "arm_field", metavar="FIELD", callback=_field, help="Dotted source field that names the arm.")
@click.option("--scorer-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), callback=_regular_file,
              help="The code that produced the scores; its hash goes into every evaluator version.")
@click.option("--again", is_flag=True, help="Import a file even if it was imported before.")
@click.option("--max-member-mb", type=click.IntRange(min=1), default=DEFAULT_MAX_MEMBER_BYTES >> 20, show_default=True,
              help="The most one compressed member (of an Inspect .eval log) may decompress to, in MiB.")
@click.option("--json", "as_json", is_flag=True, help="Print the imported runs as JSON.")
def import_command(format_name: str, paths: tuple[Path, ...], dataset_name: str | None, arm_field: str | None,
                   scorer_file: Path | None, again: bool, max_member_mb: int, as_json: bool) -> None:
    """Turn another tool's results (FORMAT: promptfoo, inspect, lm-eval, jsonl, csv) into runs."""
    project = find_project()
    options = ImportOptions(
        dataset_name=dataset_name,
        arm_from=arm_field,
        scorer_file=project.relative(scorer_file) if scorer_file else None,
        scorer_sha256=file_sha256(scorer_file) if scorer_file else None,
        again=again,
        max_member_bytes=max_member_mb << 20,
    )
    report = import_files(project, format_name, paths, options)
    for message in report.warnings:
        warn(message)
    rows = [
        {"run_id": r.run_id, "arm": r.arm_id, "experiment": r.experiment, "tool": r.tool, "source": r.source,
         "status": r.status, "dataset_id": r.dataset_id, **r.summary.to_json()}
        for r in report.runs
    ]
    if as_json:
        print_json(rows)
    else:
        print_table(rows, ["run_id", "arm", "status", "cases", "errors", "mean_score", "pass_rate", "dataset_id"])
