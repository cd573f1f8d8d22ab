"""``evalsite dataset freeze|verify|show``."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import click

from evalsite.cli.output import print_json
from evalsite.experiment.datasets import describe_dataset, load_dataset
from evalsite.experiment.locks import REFERENCE_TIERS, freeze_dataset, lock_state, verify_dataset

DATASET_PATH = click.Path(path_type=Path)


@click.group("dataset")
def dataset_group() -> None:
    """Freeze, verify and describe dataset files."""


@dataset_group.command("freeze")
@click.argument("path", type=DATASET_PATH)
@click.option("--reference-tier", type=click.Choice(REFERENCE_TIERS),
              help="Declare where the expected values come from (recorded with runs and promotions).")
@click.option("--json", "as_json", is_flag=True, help="Print the lock's summary as JSON.")
def freeze_command(path: Path, reference_tier: str | None, as_json: bool) -> None:
    """Write PATH.lock.json: the dataset_id and every item's hashes (and the reference tier)."""
    lock, dataset = freeze_dataset(path, reference_tier)
    if as_json:
        print_json({"lock": str(lock), "dataset_id": dataset.dataset_id, "items": len(dataset.items)})
    else:
        click.echo(f"{lock}: {dataset.dataset_id} ({len(dataset.items)} items)")


@dataset_group.command("verify")
@click.argument("path", type=DATASET_PATH)
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
def verify_command(path: Path, as_json: bool) -> None:
    """Check PATH against its lock; exit 1 naming every item that changed."""
    check = verify_dataset(path)
    if as_json:
        print_json({"ok": check.ok, "lock": str(check.lock_path), "locked_id": check.locked_id,
                    "current_id": check.current_id, "differences": check.differences})
    elif check.ok:
        click.echo(f"{path}: matches {check.lock_path} ({check.locked_id})")
    else:
        for difference in check.differences:
            click.echo(f"{path}: {difference}")
        count = len(check.differences)
        click.echo(f"{path}: {count} difference{'s' * (count != 1)} from {check.lock_path} "
                   f"(locked {check.locked_id}, now {check.current_id})")
    if not check.ok:
        sys.exit(1)


@dataset_group.command("show")
@click.argument("path", type=DATASET_PATH)
@click.option("--json", "as_json", is_flag=True, help="Print the description as JSON.")
def show_command(path: Path, as_json: bool) -> None:
    """Describe PATH: its id, item count, fields, row shapes, splits and lock."""
    summary = {**asdict(describe_dataset(load_dataset(path))), "lock": lock_state(path)}
    if as_json:
        print_json(summary)
        return
    width = max(map(len, summary))
    for key, value in summary.items():
        if isinstance(value, dict):
            value = ", ".join(f"{name} ({count})" for name, count in value.items()) or "—"
        click.echo(f"{key.ljust(width)}  {value}")
