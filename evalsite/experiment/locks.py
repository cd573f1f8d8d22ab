"""Dataset lock files: freeze a dataset's identity beside it, and verify the file against it.

``<dataset file>.lock.json`` records the dataset_id, the sha256 of the file's bytes and, in
order, every item's id with its row, input-side and expected-side hashes. Verifying names each
item that was added, removed or changed (and which side changed), so an edited ground truth is
told apart from an edited question. Any changed byte fails, even one that changes no item.

A lock may also declare the dataset's reference tier — where its ``expected`` values come from:
``gold`` (reviewed by people), ``silver`` (checked, not fully reviewed) or ``model`` (written by
a model). A manifest's ``dataset.reference_tier`` declares it too; the two must agree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from evalsite.errors import DatasetError, listed
from evalsite.experiment.datasets import Dataset, Item, load_dataset
from evalsite.jsonshape import JSONObject
from evalsite.runlog.hashing import file_sha256
from evalsite.runlog.store import write_json_atomic

LOCK_VERSION = 1
LOCK_SUFFIX = ".lock.json"
REFERENCE_TIERS = ("gold", "silver", "model")


@dataclass(frozen=True)
class LockCheck:
    """The outcome of verifying a dataset file against its lock."""

    dataset_path: Path
    lock_path: Path
    locked_id: str
    current_id: str
    differences: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences


def lock_path(dataset_path: str | Path) -> Path:
    dataset_path = Path(dataset_path)
    return dataset_path.with_name(dataset_path.name + LOCK_SUFFIX)


def is_lock_file(path: Path) -> bool:
    return path.name.endswith(LOCK_SUFFIX)


def freeze_dataset(dataset_path: str | Path, reference_tier: str | None = None) -> tuple[Path, Dataset]:
    """Write the dataset's lock file beside it (declaring ``reference_tier`` when given); returns
    the lock's path and the dataset."""
    if is_lock_file(Path(dataset_path)):
        raise DatasetError(f"{dataset_path} is a lock file; freeze the dataset it locks")
    if reference_tier is not None and reference_tier not in REFERENCE_TIERS:
        raise DatasetError(f"reference tier {reference_tier!r}: needs one of {', '.join(REFERENCE_TIERS)}")
    dataset = load_dataset(dataset_path)
    target = lock_path(dataset.path)
    write_json_atomic(target, {
        "lock_version": LOCK_VERSION,
        "dataset": dataset.path.name,
        "dataset_id": dataset.dataset_id,
        "file_sha256": file_sha256(dataset.path),
        "count": len(dataset.items),
        **({"reference_tier": reference_tier} if reference_tier else {}),
        "items": [_locked_item(item) for item in dataset.items],
    })
    return target, dataset


def locked_tier(dataset_path: str | Path) -> str | None:
    """The reference tier the dataset's lock declares; None without a lock or a declaration."""
    target = lock_path(dataset_path)
    if not target.exists():
        return None
    tier = read_lock(target).get("reference_tier")
    if tier is not None and tier not in REFERENCE_TIERS:
        raise DatasetError(f"{target}: reference_tier {tier!r}: needs one of {', '.join(REFERENCE_TIERS)}")
    return tier


def declared_tier(dataset_path: str | Path, in_manifest: str | None, where: str) -> str | None:
    """The dataset's reference tier, from the manifest or the lock; refused when they disagree."""
    in_lock = locked_tier(dataset_path)
    if in_manifest is not None and in_lock is not None and in_manifest != in_lock:
        raise DatasetError(f"{where}: dataset.reference_tier is {in_manifest!r} but {lock_path(dataset_path).name} "
                           f"declares {in_lock!r}; declare one tier")
    return in_manifest or in_lock


def _locked_item(item: Item) -> JSONObject:
    return {"item_id": item.item_id, "sha": item.sha, "input_sha": item.input_sha, "expected_sha": item.expected_sha}


