"""Canonical JSON and content hashes shared by datasets, configs, evaluators, fingerprints and files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

# one encoder for every call: json.dumps with options builds a new one each time, a measurable
# share of loading a large dataset (four hashes a row)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace: equal values give equal text."""
    return _CANONICAL.encode(value)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: Any) -> str:
    return sha256_text(canonical_json(value))


def short_hash(value: Any, length: int = 12) -> str:
    return sha256_json(value)[:length]


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes, read 1 MiB at a time (a dataset or a run file may be large)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
