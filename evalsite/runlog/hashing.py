"""Canonical JSON and content hashes shared by datasets, configs, evaluators, fingerprints and files."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson

# one encoder for every call: json.dumps with options builds a new one each time, a measurable
# share of loading a large dataset (four hashes a row)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace: equal values give equal text."""
    return _CANONICAL.encode(value)


def plain_json(value: Any) -> bool:
    """Whether ``value`` holds only dicts with string keys, lists, strings, booleans, None and
    integers (exact types): what orjson writes exactly as :func:`canonical_json` does. A float
    (written in another notation), a subclass or any other type is not plain."""
    pending = [value]
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is dict:
            for key in node:
                if type(key) is not str:
                    return False
            pending.extend(node.values())
        elif kind is list:
            pending.extend(node)
        elif kind is not str and kind is not int and kind is not bool and node is not None:
            return False
    return True


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: Any) -> str:
    """The sha256 of :func:`canonical_json`; a :func:`plain_json` value's by :func:`sha256_of_plain`."""
    return sha256_of_plain(value) if plain_json(value) else sha256_text(canonical_json(value))


def sha256_of_plain(value: Any) -> str:
    """:func:`sha256_json` of a value :func:`plain_json` accepts, hashed as orjson writes it (byte
    for byte the UTF-8 of :func:`canonical_json`: checked over every code point, key order and the
    whole 64-bit range by the tests), several times faster for a dataset's rows: an import hashes
    every item three times, so does loading a dataset."""
    try:
        return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits, a lone surrogate, deep nesting
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


def file_sha256_once(path: str | Path) -> str:
    """:func:`file_sha256`, computed once per file state in a process (``os.stat``: device, inode,
    size, modification and change times): a command that reads a run through several views, or a
    build that hashes a new run's files and then checks its cases against the footer's sha256, reads
    the bytes once. Raises :class:`OSError` when the file cannot be read."""
    state = os.stat(path)
    return _sha256_of(os.fspath(path), state.st_dev, state.st_ino, state.st_size, state.st_mtime_ns, state.st_ctime_ns)


@functools.lru_cache(maxsize=4096)
def _sha256_of(path: str, *state: int) -> str:
    return file_sha256(path)


V = TypeVar("V")
R = TypeVar("R")


def side_by_side(work: Callable[[V], R], values: Sequence[V]) -> list[R]:
    """``work`` of each value, one thread per core when there are several: for work that hashes
    files (reading a file and hashing a large buffer release the GIL), so ten runs' cases are hashed
    on every core rather than one after another (~1 s a GB on one)."""
    if len(values) < 2:
        return [work(value) for value in values]
    from concurrent.futures import ThreadPoolExecutor  # (`evalsite runs` and `show` import this module)

    with ThreadPoolExecutor(max_workers=min(len(values), os.cpu_count() or 1), thread_name_prefix="evalsite-hash") as pool:
        return list(pool.map(work, values))


#: A file changed less than this long ago may change again in the same clock tick without its size
#: or times changing (git's "racy" files): its digest is never kept for another process, nor a
#: build's inputs recorded as unchanged.
RACY_SECONDS = 2.0


def settled(found: os.stat_result, racy_seconds: float | None = None) -> bool:
    """Whether the file was last changed more than ``racy_seconds`` (default :data:`RACY_SECONDS`)
    ago: a change in the same clock tick as a look keeps its size and times."""
    seconds = RACY_SECONDS if racy_seconds is None else racy_seconds
    return max(found.st_mtime_ns, found.st_ctime_ns) < time.time_ns() - int(seconds * 1e9)
