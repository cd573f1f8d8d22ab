"""The example project run once per test module (3 arms × 60 items × 3 repeats), copied fresh
into each test, and helpers that read its run logs by hand — the independent side of every check.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from conftest import REPO, forget_project_modules

from evalsite.cli import main

ARMS = ("careful", "left_to_right", "sampler")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def json_of(*args: str):
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory) -> Path:
    """A project folder holding the example experiment's three completed runs."""
    root = tmp_path_factory.mktemp("example")
    for folder in ("data", "arms", "experiments"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setattr(sys, "path", list(sys.path))
        forget_project_modules()
        assert invoke("run", "experiments/arithmetic.yaml", "--allow-failures").exit_code == 0
        forget_project_modules()
    return root


@pytest.fixture
def project(example_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the example project with its runs, as the working folder."""
    copy = tmp_path / "project"
    shutil.copytree(example_runs, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(copy)
    monkeypatch.setattr(sys, "path", list(sys.path))
    forget_project_modules()
    yield copy
    forget_project_modules()


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
    """Drop the example manifest's dataset_id pin, for tests that edit the dataset on purpose."""
    manifest = project / "experiments" / "arithmetic.yaml"
    manifest.write_text("".join(line for line in manifest.read_text().splitlines(True) if "dataset_id:" not in line))


def new_run(project: Path, manifest: str, *args: str) -> str:
    """Run a manifest (offline arms) and return the id of the one new run."""
    before = {p.name for p in (project / "runs").iterdir()}
    forget_project_modules()
    result = invoke("run", manifest, *args)
    assert result.exit_code in (0, 1), result.output
    (created,) = {p.name for p in (project / "runs").iterdir()} - before
    return created
