"""Canonical JSON and content hashes shared by datasets, configs, evaluators, fingerprints and files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import orjson

# one encoder for every call: json.dumps with options builds a new one each time, a measurable
# share of loading a large dataset (four hashes a row)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace: equal values give equal text."""
    return _CANONICAL.encode(value)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: Any) -> str:
    """The sha256 of :func:`canonical_json`. A value of only objects with text keys, arrays, text,
    integers, booleans and nulls is written by orjson (sorted keys), whose bytes for these are
    exactly the standard encoder's (every code point, key order and 64-bit integer checked) at a
    fraction of its cost: an import hashes every item three times. Floats (``1e16`` is written
    ``1e+16`` by one and ``1e16`` by the other) and anything else take the standard encoder."""
    if _plain(value, _PLAIN_DEPTH):
        try:
            return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()
        except TypeError:  # an integer past 64 bits, a lone surrogate: the standard encoder's
            pass
    return sha256_text(canonical_json(value))


_PLAIN_LEAVES = frozenset({str, int, bool, type(None)})
_PLAIN_DEPTH = 64  # deeper values take the standard encoder (orjson refuses past 255 levels)


def _plain(value: Any, depth: int) -> bool:
    """Whether ``value`` holds only what :func:`sha256_json` may write with orjson (exact types)."""
    kind = type(value)
    if kind in _PLAIN_LEAVES:
        return True
    if depth == 0:
        return False
    if kind is dict:
        for key, inner in value.items():
            if type(key) is not str or not _plain(inner, depth - 1):
                return False
        return True
    if kind is list:
        for inner in value:
            if not _plain(inner, depth - 1):
                return False
        return True
    return False


def short_hash(value: Any, length: int = 12) -> str:
    return sha256_json(value)[:length]


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes, read 1 MiB at a time (a dataset or a run file may be large)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
