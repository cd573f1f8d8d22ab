"""Helpers for the analysis tests on the example project's runs (the ``example_with_runs`` fixture):
they read its run logs by hand, the independent side of every check.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml
from example_support import forget_project_modules

ARMS = ("careful", "left_to_right", "sampler")


def run_id(project: Path, arm: str) -> str:
    """The newest run of an arm: by its recorded start (milliseconds), as the analysis orders runs;
    run ids sort by the second only, and runs made in one test often share it."""
    runs = [p for p in (project / "runs").iterdir() if p.is_dir() and f"-{arm}-" in p.name]
    started = {p.name: json.loads((p / "run.json").read_text())["started_at"] for p in runs}
    return max(started, key=lambda name: (started[name], name))


def cases(project: Path, run: str) -> list[dict]:
    return [json.loads(line) for line in (project / "runs" / run / "cases.jsonl").read_text().splitlines()]


def item_repeat_matrix(project: Path, run: str, field: str = "score") -> tuple[list[str], np.ndarray]:
    """Item ids (sorted) and an items × repeats array of one case field, straight from cases.jsonl."""
    records = cases(project, run)
    items = sorted({c["item_id"] for c in records})
    repeats = sorted({c["repeat"] for c in records})
    matrix = np.full((len(items), len(repeats)), np.nan)
    for c in records:
        matrix[items.index(c["item_id"]), repeats.index(c["repeat"])] = float(c[field])
    return items, matrix


def edit_manifest(project: Path, **changes) -> str:
    """Write experiments/variant.yaml: the example manifest with top-level keys replaced."""
    manifest = yaml.safe_load((project / "experiments" / "arithmetic.yaml").read_text())
    manifest.update(changes)
    (project / "experiments" / "variant.yaml").write_text(yaml.safe_dump(manifest))
    return "experiments/variant.yaml"


def unpin_dataset(project: Path) -> None:
    """Drop the example manifest's dataset_id pin and the dataset's lock, for tests that edit the
    dataset on purpose (``run`` refuses a dataset that no longer matches its lock)."""
    (project / "data" / "arithmetic.jsonl.lock.json").unlink(missing_ok=True)
    manifest = project / "experiments" / "arithmetic.yaml"
    manifest.write_text("".join(line for line in manifest.read_text().splitlines(True) if "dataset_id:" not in line))


def new_run(cli, project: Path, manifest: str, *args: str) -> str:
    """Run a manifest (offline arms) through the CLI and return the id of the one new run."""
    before = {p.name for p in (project / "runs").iterdir()}
    forget_project_modules()
    result = cli("run", manifest, *args)
    assert result.exit_code in (0, 1), result.output
    (created,) = {p.name for p in (project / "runs").iterdir()} - before
    return created
