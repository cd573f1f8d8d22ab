"""``evalsite init``: write a ready project (example dataset, manifest, targets, report, CI workflow)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from evalsite import __version__
from evalsite.errors import ProjectError

SCAFFOLD_DIR = Path(__file__).resolve().parent / "project_template"
SCHEMA_COPY = Path(".evalsite/manifest.schema.json")  # editors read it via the manifests' modeline


def default_install() -> str:
    """What the scaffolded workflow installs: exactly the evalsite that wrote it."""
    return f"evalsite=={__version__}"


@dataclass(frozen=True)
class ScaffoldReport:
    root: Path
    written: list[str]


def _destination(relative: Path) -> Path:
    """Files are stored as ``dot-name`` in the package so packaging tools never skip them."""
    return Path(*[part.replace("dot-", ".", 1) if part.startswith("dot-") else part for part in relative.parts])


def scaffold_files(schema: str, install: str | None = None) -> dict[Path, str]:
    """The project's files. ``schema``: the manifest schema for editors (the layer that knows the
    evaluator types and target kinds writes it: ``evalsite.execute.editor_schema``); ``install``:
    the pip requirement the CI workflow installs (a version pin, ``git+URL@tag`` or a path;
    default :func:`default_install`)."""
    if install is not None and (not install.strip() or "\n" in install or '"' in install):
        raise ProjectError(f"--install {install!r}: needs one pip requirement, URL or path (no quotes or newlines)")
    replacements = {
        "__INSTALL__": install or default_install(),
    }
    files = {}
    for source in sorted(SCAFFOLD_DIR.rglob("*")):
        if source.is_file() and "__pycache__" not in source.parts:
            text = source.read_text(encoding="utf-8")
            for placeholder, value in replacements.items():
                text = text.replace(placeholder, value)
            files[_destination(source.relative_to(SCAFFOLD_DIR))] = text
    files[SCHEMA_COPY] = schema
    return files


def init_project(root: Path, schema: str, install: str | None = None) -> ScaffoldReport:
    """Write the scaffold into ``root``; refuses, naming the file, if any of them exists already."""
    files = scaffold_files(schema, install)
    existing = [path for path in files if os.path.lexists(root / path)]  # a dangling symlink too: never written through
    if existing:
        raise ProjectError(f"{root / existing[0]} already exists; evalsite init never overwrites (pick an empty folder)")
    folders = sorted({Path("runs"), *(folder for path in files for folder in path.parents)})
    in_the_way = [root / folder for folder in folders if os.path.lexists(root / folder) and not (root / folder).is_dir()]
    if in_the_way:  # checked before anything is written: init writes the whole scaffold or nothing
        raise ProjectError(f"{in_the_way[0]}: exists and is not a folder; evalsite init never overwrites (pick an empty folder)")
    try:
        (root / "runs").mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ProjectError(f"{exc.filename}: evalsite init cannot write it: {exc.strerror}") from None
    return ScaffoldReport(root, [path.as_posix() for path in files])
