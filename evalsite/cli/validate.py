"""``evalsite validate``."""

from __future__ import annotations

import sys

import click

from evalsite.cli.output import print_json
from evalsite.project import find_project
from evalsite.validate import inventory, validate_project


@click.command("validate")
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
def validate_command(as_json: bool) -> None:
    """Check every manifest, dataset, lock and run; exit 1 listing every problem."""
    project = find_project()
    problems = validate_project(project)
    checked = inventory(project)
    if as_json:
        print_json({"ok": not problems, "checked": checked, "problems": problems})
    else:
        for problem in problems:
            click.echo(problem)
        counts = ", ".join(_count(count, what) for what, count in checked.items())
        click.echo(f"{_count(len(problems), 'problems')} ({counts} checked)" if problems else f"ok: {counts} checked")
    if problems:
        sys.exit(1)


def _count(number: int, plural: str) -> str:
    return f"{number} {plural.removesuffix('s') if number == 1 else plural}"
