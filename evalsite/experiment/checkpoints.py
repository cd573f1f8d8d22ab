"""The checkpoint axis: starting states crossed with arms × sweep × items × repeats.

``checkpoints: [{id: none}, {id: after-triage, path: checkpoints/after-triage.json}]`` makes
every config once per checkpoint. The ``none`` entry is a fresh start; every other entry needs a
path (relative to the project root) that exists. A checkpoint is part of the config: its id,
path and (for a file) content hash are in the resolved config, so another checkpoint, or the same
checkpoint's file edited, is another config. The target receives ``{id, path}`` with the path
made absolute.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalsite.errors import PlanError
from evalsite.experiment.manifest_shapes import CheckpointSpec
from evalsite.jsonshape import JSONObject

if TYPE_CHECKING:
    from evalsite.experiment.manifest import Manifest

FRESH = "none"


@dataclass(frozen=True)
class Checkpoint:
    """``resolved`` goes into the config (and its id); ``request`` is what the target is given."""

    resolved: JSONObject
    request: JSONObject


def checkpoint_problems(entries: list[CheckpointSpec] | None) -> list[str]:
    """Unique ids; a path on every entry but ``none`` (and none on ``none``)."""
    problems = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries or []):
        where = f"checkpoints[{index}]"
        if entry["id"] in seen:
            problems.append(f"{where}.id: duplicate checkpoint id {entry['id']!r} (also checkpoints[{seen[entry['id']]}])")
        seen.setdefault(entry["id"], index)
        if entry["id"] == FRESH and "path" in entry:
            problems.append(f"{where}.path: the 'none' checkpoint is a fresh start and takes no path")
        if entry["id"] != FRESH and "path" not in entry:
            problems.append(f"{where}.path: required for every checkpoint but 'none'")
    return problems


def resolve_checkpoints(root: Path, manifest: Manifest) -> list[Checkpoint | None]:
    """The axis's entries, each path checked to exist; ``[None]`` without an axis."""
    if not manifest.checkpoints:
        return [None]
    found: list[Checkpoint | None] = []
    for index, entry in enumerate(manifest.checkpoints):
        if entry["id"] == FRESH:
            found.append(Checkpoint({"id": FRESH}, {"id": FRESH, "path": None}))
            continue
        path = (root / entry["path"]).resolve()
        if not path.exists():
            raise PlanError(f"{manifest.path}: checkpoints[{index}].path: {entry['path']} does not exist "
                            f"(relative to the project root {root})")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else None
        found.append(Checkpoint({"id": entry["id"], "path": entry["path"], "sha256": digest},
                                {"id": entry["id"], "path": str(path)}))
    return found
