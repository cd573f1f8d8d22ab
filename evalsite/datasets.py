"""Load dataset files into rows, give every item a stable id and hash, and a dataset its id.

Formats by extension: ``.jsonl``/``.ndjson`` (one object per non-blank line), ``.json`` (an array
of objects), ``.csv`` (header row), ``.parquet``, and any other text file (one row
``{"text": line}`` per non-blank line).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsite.errors import DatasetError
from evalsite.hashing import sha256_json, sha256_text

EXPECTED_SIDE_KEYS = ("expected",)


@dataclass(frozen=True)
class Item:
    """One dataset row with its identity."""

    item_id: str
    index: int
    row: dict
    sha: str
    input_sha: str
    expected_sha: str


@dataclass(frozen=True)
class Dataset:
    path: Path
    name: str
    items: list[Item]

    @property
    def dataset_id(self) -> str:
        return dataset_id(self.name, self.items)


def load_rows(path: str | Path) -> list[dict]:
    """Read a dataset file into a list of row dicts, by extension."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: dataset file not found")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _load_parquet(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if suffix in (".jsonl", ".ndjson"):
        return _parse_jsonl(path, text)
    if suffix == ".json":
        return _parse_json_array(path, text)
    if suffix == ".csv":
        return _parse_csv(text)
    return [{"text": line} for line in text.splitlines() if line.strip()]


def _parse_jsonl(path: Path, text: str) -> list[dict]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}: invalid JSON on line {number}: {exc.msg}") from None
        if not isinstance(row, dict):
            raise DatasetError(f"{path}: line {number} is a {type(row).__name__}, expected an object")
        rows.append(row)
    return rows


def _parse_json_array(path: Path, text: str) -> list[dict]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: invalid JSON on line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, list):
        raise DatasetError(f"{path}: a .json dataset must be an array of objects, got a {type(data).__name__}")
    for index, row in enumerate(data):
        if not isinstance(row, dict):
            raise DatasetError(f"{path}: element {index} is a {type(row).__name__}, expected an object")
    return data


def _parse_csv(text: str) -> list[dict]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        return []
    rows = []
    for record in reader:
        if not record:
            continue
        padded = record + [""] * (len(header) - len(record))
        rows.append(dict(zip(header, padded)))
    return rows


def _load_parquet(path: Path) -> list[dict]:
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DatasetError(f"{path}: unreadable Parquet file: {exc}") from None


def item_identity(rows: list[dict], source: str) -> list[Item]:
    """Give each row its item id (its ``id`` field, else its index) and hashes."""
    seen: dict[str, int] = {}
    items = []
    for index, row in enumerate(rows):
        item_id = str(row["id"]) if row.get("id") is not None else str(index)
        if item_id in seen:
            raise DatasetError(
                f"{source}: duplicate item id {item_id!r} in rows {seen[item_id] + 1} and {index + 1}"
            )
        seen[item_id] = index
        input_side = {k: v for k, v in row.items() if k not in EXPECTED_SIDE_KEYS}
        expected_side = {k: row.get(k) for k in EXPECTED_SIDE_KEYS}
        items.append(
            Item(
                item_id=item_id,
                index=index,
                row=row,
                sha=sha256_json(row),
                input_sha=sha256_json(input_side),
                expected_sha=sha256_json(expected_side),
            )
        )
    return items


def dataset_id(name: str, items: list[Item]) -> str:
    """``<name>@<first 12 hex of the hash over all item hashes in order>``."""
    return f"{name}@{sha256_text(''.join(item.sha for item in items))[:12]}"


def load_dataset(path: str | Path, *, name: str | None = None, limit: int | None = None) -> Dataset:
    path = Path(path)
    rows = load_rows(path)
    if limit is not None:
        rows = rows[:limit]
    return Dataset(path=path, name=name or path.stem, items=item_identity(rows, str(path)))
