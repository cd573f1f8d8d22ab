"""A nothing-new build, recognised before anything heavy is loaded (Jinja, DuckDB, numpy, the pages).

A build that finds every page fresh still scans the project, lists every page and loads the
whole renderer to do it (about a second on the example project). So after each build, this module
keeps in ``.evalsite/site-unchanged.json`` a key over everything that build could have read — the
state (``os.stat``: size, times, inode) of every file under the project root, of evalsite's own
package and of the packages page plugins come from, the folders packages are installed into (a plugin added or removed), the project's settings, the
build's options — with the state of every file in the output folder, and the report a build that
renders nothing would give. When the next build (not ``--full``) finds the same key and the same
output folder, it prints that report and touches nothing.

Left out of the key, as a build never reads them for a page: the output folder itself (checked
apart, above), ``.evalsite/`` (caches), version-control, virtual-environment and tool-cache
folders. A state older than the build is trusted only when every file's last change is at least
:data:`RACY_SECONDS` before the build began (a file changed in the same tick as it was looked at
would keep its times); otherwise nothing is recorded and the next build does the full check.

Only the standard library and the base modules: this runs before the renderer is imported
(tests/test_layers.py checks that a nothing-new ``evalsite build`` loads no Jinja, DuckDB or numpy).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import site
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from evalsite import __version__
from evalsite.project import PACKAGE_DIR, Project
from evalsite.runlog.hashing import RACY_SECONDS
from evalsite.site.plugin_code import package_roots, page_plugin_modules
from evalsite.site.report import SiteReport

RECORD = ".evalsite/site-unchanged.json"
RECORD_VERSION = 1
#: Folders no build reads a page from (besides the output folder and ``.evalsite/``).
SKIPPED = frozenset({".git", ".hg", ".svn", ".evalsite", "__pycache__", "node_modules", ".venv", "venv",
                     ".tox", ".nox", ".mypy_cache", ".ruff_cache", ".pytest_cache"})
#: Beyond this many files and folders, the project is left to the full check (the walk would cost more than it saves).
MAX_ENTRIES = 50_000


@dataclass(frozen=True)
class Inputs:
    """The key over a build's inputs, taken as the build begins; ``racy`` when it must not be recorded."""

    key: str
    racy: bool


def inputs_key(project: Project, out_dir: Path | None, redact: bool | None) -> Inputs | None:
    """The key over everything a build of ``project`` with these options could read; None when
    there is no trustworthy one (runs in object storage, a project too large to walk)."""
    if "://" in (project.runs_location or ""):
        return None
    out = _out_folder(project, out_dir)
    started = time.time_ns()
    walk = _Walk(skip={os.path.realpath(out)} if out else set())
    roots = [project.root, project.runs_dir, project.templates_dir, project.static_dir]
    walked: list[str] = []
    for root in (os.path.realpath(folder) for folder in roots):
        if not any(root == done or root.startswith(done + os.sep) for done in walked):
            walk.tree(root)
            walked.append(root)
    for root in [str(PACKAGE_DIR), *package_roots(page_plugin_modules())]:
        walk.tree(root)
    if walk.entries > MAX_ENTRIES:
        return None
    identity = [
        RECORD_VERSION, __version__, sys.version, sys.executable, str(project.root), str(project.runs_dir),
        json.dumps(project.settings, sort_keys=True, default=str),
        None if out_dir is None else str(out_dir), None if out_dir is None or out_dir.is_absolute() else os.getcwd(),
        redact, [_state(folder) for folder in _package_folders()],
    ]
    digest = hashlib.sha256(json.dumps(identity).encode())
    digest.update(walk.digest.digest())
    racy = walk.newest >= started - int(RACY_SECONDS * 1e9)
    return Inputs(digest.hexdigest(), racy)


