"""Shared fixtures: a temporary copy of the bundled example project, and a CLI runner."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalsite.cli import main

REPO = Path(__file__).resolve().parent.parent


def forget_project_modules(prefix: str = "arms") -> None:
    """Drop a project's modules imported by the python target, so the next project imports its own."""
    for name in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
        del sys.modules[name]


@pytest.fixture
def example_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A fresh copy of the example project (data, arms, experiments) as the working folder."""
    for folder in ("data", "arms", "experiments"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    forget_project_modules()
    yield tmp_path
    forget_project_modules()


@pytest.fixture
def cli():
    """Invoke the evalsite CLI in-process; returns click's Result."""
    runner = CliRunner()

    def invoke(*args: str, **kwargs):
        return runner.invoke(main, list(args), catch_exceptions=False, **kwargs)

    return invoke
