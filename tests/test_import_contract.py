"""The import contract (``[tool.importlinter]`` in pyproject.toml, run by ``lint-imports`` in .ci/run)
holds over the package, and breaks, naming the import, on a probe violation in a copy of it: a lazy
backward import, a ``TYPE_CHECKING`` one, a library the pure statistics must not load."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed (the test extra)")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the ``evalsite`` package under ``root``, with the repository's contract."""
    environment = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", str(REPO / "pyproject.toml")], cwd=root,
                          env=environment, capture_output=True, text=True, timeout=300)


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "evalsite", tmp_path / "evalsite", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def add_lines(root: Path, module: str, text: str) -> None:
    path = root / module
    path.write_text(path.read_text(encoding="utf-8") + "\n" + text, encoding="utf-8")


def test_the_package_keeps_every_contract():
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


VIOLATIONS = {
    "a lazy backward import": ("evalsite/runlog/records.py",
                               "def _probe():\n    from evalsite.execute import runner\n\n    return runner\n",
                               "evalsite.runlog.records -> evalsite.execute.runner"),
    "a TYPE_CHECKING import of the runner in analysis": (
        "evalsite/analysis/wording.py",
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from evalsite.execute.outcomes import BatchOutcome\n",
        "evalsite.analysis.wording -> evalsite.execute.outcomes"),
    "stats loading a database": ("evalsite/stats/descriptive.py", "def _probe():\n    import duckdb\n\n    return duckdb\n",
                                 "evalsite.stats.descriptive -> duckdb"),
}


@pytest.mark.parametrize("violation", sorted(VIOLATIONS))
def test_a_probe_violation_breaks_the_contract_naming_the_import(package_copy, violation):
    module, lines, named = VIOLATIONS[violation]
    add_lines(package_copy, module, lines)
    result = lint_imports(package_copy)
    assert result.returncode != 0
    assert named in result.stdout
