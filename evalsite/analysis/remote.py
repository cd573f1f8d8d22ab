"""Runs on object storage: a runs location may be a URI (``s3://bucket/prefix``, any fsspec URL).

A remote runs location holds compacted partitions, ``dataset=<id>/run=<run_id>/`` with
``cases.parquet``, ``run.json`` and ``end.json`` (``evalsite compact --to URI`` writes them).
Reading commands use a local mirror of the small files only: :func:`refresh_mirror` copies
each partition's ``run.json`` and ``end.json`` into the project's
``.evalsite/store/<location>/`` and leaves a ``cases.parquet.uri`` naming the remote Parquet
file, which DuckDB then reads straight from the store through the fsspec filesystem registered
on its connection (no DuckDB extension is needed or downloaded). The mirror's folder name is the
location itself, URL-safe base64 encoded (``Project.runs_dir`` names it), so a path says which
store it mirrors.

fsspec, and the filesystem of the scheme (s3fs for ``s3://``), are the optional extra
``evalsite[s3]``; credentials and endpoints come from the usual environment variables
(``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, ...).
"""

from __future__ import annotations

import base64
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalsite.errors import EvalsiteError

MIRROR_PARENT = ("store", ".evalsite")  # <project>/.evalsite/store/<encoded location> (Project.runs_dir)
URI_FILE = "cases.parquet.uri"
HEADER_FILES = ("run.json", "end.json")


def mirrored_location(folder: Path) -> str | None:
    """The URI a mirror folder stands for, or None for an ordinary runs folder."""
    if (folder.parent.name, folder.parent.parent.name) != MIRROR_PARENT:
        return None
    padded = folder.name + "=" * (-len(folder.name) % 4)
    return base64.urlsafe_b64decode(padded.encode()).decode()


def filesystem(location: str) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) for a URI, or a clear error without the extra."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise EvalsiteError(
            f"runs location {location}: reading or writing object storage needs the optional extra: "
            "pip install 'evalsite[s3]'"
        ) from None
    try:
        return url_to_fs(location)
    except (ImportError, ValueError) as exc:
        raise EvalsiteError(f"runs location {location}: {exc}") from None


def refresh_mirror(folder: Path, location: str) -> None:
    """Make ``folder`` hold the headers of every partition under ``location``, and no others."""
    with _store_errors(location):
        _refresh_mirror(folder, location)


def _refresh_mirror(folder: Path, location: str) -> None:
    fs, root = filesystem(location)
    found = set()
    for header in fs.glob(f"{root.rstrip('/')}/dataset=*/run=*/run.json"):
        remote = header.rsplit("/", 1)[0]
        relative = remote[len(root.rstrip("/")) + 1:]
        local = folder / relative
        local.mkdir(parents=True, exist_ok=True)
        for name in HEADER_FILES:
            if fs.exists(f"{remote}/{name}"):
                (local / name).write_bytes(fs.cat_file(f"{remote}/{name}"))
        (local / URI_FILE).write_text(fs.unstrip_protocol(f"{remote}/cases.parquet"))
        found.add(local)
    for stale in folder.glob("dataset=*/run=*"):
        if stale not in found:
            shutil.rmtree(stale)


def register_filesystems(connection: Any, files: list[str]) -> None:
    """Let DuckDB open remote Parquet files through fsspec, once per scheme."""
    schemes = {f.split("://", 1)[0] for f in files if "://" in f}
    for scheme in sorted(schemes):
        fs, _ = filesystem(f"{scheme}://")
        connection.register_filesystem(fs)


def upload(local_store: Path, location: str) -> None:
    """Copy a folder of compacted partitions to ``location``."""
    fs, root = filesystem(location)
    with _store_errors(location):
        for path in sorted(local_store.rglob("*")):
            if path.is_file():
                fs.put_file(str(path), f"{root.rstrip('/')}/{path.relative_to(local_store).as_posix()}")


@contextmanager
def _store_errors(location: str) -> Iterator[None]:
    """Any failure of the remote store (missing bucket, no credentials, unreachable endpoint)
    as one line naming the location; the filesystem libraries raise many unrelated types."""
    try:
        yield
    except EvalsiteError:
        raise
    except Exception as exc:  # the boundary to third-party storage clients
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EvalsiteError(f"runs location {location}: {message}") from None


def staging_dir() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="evalsite-compact-")
