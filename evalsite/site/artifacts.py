"""Declared artifacts copied beside their page and linked: a run's (its ``end.json``
``artifacts``) and an experiment's newest batch's (``results/<experiment>/<batch_id>/end.json``).

Only files inside the level's folder are copied, each up to :data:`MAX_ARTIFACT_BYTES`; plots
(SVG, PNG) are shown inline as images, anything else is a download. With ``redact`` on nothing is
copied: an artifact may hold inputs and outputs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from evalsite.jsonshape import JSONObject
from evalsite.site import paths

MAX_ARTIFACT_BYTES = 10 * 1024 * 1024
RESULTS_DIR = "results"  # where the experiment level writes (evalsite.execute.study)
INLINE_SUFFIXES = (".svg", ".png")


@dataclass(frozen=True)
class ArtifactLink:
    name: str
    type: str
    href: str
    inline: bool


def run_artifacts(run_id: str, directory: Path, end: JSONObject | None, redact: bool) -> tuple[list[ArtifactLink], dict[str, bytes]]:
    """The links a run page lists and the files to write for them."""
    return artifact_links(paths.run(run_id).removesuffix(".html"), directory, end, redact)


def experiment_artifacts(project_root: Path, name: str, batch_ids: list[str],
                         redact: bool) -> tuple[list[ArtifactLink], dict[str, bytes]]:
    """The newest of ``batch_ids`` (newest first) that has an experiment ``end.json``: its links and files."""
    for batch_id in batch_ids:
        folder = results_folder(project_root, name, batch_id)
        if folder is None:
            continue
        try:
            end = json.loads((folder / "end.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        return artifact_links(paths.experiment(name).removesuffix(".html"), folder, end, redact)
    return [], {}


def results_folder(project_root: Path, name: object, batch_id: object) -> Path | None:
    """``results/<name>/<batch_id>``, the folder the experiment level of a batch writes, when both
    (read from a run header, which anyone can edit) are plain folder names and its real path stays
    inside the project's ``results/``; None otherwise (docs/security.md)."""
    if not (_plain_part(name) and _plain_part(batch_id)):
        return None
    root = Path(os.path.realpath(project_root))
    results = Path(os.path.realpath(root / RESULTS_DIR))
    folder = Path(os.path.realpath(results / str(name) / str(batch_id)))
    return folder if root in results.parents and results in folder.parents else None


def refused_results(project_root: Path, name: object, batch_id: object) -> bool:
    """Whether a run header names an experiment or batch whose ``results/`` folder
    :func:`results_folder` refuses although something is there (a forged ``../../x`` name)."""
    if not isinstance(name, str) or not isinstance(batch_id, str) or results_folder(project_root, name, batch_id):
        return False
    try:
        return os.path.lexists(project_root / RESULTS_DIR / name / batch_id / "end.json")
    except ValueError:  # a NUL in a name
        return False


def _plain_part(name: object) -> bool:
    """One path component: not empty, ``.`` or ``..``, and no ``/``, backslash or NUL."""
    return isinstance(name, str) and name not in ("", ".", "..") and not any(c in name for c in "/\\\0")


def artifact_links(prefix: str, directory: Path, end: object, redact: bool) -> tuple[list[ArtifactLink], dict[str, bytes]]:
    declared = end.get("artifacts") if isinstance(end, dict) else None
    if redact or not isinstance(declared, dict):
        return [], {}
    root = directory.resolve()
    links, files = [], {}
    for name, entry in sorted(declared.items()):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            continue
        path = (root / entry["path"]).resolve()
        if root not in path.parents or not path.is_file() or path.stat().st_size > MAX_ARTIFACT_BYTES:
            continue
        href = f"{prefix}/artifacts/{paths.slug(name)}{path.suffix.lower()}"
        files[href] = path.read_bytes()
        links.append(ArtifactLink(str(name), str(entry.get("type", "")), href, path.suffix.lower() in INLINE_SUFFIXES))
    return links, files
