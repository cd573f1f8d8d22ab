"""Write the site folder incrementally, within a size budget, and remember what each page was built from.

The folder holds ``.evalsite-build.json``: for every job (a page with its downloads and data scripts) the
hash of its inputs and the files it wrote. A later build keeps a job whose hash is unchanged and
whose files are all present, rewrites the others, and deletes files no job produces any more.
A file belongs to one job, except a content-addressed shared file (:data:`evalsite.site.paths.SHARED_FILES`,
the items' texts several runs' data refer to), which any job may produce and which is not written
again when the folder already holds those bytes.
The record holds content hashes only (no times), so it is as deterministic as the pages.

The record is read like any other file from outside: a committed ``site/`` may hold a tampered
one. Only names that are plain relative paths resolving inside the output folder are ever
written or deleted; any other entry is ignored with a warning (see docs/security.md).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsite.errors import SiteError
from evalsite.site.paths import SHARED_FILES
from evalsite.site.settings import HARD_FILE_LIMIT_BYTES

BUILD_RECORD = ".evalsite-build.json"
RECORD_VERSION = 1


@dataclass
class JobRecord:
    input_hash: str
    files: list[str]


@dataclass
class SiteWriter:
    out_dir: Path
    warn_bytes: int
    previous: dict[str, JobRecord] = field(default_factory=dict)
    current: dict[str, JobRecord] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    written: int = 0
    kept: int = 0
    shared: set[str] = field(default_factory=set)  # the shared files this build has written or found
    #: folder (relative to ``out_dir``) → whether it resolves inside ``out_dir``, resolved once a build:
    #: the build makes folders, never links, so a folder's answer holds for the rest of the build
    folders: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def open(cls, out_dir: Path, warn_bytes: int, *, full: bool = False) -> SiteWriter:
        """Refuse a non-empty folder that evalsite did not build (it has no build record), so a wrong
        ``--out`` deletes nothing: the build never deletes a folder, only files its record lists.

        The folder is resolved first (``missing/../runs`` is ``runs``), and a new folder gets an empty
        record before any page is written, so a first build killed early does not block the next."""
        out_dir = Path(os.path.realpath(out_dir))
        record = out_dir / BUILD_RECORD
        if out_dir.exists() and not out_dir.is_dir():
            raise SiteError(f"{out_dir}: exists and is not a folder; choose another --out")
        if out_dir.is_dir() and any(out_dir.iterdir()) and not record.is_file():
            raise SiteError(f"{out_dir}: folder is not empty and was not built by evalsite; empty it or choose another --out")
        writer = cls(out_dir, warn_bytes)
        if not record.is_file():
            _make_folder(out_dir)
            _write_record(record, {})
            return writer
        previous, ignored = _read_record(record)
        writer.warnings.extend(f"{BUILD_RECORD}: ignoring {name!r}, not a file inside the site folder" for name in ignored)
        writer.previous = {key: JobRecord("", job.files) for key, job in previous.items()} if full else previous
        return writer

    def is_fresh(self, key: str, input_hash: str) -> bool:
        """The job's record matches and its files are all there as regular files (a symlink planted
        at one of them makes the job render again, which replaces it)."""
        job = self.previous.get(key)
        return bool(job and job.input_hash == input_hash and all(_regular(self.out_dir / f) for f in job.files))

    def keep(self, key: str) -> None:
        self.current[key] = self.previous[key]
        self.kept += 1

    def write(self, key: str, input_hash: str, files: dict[str, bytes]) -> None:
        shared = {name for name, content in sorted(files.items()) if self._check(key, name, content)}
        for name, content in sorted(files.items()):
            if name in shared:
                continue
            if not self._inside(name):  # before any folder is made: a symlinked folder never leads one outside
                raise SiteError(f"refusing to write {name!r}: a symlink in the site folder leads outside it")
            path = self.out_dir / name
            _make_folder(path.parent)
            _replace(path, content)
        self.current[key] = JobRecord(input_hash, sorted(files))
        self.written += 1

    def _check(self, key: str, name: str, content: bytes) -> bool:
        """Refuse a file that may not be written; True when it is a shared file (:data:`evalsite.site.paths.SHARED_FILES`:
        content-addressed, so several pages may write it) already in the folder with the same bytes, which
        is left as it is (one found different is written again)."""
        if not plain_name(name):
            raise SiteError(f"refusing to write {name!r} outside the site folder")
        shared = SHARED_FILES.fullmatch(name) is not None
        if shared:
            if name in self.shared:  # written or found in this build already: its name is its content's hash
                return True
            self.shared.add(name)
            if self._inside(name) and _regular(self.out_dir / name) and (self.out_dir / name).read_bytes() == content:
                return True
        owners = [] if shared else [k for k, job in self.current.items() if name in job.files]
        if owners:
            raise SiteError(f"{name}: written by two pages ({owners[0]} and {key}); rename one of them")
        size = len(content)
        if size > HARD_FILE_LIMIT_BYTES:
            raise SiteError(f"{name}: {size / 1e6:.1f} MB is above the 100 MB limit of GitHub Pages; lower [site] max_field_chars or page_budget_kb")
        if size > self.warn_bytes:
            self.warnings.append(f"{name}: {size / 1e6:.1f} MB is above warn_file_mb")
        return False

    def finish(self) -> None:
        """Delete what no job produces any more, then record this build."""
        produced = {f for job in self.current.values() for f in job.files}
        for job in self.previous.values():
            for name in job.files:
                path = self.out_dir / name
                if name not in produced and self._inside(name) and (path.is_file() or path.is_symlink()):
                    path.unlink()
                    _prune_empty_parents(path, self.out_dir)
        _make_folder(self.out_dir)
        _write_record(self.out_dir / BUILD_RECORD, self.current)

    def abandon(self) -> None:
        """Record a build that failed part-way: the last build's jobs, and each job this one wrote with
        the files of both and an input hash no build gives (so it is rendered again). The next build
        then owns what this one wrote, and deletes what it no longer produces; unrecorded, a page
        written before the failure stayed in the folder for good."""
        jobs = dict(self.previous)
        for key, job in self.current.items():
            if job is not self.previous.get(key):  # written by this build, not kept
                before = self.previous[key].files if key in self.previous else []
                jobs[key] = JobRecord("", sorted({*before, *job.files}))
        _write_record(self.out_dir / BUILD_RECORD, jobs)

    def files(self) -> list[str]:
        return sorted({f for job in self.current.values() for f in job.files})  # a shared file once

    def _inside(self, name: str) -> bool:
        """``name`` is a plain relative path whose folder resolves inside the output folder (no
        symlinked folder leads out); the file itself may be a symlink, which is replaced, not followed."""
        if not plain_name(name):
            return False
        relative = name.rpartition("/")[0]
        if relative not in self.folders:
            folder = (self.out_dir / relative).resolve()
            self.folders[relative] = folder == self.out_dir or self.out_dir in folder.parents
        return self.folders[relative]


def plain_name(name: object) -> bool:
    """A site-relative posix path the build could have written: no absolute path, ``..``, ``.``,
    empty part, backslash or NUL, and not the build record itself."""
    if not isinstance(name, str) or not name or name == BUILD_RECORD or "\\" in name or "\0" in name:
        return False
    return not name.startswith("/") and all(part not in ("", ".", "..") for part in name.split("/"))


def _write_record(path: Path, jobs: dict[str, JobRecord]) -> None:
    record = {
        "record_version": RECORD_VERSION,
        "jobs": {key: {"input_hash": job.input_hash, "files": job.files} for key, job in sorted(jobs.items())},
    }
    _replace(path, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def _make_folder(folder: Path) -> None:
    """``folder`` and its parents, or :class:`SiteError` (a file in the way, a folder under a file)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SiteError(f"{folder}: cannot make the folder: {exc.strerror or exc}; move what is in the way "
                        "or choose another --out") from None


