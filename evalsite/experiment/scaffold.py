"""``evalsite init``: write a ready project (example dataset, manifest, targets, report, CI workflow)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalsite.errors import ProjectError

SCAFFOLD_DIR = Path(__file__).resolve().parent / "project_template"
CI_EXPERIMENTS = ["experiments/example.yaml"]
CI_MAX_COST_USD = "1.00"


@dataclass(frozen=True)
class ScaffoldReport:
    root: Path
    written: list[str]


def _destination(relative: Path) -> Path:
    """Files are stored as ``dot-name`` in the package so packaging tools never skip them."""
    return Path(*[part.replace("dot-", ".", 1) if part.startswith("dot-") else part for part in relative.parts])


def scaffold_files() -> dict[Path, str]:
    files = {}
    for source in sorted(SCAFFOLD_DIR.rglob("*")):
        if source.is_file() and "__pycache__" not in source.parts:
            text = source.read_text(encoding="utf-8")
            text = text.replace("__EXPERIMENTS__", " ".join(CI_EXPERIMENTS)).replace("__MAX_COST__", CI_MAX_COST_USD)
            files[_destination(source.relative_to(SCAFFOLD_DIR))] = text
    return files


def init_project(root: Path) -> ScaffoldReport:
    """Write the scaffold into ``root``; refuses, naming the file, if any of them exists already."""
    files = scaffold_files()
    existing = [path for path in files if (root / path).exists()]
    if existing:
        raise ProjectError(f"{root / existing[0]} already exists; evalsite init never overwrites (pick an empty folder)")
    (root / "runs").mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return ScaffoldReport(root, [path.as_posix() for path in files])