def read_lock(path: Path) -> JSONObject:
    """A lock file's content; refuses an unreadable lock or one of a newer format."""
    try:
        lock = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{path}: no lock file; run `evalsite dataset freeze` on the dataset first") from None
    except (OSError, ValueError, RecursionError) as exc:  # a folder; not UTF-8 or JSON, 4,300+ digits; too deep
        raise DatasetError(f"{path}: unreadable lock file: {exc}") from None
    if not isinstance(lock, dict) or not isinstance(lock.get("items"), list) or "dataset_id" not in lock:
        raise DatasetError(f"{path}: not a dataset lock (needs dataset_id and items)")
    for index, entry in enumerate(lock["items"]):
        if not (isinstance(entry, dict) and isinstance(entry.get("item_id"), str) and isinstance(entry.get("sha"), str)):
            raise DatasetError(f"{path}: items[{index}] is not an item's hashes (needs item_id and sha strings): "
                               f"{json.dumps(entry)[:60]}")
    version = lock.get("lock_version")
    if not isinstance(version, int) or version > LOCK_VERSION:
        raise DatasetError(
            f"{path}: lock_version {version!r} is newer than this evalsite reads ({LOCK_VERSION}); upgrade evalsite"
        )
    return lock


def verify_dataset(dataset_path: str | Path) -> LockCheck:
    """Compare a dataset file with its lock, naming every difference."""
    dataset_path = Path(dataset_path)
    lock = read_lock(lock_path(dataset_path))
    dataset = load_dataset(dataset_path)
    differences = item_differences(lock, dataset.items)
    if not differences and file_sha256(dataset_path) != lock.get("file_sha256"):
        differences.append(
            "the file's bytes changed but every item hashes the same (whitespace, key order or "
            "number formatting); freeze it again if the change is intended"
        )
    return LockCheck(dataset_path, lock_path(dataset_path), lock["dataset_id"], dataset.dataset_id, differences)


def lock_state(dataset_path: str | Path) -> str:
    """One phrase for ``dataset show``: does the dataset have a lock, and does it still match?"""
    target = lock_path(dataset_path)
    if not target.exists():
        return "none"
    try:
        check = verify_dataset(dataset_path)
    except DatasetError as exc:
        return f"{target}: unusable ({exc.message})"
    if check.ok:
        return f"{target}: matches"
    count = len(check.differences)
    return f"{target}: does not match, {count} difference{'s' * (count != 1)} (see evalsite dataset verify)"


def item_differences(lock: JSONObject, items: list[Item]) -> list[str]:
    """Items added, removed or changed since ``lock``, and a changed order."""
    locked = {entry["item_id"]: entry for entry in lock["items"]}
    current = {item.item_id: item for item in items}
    differences = [f"item {item_id!r} removed" for item_id in locked if item_id not in current]
    differences += [f"item {item_id!r} added" for item_id in current if item_id not in locked]
    for item_id, entry in locked.items():
        item = current.get(item_id)
        if item is not None and item.sha != entry["sha"]:
            differences.append(f"item {item_id!r} changed: {_changed_side(entry, item)}")
    if not differences and [entry["item_id"] for entry in lock["items"]] != list(current):
        differences.append("the items are in a different order (the dataset_id depends on the order)")
    return differences


def _changed_side(entry: JSONObject, item: Item) -> str:
    input_changed = item.input_sha != entry.get("input_sha")
    expected_changed = item.expected_sha != entry.get("expected_sha")
    if input_changed and expected_changed:
        return "input and expected"
    if expected_changed:
        return "expected only (the ground truth was edited)"
    if input_changed:
        return "input side only"
    return "'expected' appeared or disappeared as null"


def refuse_changed_dataset(dataset_path: str | Path) -> None:
    """What ``run`` refuses (docs/guide.md §8): a dataset file whose items no longer match its lock.

    A dataset without a lock is not checked; an unreadable lock is refused with its reason. Bytes
    that changed while every item still hashes the same (whitespace, key order) are not a change of
    the dataset and are left to ``dataset verify``."""
    dataset_path = Path(dataset_path)
    target = lock_path(dataset_path)
    if not target.exists():
        return
    lock = read_lock(target)
    if file_sha256(dataset_path) == lock.get("file_sha256"):
        return
    changes = item_differences(lock, load_dataset(dataset_path).items)
    if changes:
        shown = listed(changes, 3, "; ")
        raise DatasetError(
            f"{dataset_path}: no longer matches its lock {target.name} ({shown}); refusing to run on a changed "
            f"dataset. If the change is intended, freeze it again: evalsite dataset freeze {dataset_path}"
        )


def changes_since_lock(dataset: Dataset) -> list[str] | None:
    """Differences from the dataset's lock file, or ``None`` when it has no readable lock."""
    try:
        lock = read_lock(lock_path(dataset.path))
    except DatasetError:
        return None
    return item_differences(lock, dataset.items)
