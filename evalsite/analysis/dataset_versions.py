"""Which version of a dataset file a run was measured on: the current one, or an older one.

A dataset file changes (an expected value edited, a row added) and its runs keep the
``dataset_id`` they were made on, so one file can have runs on several versions. The *current*
version is the one whose content hash matches the file now. A run made on a selection of the file
(``dataset.limit``, ``dataset.split``) is on the current version when its hash is the hash of that
selection of the file now: the first ``items`` rows, the rows of one split, or the first ``items``
of one split. Any other id of the same file is an older version.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalsite.errors import EvalsiteError
from evalsite.experiment.datasets import Item, dataset_id, item_split, load_dataset
from evalsite.runlog.records import DatasetRef

CURRENT, OLDER, UNKNOWN = "current", "older", "unknown"


@dataclass(frozen=True)
class DatasetVersion:
    """``state`` is ``current``, ``older`` or ``unknown`` (no path recorded, or the file is gone or
    unreadable now); ``label`` says it in words, naming the file."""

    path: str | None
    dataset_id: str | None
    state: str

    @property
    def label(self) -> str:
        if self.path is None:
            return "dataset file unknown"
        if self.state == CURRENT:
            return f"current version of {self.path}"
        if self.state == OLDER:
            return f"older version of {self.path} (the file has changed since)"
        return f"{self.path} cannot be read now: version unknown"


class DatasetVersions:
    """Reads each dataset file once and says which version every run's dataset is."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._items: dict[str, list[Item] | None] = {}

    def of(self, dataset: DatasetRef) -> DatasetVersion:
        if not dataset.path or not dataset.dataset_id:
            return DatasetVersion(dataset.path, dataset.dataset_id, UNKNOWN)
        items = self._file_items(dataset.path)
        if items is None:
            return DatasetVersion(dataset.path, dataset.dataset_id, UNKNOWN)
        digest = dataset.dataset_id.rpartition("@")[2]
        current = digest in _selection_hashes(items, dataset.items)
        return DatasetVersion(dataset.path, dataset.dataset_id, CURRENT if current else OLDER)

    def _file_items(self, path: str) -> list[Item] | None:
        if path not in self._items:
            try:
                self._items[path] = load_dataset(self.root / path).items
            except (EvalsiteError, OSError):
                self._items[path] = None
        return self._items[path]


def _selection_hashes(items: list[Item], count: int | None) -> set[str]:
    """The hashes of the whole file and of the selections a run can make of it now."""
    selections = [items]
    for split in {s for s in map(item_split, items) if isinstance(s, str)}:
        selections.append([item for item in items if item_split(item) == split])
    if count is not None:
        selections += [chosen[:count] for chosen in list(selections)]
    return {dataset_id("", chosen).rpartition("@")[2] for chosen in selections}
