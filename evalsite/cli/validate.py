"""``evalsite validate``."""

from __future__ import annotations

import sys

import click

from evalsite.cli.output import print_json
from evalsite.project import find_project
from evalsite.validate import inventory, validate_project


@click.command("validate")
@click.option("--strict", is_flag=True, help="Fail on warnings too (an unset key variable a run needs).")
@click.option("--json", "as_json", is_flag=True, help="Print the problems as JSON.")
def validate_command(strict: bool, as_json: bool) -> None:
    """Check every manifest, dataset, lock and run; exit 1 listing every problem (and, with
    --strict, every warning)."""
    project = find_project()
    warnings: list[str] = []
    problems = validate_project(project, warnings=warnings)  # one pass over each manifest
    failing = problems + warnings if strict else problems
    checked = inventory(project)
    if as_json:
        print_json({"ok": not failing, "checked": checked, "problems": problems, "warnings": warnings})
    else:
        for problem in problems:
            click.echo(problem)
        for warning in warnings:
            click.echo(f"warning: {warning}")
        counts = ", ".join(_count(count, what) for what, count in checked.items())
        found = ", ".join(_count(len(listed), what) for what, listed in (("problems", problems), ("warnings", warnings))
                          if listed)
        click.echo(f"{found} ({counts} checked)" if found else f"ok: {counts} checked")
    if failing:
        sys.exit(1)


def _count(number: int, plural: str) -> str:
    return f"{number} {plural.removesuffix('s') if number == 1 else plural}"