def recorded_report(project: Project, out_dir: Path | None, redact: bool | None) -> SiteReport | None:
    """The report of the last build when nothing it read or wrote has changed since; else None."""
    started = time.perf_counter()
    path = project.root / RECORD
    try:
        if path.parent.is_symlink():  # never read through a link (as the build cache)
            return None
        record = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict) or record.get("version") != RECORD_VERSION:
            return None
        inputs = inputs_key(project, out_dir, redact)
        if inputs is None or record["key"] != inputs.key:
            return None
        folder, resolved = Path(record["out_dir"]), record["resolved"]
        if os.path.realpath(folder) != resolved or record["output"] != output_key(Path(resolved)):
            return None
        report = record["report"]
        return SiteReport(
            out_dir=folder, pages=int(report["pages"]), rendered=0, kept=int(report["kept"]), files=int(report["files"]),
            bytes=int(report["bytes"]), seconds=round(time.perf_counter() - started, 3), input_hash=str(report["input_hash"]),
            skipped_runs=[str(line) for line in report["skipped_runs"]], warnings=[str(line) for line in report["warnings"]],
        )
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def remember(project: Project, inputs: Inputs | None, report: SiteReport, resolved: Path) -> None:
    """Record ``report`` (what a build that renders nothing reports, given these inputs) under the key
    taken as the build began, with the output folder as the build left it; or, when the key is
    missing or racy, forget any earlier record."""
    path = project.root / RECORD
    try:
        if not path.parent.is_dir() or path.parent.is_symlink():  # never written or deleted through a link
            return
        if inputs is None or inputs.racy:
            path.unlink(missing_ok=True)
            return
        record = {
            "version": RECORD_VERSION, "key": inputs.key, "out_dir": str(report.out_dir), "resolved": str(resolved),
            "output": output_key(resolved),
            "report": {"pages": report.pages, "kept": report.kept, "files": report.files, "bytes": report.bytes,
                       "input_hash": report.input_hash, "skipped_runs": report.skipped_runs, "warnings": report.warnings},
        }
        temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temp.unlink(missing_ok=True)
        with os.fdopen(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666), "w", encoding="utf-8") as handle:
            handle.write(json.dumps(record))
        os.replace(temp, path)
    except OSError:
        return


def output_key(folder: Path) -> str:
    """The state of every file in the output folder."""
    walk = _Walk(skip=set())
    walk.tree(str(folder))
    return walk.digest.hexdigest()


def _out_folder(project: Project, out_dir: Path | None) -> str | None:
    """The output folder a build would use, as far as it can be told without the site's settings
    (left out of the walk); None when ``[site] out`` is not a plain string."""
    if out_dir is not None:
        return str(out_dir)
    out = project.settings.get("site", {}).get("out", "site") if isinstance(project.settings.get("site"), dict) else "site"
    return str(project.root / out) if isinstance(out, str) else None


def _package_folders() -> list[str]:
    """The folders packages are installed into: installing or removing one (a plugin) changes them."""
    folders = [*getattr(site, "getsitepackages", list)()]  # absent in some embedded interpreters
    folders.append(getattr(site, "getusersitepackages", str)())
    return sorted({folder for folder in folders if folder})


def _state(path: str) -> list[str | int]:
    try:
        found = os.stat(path)
    except OSError:
        return [path]
    return [path, found.st_mode, found.st_ino, found.st_mtime_ns, found.st_ctime_ns]


class _Walk:
    """Every file and folder under the roots walked, by path and ``lstat`` (a folder by its entries, not
    its times; a symlink's target too; a symlinked folder is not entered), into one digest; the
    newest change of a file seen."""

    def __init__(self, skip: set[str]) -> None:
        self.skip = skip
        self.digest = hashlib.sha256()
        self.entries = 0
        self.newest = 0

    def tree(self, root: str) -> None:
        if not self._add(root):  # a file (a plugin's module), or gone
            return
        pending = [root]
        while pending and self.entries <= MAX_ENTRIES:
            folder = pending.pop()
            try:
                with os.scandir(folder) as scan:
                    entries = sorted(scan, key=lambda entry: entry.name)
            except OSError as error:
                self.digest.update(f"{folder}\0{type(error).__name__}\n".encode())
                continue
            for entry in entries:
                if entry.name in SKIPPED or entry.path in self.skip:
                    continue
                if self._add(entry.path) and not os.path.exists(os.path.join(entry.path, "pyvenv.cfg")):
                    pending.append(entry.path)

    def _add(self, path: str) -> bool:
        """Digest one entry; whether it is a folder to enter."""
        self.entries += 1
        try:
            found = os.lstat(path)
        except OSError:
            self.digest.update(f"{path}\0gone\n".encode())
            return False
        line = [path, found.st_mode, found.st_ino, found.st_dev]
        if stat.S_ISDIR(found.st_mode):  # its entries are listed: a folder's own times change with skipped ones (site/)
            self.digest.update(json.dumps(line).encode() + b"\n")
            return True
        line += [found.st_size, found.st_mtime_ns, found.st_ctime_ns]
        self.newest = max(self.newest, found.st_mtime_ns, found.st_ctime_ns)
        if stat.S_ISLNK(found.st_mode):
            line.append(_state(path))
            with contextlib.suppress(OSError):
                target = os.stat(path)
                self.newest = max(self.newest, target.st_mtime_ns, target.st_ctime_ns)
                line.append(target.st_size)
        self.digest.update(json.dumps(line).encode() + b"\n")
        return False