def _replace(path: Path, content: bytes) -> None:
    """Write through a fresh temporary file renamed over ``path``: a symlink planted at either name
    is replaced, never written through. A failure (a folder in the way, a full disk) is a
    :class:`SiteError` and leaves no temporary file."""
    temp = path.with_name(f".{path.name}.tmp")
    try:
        temp.unlink(missing_ok=True)
        with os.fdopen(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666), "wb") as handle:
            handle.write(content)
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
        raise SiteError(f"{path}: cannot write: {exc.strerror or exc}; move what is in the way or choose another --out") from None


def _read_record(path: Path) -> tuple[dict[str, JobRecord], list[str]]:
    """The jobs of a build record, and the file names it lists that no build could have written."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("record_version") != RECORD_VERSION:
            return {}, []
        jobs = {str(key): JobRecord(str(job["input_hash"]), _as_list(job["files"])) for key, job in data["jobs"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return {}, []
    ignored = sorted({str(f) for job in jobs.values() for f in job.files if not plain_name(f)})
    return {key: JobRecord(job.input_hash, [f for f in job.files if plain_name(f)]) for key, job in jobs.items()}, ignored


def _as_list(files: object) -> list[Any]:
    if not isinstance(files, list):
        raise TypeError("files is not a list")
    return files


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _prune_empty_parents(path: Path, root: Path) -> None:
    folder = path.parent
    while root in folder.parents and folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent
