"""Where each level's outputs live: level folders, artifact paths and every child instance's path.

``experiment``: ``results/<experiment>/<batch_id>/`` under the project root; ``arm``: the run's
folder; ``item``: ``<run>/items/<item>/``; ``case``: ``<run>/items/<item>/repeat-<k>/`` (so the
artifacts of two cases never share a file). An artifact's path is its template with those
filled in; a step's ``in`` receives the paths of the named artifact of every child.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from evalsite.experiment.pipeline import CHILD, Artifact, Pipeline
from evalsite.runlog.hashing import short_hash

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def path_part(item_id: str) -> str:
    """An item id as one path component: itself when safe, else a cleaned form with a hash."""
    text = str(item_id)
    if _UNSAFE.search(text) is None and text.strip(".") and len(text) <= 100:
        return text
    return f"{_UNSAFE.sub('_', text)[:60]}-{short_hash(text, 8)}"


@dataclass(frozen=True)
class Scope:
    """One instance of a level: which experiment, run, item and repeat it is."""

    level: str
    experiment: str
    batch_id: str
    results_dir: Path
    run_dir: Path | None = None
    arm_id: str | None = None
    config_id: str | None = None
    item_id: str | None = None
    repeat: int | None = None
    children: tuple[Scope, ...] = field(default=(), compare=False)  # the child scopes, for `in:`

    @property
    def level_dir(self) -> Path:
        if self.level == "experiment":
            return self.results_dir
        assert self.run_dir is not None, f"a {self.level} scope lies in a run"
        if self.level == "arm":
            return self.run_dir
        assert self.item_id is not None, f"a {self.level} scope names its item"
        item_dir = self.run_dir / "items" / path_part(self.item_id)
        return item_dir if self.level == "item" else item_dir / f"repeat-{self.repeat}"

    @property
    def ids(self) -> dict[str, str | int]:
        values = {"experiment": self.experiment, "batch_id": self.batch_id, "arm_id": self.arm_id,
                  "config_id": self.config_id, "item_id": self.item_id, "repeat": self.repeat}
        return {key: value for key, value in values.items() if value is not None}

    def placeholders(self) -> dict[str, str | int]:
        values = {**self.ids, "level_dir": str(self.level_dir)}
        if self.run_dir is not None:
            values["run_dir"] = str(self.run_dir)
        if self.item_id is not None:
            values["item_id"] = path_part(self.item_id)
        return values


def artifact_path(artifact: Artifact, scope: Scope) -> Path:
    return Path(artifact.path.format(**scope.placeholders()))


def level_artifacts(pipeline: Pipeline, scope: Scope) -> dict[str, Path]:
    """This instance's declared artifacts, name → path."""
    return {name: artifact_path(a, scope) for name, a in pipeline.artifacts.get(scope.level, {}).items()}


def child_paths(pipeline: Pipeline, scope: Scope, name: str) -> list[Path]:
    """The path of artifact ``name`` in every child instance of ``scope`` (in plan order)."""
    artifact = pipeline.artifacts[CHILD[scope.level] or ""][name]
    return [artifact_path(artifact, child) for child in scope.children]


def relative_listing(root: Path, paths: dict[str, Path]) -> dict[str, str]:
    """Artifact paths as a run records them: relative to ``root`` when inside it."""
    listing = {}
    for name, path in paths.items():
        try:
            listing[name] = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            listing[name] = str(path)
    return listing
