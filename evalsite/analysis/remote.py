"""Runs on object storage: a runs location may be a URI (``s3://bucket/prefix``, any fsspec URL).

A remote runs location holds compacted partitions, ``dataset=<id>/run=<run_id>/`` with
``cases.parquet``, ``run.json`` and ``end.json`` (``evalsite compact --to URI`` writes them).
Every reading command reads a local mirror of it: :func:`refresh_mirror` makes the project's
``.evalsite/store/<location>/`` hold one ordinary run folder per partition, ``<run_id>/``, with
copies of ``run.json`` and ``end.json``, a ``cases.parquet.uri`` naming the remote Parquet file,
and a ``cases.jsonl`` that DuckDB writes from that Parquet file once per version of it (its
size and ETag or modification time, kept in ``cases.parquet.version``). DuckDB reads Parquet
from the store through the fsspec filesystem registered on its connection, so no DuckDB
extension is needed or downloaded:

* the DuckDB views (``query``, ``runs``, ``leaderboard``) read each run's ``cases.parquet``
  straight from the store (:func:`evalsite.analysis.parquet.case_files` follows the ``.uri``);
* the commands that read a run's cases record by record (``show``, ``compare``, ``build``,
  ``check-claims``) read the mirrored ``cases.jsonl`` like any local run. The Parquet schema
  holds the columns of :data:`evalsite.analysis.db.CASE_COLUMNS`, every field a case line has
  (a field that does not apply to a case is ``null`` in a mirrored line, and absent from a
  partition compacted before the field was a column).

The mirror's folder name is the location itself, URL-safe base64 encoded (``Project.runs_dir``
names it), so a path says which store it mirrors.

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
from evalsite.runlog.store import CASES_FILE, END_FILE, RUN_FILE, run_directories

MIRROR_PARENT = ("store", ".evalsite")  # <project>/.evalsite/store/<encoded location> (Project.runs_dir)
URI_FILE, VERSION_FILE = "cases.parquet.uri", "cases.parquet.version"
HEADER_FILES = (RUN_FILE, END_FILE)


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
        fs, path = url_to_fs(location)
    except (ImportError, ValueError) as exc:
        raise EvalsiteError(f"runs location {location}: {exc}") from None
    return fs, str(path)


_REFRESHED: set[tuple[Path, str]] = set()  # mirrors already refreshed by this process


def refresh_mirror(folder: Path, location: str) -> None:
    """Make ``folder`` hold a run folder for every partition under ``location``, and no others;
    once per process (a command reads the store as it was when it started; an upload from
    this process refreshes it again)."""
    if (folder, location) in _REFRESHED:
        return
    with _store_errors(location):
        _refresh_mirror(folder, location)
    _REFRESHED.add((folder, location))


def run_folders(runs_dir: Path) -> list[Path]:
    """Every run folder under ``runs_dir``: ``runs/<run_id>/`` and compacted partitions
    ``dataset=<id>/run=<run_id>/`` (a published store, refreshed first when ``runs_dir`` mirrors
    one), by run id (oldest first)."""
    location = mirrored_location(runs_dir)
    if location is not None:
        refresh_mirror(runs_dir, location)
    folders = run_directories(runs_dir)
    if runs_dir.is_dir():
        folders += [path.parent for path in runs_dir.glob(f"dataset=*/run=*/{RUN_FILE}")]
    return sorted(folders, key=lambda folder: folder.name.removeprefix("run="))


def refresh_project_store(project: Any) -> None:
    """Refresh the project's mirror when its runs location is a URI (else nothing to do)."""
    location = mirrored_location(project.runs_dir)
    if location is not None:
        refresh_mirror(project.runs_dir, location)


def _refresh_mirror(folder: Path, location: str) -> None:
    from evalsite.analysis.parquet import PARQUET_FILE  # store builds on this module

    fs, root = filesystem(location)
    found = set()
    for header in fs.glob(f"{root.rstrip('/')}/dataset=*/run=*/{RUN_FILE}"):
        remote = header.rsplit("/", 1)[0]
        local = folder / remote.rsplit("/", 1)[1].removeprefix("run=")
        local.mkdir(parents=True, exist_ok=True)
        for name in HEADER_FILES:
            if fs.exists(f"{remote}/{name}"):
                (local / name).write_bytes(fs.cat_file(f"{remote}/{name}"))
            else:
                (local / name).unlink(missing_ok=True)
        uri = fs.unstrip_protocol(f"{remote}/{PARQUET_FILE}")
        (local / URI_FILE).write_text(uri)
        _mirror_cases(fs, f"{remote}/{PARQUET_FILE}", uri, local)
        found.add(local)
    for stale in folder.iterdir() if folder.is_dir() else ():
        if stale.is_dir() and stale not in found:
            shutil.rmtree(stale)


def _mirror_cases(fs: Any, path: str, uri: str, local: Path) -> None:
    """Write ``local/cases.jsonl`` from the remote Parquet file, unless this version is there."""
    info = fs.info(path)
    version = f"{info.get('size')} {info.get('ETag') or info.get('etag') or info.get('mtime') or info.get('LastModified')}"
    marker, target = local / VERSION_FILE, local / CASES_FILE
    if target.exists() and marker.exists() and marker.read_text() == version:
        return
    from evalsite.analysis.db import connect
    from evalsite.analysis.parquet import parquet_source  # the one cast of the Parquet columns

    partial = local / f".{CASES_FILE}.partial"
    connection = connect()
    try:
        register_filesystems(connection, [uri])
        query = f"SELECT * EXCLUDE (run_id) FROM ({parquet_source([uri])})"
        connection.execute(f"COPY ({query}) TO '{_sql_text(str(partial))}' (FORMAT json)")
    finally:
        connection.close()
    partial.replace(target)
    marker.write_text(version)


def _sql_text(text: str) -> str:
    return text.replace("'", "''")


def register_filesystems(connection: Any, files: list[str]) -> None:
    """Let DuckDB open remote Parquet files through fsspec, once per scheme (a scheme already
    registered in the connection's database is left as it is: DuckDB refuses a second one)."""
    schemes = {f.split("://", 1)[0] for f in files if "://" in f}
    registered = set(connection.list_filesystems()) if schemes else set()
    for scheme in sorted(schemes):
        fs, _ = filesystem(f"{scheme}://")
        protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
        if not registered & set(protocols):
            connection.register_filesystem(fs)


def upload(local_store: Path, location: str) -> None:
    """Copy a folder of compacted partitions to ``location``."""
    _REFRESHED.clear()
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


def staging_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="evalsite-compact-")
