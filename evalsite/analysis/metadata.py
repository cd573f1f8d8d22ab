"""Item metadata from the dataset file a run names: the cluster (``metadata.group``) and split
labels the analyses read. Cases do not carry metadata, so rows are matched to the run's items
by id and by the row hash the run recorded (an edited row is never given another row's label).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalsite.experiment.datasets import load_dataset
from evalsite.project import Project

#: The metadata field that names an item's cluster, unless evalsite.toml ``[analysis] cluster_key`` says otherwise.
CLUSTER_KEY = "group"


def cluster_key(project: Project) -> str:
    return str((project.settings.get("analysis") or {}).get("cluster_key") or CLUSTER_KEY)


def dataset_labels(
    root: Path, recorded_path: str, item_ids: Sequence[str], shas: Sequence[str | None], key: str
) -> tuple[tuple[str | None, ...], int]:
    """``str(metadata[key])`` of each item in the dataset file (None when the row lacks the field,
    is gone, or no longer has the recorded hash), and how many rows were stale."""
    path = (root / recorded_path).resolve()
    if not path.is_relative_to(root.resolve()):  # a recorded path that leaves the project is never read
        return tuple(None for _ in item_ids), len(item_ids)
    rows = {item.item_id: item for item in load_dataset(path).items}
    values: list[str | None] = []
    stale = 0
    for item_id, sha in zip(item_ids, shas):
        item = rows.get(item_id)
        if item is None or (sha is not None and item.sha != sha):
            stale += 1
            values.append(None)
            continue
        metadata = item.row.get("metadata")
        value = metadata.get(key) if isinstance(metadata, dict) else None
        values.append(None if value is None else str(value))
    return tuple(values), stale
