"""Helpers for the shard tests: the example experiment run through the CLI in a given folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from example_support import forget_project_modules

MANIFEST = "experiments/arithmetic.yaml"


def run_in(cli, root: Path, monkeypatch: pytest.MonkeyPatch, *args: str):
    """Run one command with ``root`` as the working folder (its project modules imported afresh)."""
    with monkeypatch.context() as patch:
        patch.chdir(root)
        patch.setattr(sys, "path", list(sys.path))
        forget_project_modules()
        result = cli(*args)
        forget_project_modules()
    return result


def json_in(cli, root: Path, monkeypatch: pytest.MonkeyPatch, *args: str):
    """The parsed ``--json`` output of a command that must succeed in ``root``."""
    result = run_in(cli, root, monkeypatch, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def headers(root: Path) -> list[dict]:
    return [json.loads((p / "run.json").read_text()) for p in sorted((root / "runs").iterdir()) if (p / "run.json").exists()]
