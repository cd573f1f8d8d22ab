"""The bundled example project (three arms × 60 arithmetic items) copied into a test's folder,
and run once; the ``example_*`` fixtures in ``conftest.py`` are built on these."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_FOLDERS = ("data", "arms", "experiments")


def forget_project_modules(prefix: str = "arms") -> None:
    """Drop a project's modules imported by the python target, so the next project imports its own."""
    for name in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
        del sys.modules[name]


def copy_example(root: Path) -> Path:
    """Copy the example project's folders (data, arms, experiments) into ``root``."""
    for folder in EXAMPLE_FOLDERS:
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def run_example(root: Path, repeat: int | None = None) -> Path:
    """Copy the example project into ``root`` and run its experiment (``repeat`` overrides the manifest's 3)."""
    from evalsite.execute.runner import execute_plan
    from evalsite.experiment.manifest import load_manifest
    from evalsite.experiment.plan import build_plan
    from evalsite.project import find_project

    copy_example(root)
    saved_path = list(sys.path)
    forget_project_modules()
    try:
        project = find_project(root)
        execute_plan(project, build_plan(project, load_manifest(root / "experiments/arithmetic.yaml"), repeat=repeat))
    finally:
        sys.path[:] = saved_path
        forget_project_modules()
    return root
