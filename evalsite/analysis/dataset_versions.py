"""Which version of a dataset file a run was measured on: the current one, or an older one.

A dataset file changes (an expected value edited, a row added) and its runs keep the
``dataset_id`` they were made on, so one file can have runs on several versions. The *current*
version is the one whose content hash matches the file now. A run made on a selection of the file
(``dataset.limit``, ``dataset.split``) is on the current version when its hash is the hash of that
selection of the file now: the first ``items`` rows, the rows of one split, or the first ``items``
of one split. Any other id of the same file is an older version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalsite.errors import EvalsiteError
from evalsite.experiment.datasets import Item, dataset_id, item_split, load_dataset
from evalsite.runlog.records import DatasetRef

CURRENT, OLDER, UNKNOWN = "current", "older", "unknown"
#: ``(path, items, compute)`` → the hashes of the file's selections (``compute()``, None when the file
#: cannot be read), or what an earlier computation for the same file content gave (the site's build cache).
SelectionMemo = Callable[[str, int | None, Callable[[], list[str] | None]], list[str] | None]


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
    """Reads each dataset file at most once and says which version every run's dataset is; the
    hashes of a file's selections are computed once per ``items`` count, or taken from ``memo``
    (which then reads no file when it holds them)."""

    def __init__(self, root: Path, memo: SelectionMemo | None = None) -> None:
        self.root = root
        self.memo = memo
        self._items: dict[str, list[Item] | None] = {}
        self._selections: dict[tuple[str, int | None], set[str] | None] = {}

    def of(self, dataset: DatasetRef) -> DatasetVersion:
        if not dataset.path or not dataset.dataset_id:
            return DatasetVersion(dataset.path, dataset.dataset_id, UNKNOWN)
        hashes = self._selection_hashes(dataset.path, dataset.items)
        if hashes is None:
            return DatasetVersion(dataset.path, dataset.dataset_id, UNKNOWN)
        current = dataset.dataset_id.rpartition("@")[2] in hashes
        return DatasetVersion(dataset.path, dataset.dataset_id, CURRENT if current else OLDER)

    def _selection_hashes(self, path: str, count: int | None) -> set[str] | None:
        if (path, count) not in self._selections:

            def compute() -> list[str] | None:
                items = self._file_items(path)
                return None if items is None else sorted(_selection_hashes(items, count))

            found = compute() if self.memo is None else self.memo(path, count, compute)
            self._selections[path, count] = None if found is None else set(found)
        return self._selections[path, count]

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
