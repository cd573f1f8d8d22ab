"""Turn other tools' results into ordinary evalsite runs: ``evalsite import FORMAT PATH…``.

One module per format reads its files (registered with :func:`register_importer` in :data:`IMPORTERS`,
where an installed package's ``evalsite.importers`` entry point adds its own) into cases and run descriptions
(:mod:`~evalsite.execute.importers.source_records`); :mod:`~evalsite.execute.importers.writer` writes them as runs.
:func:`import_files` is the one function behind the command: it expands folders, refuses a file
already imported (same sha256) unless ``again``, reads every source completely, and only then
writes, into a staging folder renamed into ``runs/`` once every run is whole
(:class:`~evalsite.execute.importers.writer.StagedRuns`), so a bad file or a failed write leaves
no half import behind.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from evalsite.collector import collector_paused
from evalsite.errors import AlreadyImportedError, RunLogError, SourceError
from evalsite.execute.importers.inspect_log import read_inspect
from evalsite.execute.importers.jsonstream import TOO_DEEP
from evalsite.execute.importers.lmeval import read_lmeval
from evalsite.execute.importers.plain import read_csv, read_jsonl
from evalsite.execute.importers.promptfoo import read_promptfoo
from evalsite.execute.importers.source_records import ImportOptions
from evalsite.execute.importers.writer import ImportedRun, SourceImport, StagedRuns, write_runs
from evalsite.experiment.safety import SAFE_NAME_RULE, is_safe_name
from evalsite.forked import Forked, WorkerLost, forked
from evalsite.project import Project
from evalsite.registry import Registry
from evalsite.runlog.hashing import file_sha256
from evalsite.runlog.store import new_run_id, read_header, run_directories

__all__ = ["IMPORTERS", "ImportOptions", "ImportReport", "ImportedRun", "import_files", "previous_imports",
           "register_importer"]

log = logging.getLogger(__name__)


#: A format's reader: it reads one source file into ``source`` (cases and run descriptions).
Reader = Callable[[SourceImport, ImportOptions], None]


@dataclass(frozen=True)
class Format:
    """A format's reader, and the files a folder argument stands for (none: folders refused)."""

    read: Reader
    folder_patterns: tuple[str, ...] = ()


IMPORTERS: Registry[Format] = Registry("import format", "evalsite.importers", SourceError)


def register_importer(name: str, *, folder_patterns: tuple[str, ...] = (),
                      replace: bool = False) -> Callable[[Reader], Reader]:
    """Register ``read(source, options)`` as the reader of format ``name`` (``evalsite import
    NAME``), the built-ins' way too; ``folder_patterns``: the files a folder argument stands for
    (none: folders refused). A taken name is refused unless ``replace``."""

    def decorate(read: Reader) -> Reader:
        IMPORTERS.register(name, Format(read, folder_patterns), replace=replace, module=read.__module__)
        return read

    return decorate


register_importer("promptfoo")(read_promptfoo)
register_importer("inspect", folder_patterns=("*.eval", "*.json"))(read_inspect)
register_importer("lm-eval", folder_patterns=("results_*.json",))(read_lmeval)
register_importer("jsonl")(read_jsonl)
register_importer("csv")(read_csv)


@dataclass
class ImportReport:
    runs: list[ImportedRun]
    warnings: list[str] = field(default_factory=list)


def import_files(project: Project, format_name: str, paths: Sequence[Path], options: ImportOptions) -> ImportReport:
    """Import every file named by ``paths`` (folders expand) as format ``format_name``."""
    form = IMPORTERS.get(format_name)
    if options.dataset_name is not None and not is_safe_name(options.dataset_name):
        raise SourceError(f"--dataset {options.dataset_name[:60]!r}: not a safe name ({SAFE_NAME_RULE}); "
                          "it becomes part of the dataset id and of file names on the site")
    files = [file for path in paths for file in _expand(Path(path), format_name, form)]
    hashes = _Hashes(files)
    if not options.again:
        _refuse_repeats(project.runs_dir, files, hashes)
    hashes.start()
    sources: list[SourceImport] = []
    with collector_paused():  # every case makes a few dicts and lists, none in a cycle: a tenth of a large
        # import's CPU went to collections walking everything held so far (the items, the summary's columns)
        try:
            for file in files:
                source = SourceImport(project, file, format_name, partial(hashes.of, file))
                sources.append(source)
                _read(form, source, options)
                if not source.run_keys:
                    raise SourceError(f"{source.label}: no results to import")
            hashes.wait()  # the header needs it; and write_runs may fork (best with no other thread running)
            for source in sources:
                log.debug("read %s as %s (sha256 %s): %d run(s)", source.path, format_name, source.sha256[:12],
                          len(source.run_keys))
            batch_id = new_run_id("import")
            with StagedRuns(project.runs_dir) as staged:
                runs = [run for source in sources for run in write_runs(source, staged.folder, batch_id, options)]
                staged.publish([run.run_id for run in runs])
        finally:
            hashes.close()
            for source in sources:
                source.close()
    for run in runs:
        log.debug("wrote run %s (%s cases)", run.run_id, run.summary.cases)
    return ImportReport(runs, [warning for source in sources for warning in source.warnings])


#: the fewest bytes of files hashed by a child process rather than a thread (:class:`_Hashes`): a
#: fork costs a few ms, which a file this size takes to hash
HASH_CHILD_MIN_BYTES = 16 << 20


class _Hashes:
    """Each file's sha256 (recorded in its runs' headers). Computed at once when an earlier import
    might hold the same file (:func:`_refuse_repeats` must know before reading); otherwise while the
    files are read: by a child process where one can be forked (:func:`~evalsite.forked.forked`),
    else by a thread (hashlib and file reads release the GIL). A process, not a thread, where it
    can and the files are large (:data:`HASH_CHILD_MIN_BYTES`): the thread takes the GIL back after
    each 1 MiB read and again after its update, each time making the reading thread give it up, which
    cost the reading ~0.2-0.3 s of CPU on a 1.1 GB promptfoo file (whole imports 4 % shorter in wall
    with the child: docs/benchmarks.md, session 28); the child costs a fork of a process still
    small. :meth:`of` waits for it; :meth:`close` stops it if nothing waited (the import failed)."""

    def __init__(self, files: list[Path]):
        self.files = files
        self._found: dict[Path, str] = {}
        self._failed: OSError | None = None
        self._thread: threading.Thread | None = None
        self._child: Forked[dict[Path, str]] | None = None

    def now(self) -> dict[Path, str]:
        """Every file's sha256, computed here if not yet."""
        for file in self.files:
            self._found.setdefault(file, file_sha256(file))
        return self._found

    def start(self) -> None:
        """Hash in a child process (or a thread) whatever :meth:`now` has not hashed yet."""
        if len(self._found) < len(self.files):
            self._child = forked(self.now) if _total_bytes(self.files) >= HASH_CHILD_MIN_BYTES else None
            if self._child is None:
                self._thread = threading.Thread(target=self._hash_all, name="import-sha256", daemon=True)
                self._thread.start()

    def of(self, file: Path) -> str:
        self.wait()
        if self._failed is not None:
            raise self._failed
        return self._found[file]

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
        child, self._child = self._child, None
        if child is not None:
            try:
                self._found.update(child.result())
            except OSError as exc:  # raised by of(), in the importing thread
                self._failed = exc
            except WorkerLost:  # killed before it answered: hashed here
                self._hash_all()

    def close(self) -> None:
        """Stop the hashing child if nothing waited for it (the import failed first)."""
        child, self._child = self._child, None
        if child is not None:
            child.cancel()

    def _hash_all(self) -> None:
        try:
            self.now()
        except OSError as exc:  # raised by of(), in the importing thread
            self._failed = exc


def _total_bytes(files: list[Path]) -> int:
    """The files' sizes added up; 0 when one cannot be read (hashed by the thread, which reports it)."""
    try:
        return sum(file.stat().st_size for file in files)
    except OSError:
        return 0


def _read(form: Format, source: SourceImport, options: ImportOptions) -> None:
    """The format's reader; a value nested past what Python can decode or copy (anywhere the
    readers do not catch it themselves) is refused naming the file."""
    try:
        form.read(source, options)
    except RecursionError:
        raise SourceError(f"{source.label}: {TOO_DEEP}") from None


def previous_imports(runs_dir: Path) -> dict[str, str]:
    """The sha256 of every imported source under ``runs_dir``, mapped to a run made from it."""
    found: dict[str, str] = {}
    for directory in run_directories(runs_dir):
        try:
            source = read_header(directory).raw.get("source")
        except RunLogError:
            continue
        if isinstance(source, dict) and isinstance(source.get("sha256"), str):
            found.setdefault(source["sha256"], directory.name)
    return found


def _expand(path: Path, format_name: str, form: Format) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.exists():
        raise SourceError(f"{path}: no such file or folder")
    if not path.is_dir():  # a device, a pipe (``<(…)``) or a socket: read once, it could not be hashed and read
        raise SourceError(f"{path}: not a regular file; give the {format_name} file(s) to import")
    if not form.folder_patterns:
        raise SourceError(f"{path} is a folder; give the {format_name} file(s) to import")
    files = sorted({f for pattern in form.folder_patterns for f in path.rglob(pattern) if f.is_file()})
    if not files:
        raise SourceError(f"{path}: no {' or '.join(form.folder_patterns)} files in this folder")
    return files


def _refuse_repeats(runs_dir: Path, files: list[Path], hashes: _Hashes) -> None:
    imported = previous_imports(runs_dir)
    if not imported and len(files) == 1:
        return  # nothing to repeat: the file's hash can wait
    shas = hashes.now()
    first_with: dict[str, Path] = {}
    for file in files:
        sha = shas[file]
        if sha in imported:
            raise AlreadyImportedError(
                f"{file} was already imported as run {imported[sha]} (same sha256 {sha[:12]}…); "
                "pass --again to import it again"
            )
        if sha in first_with:
            raise AlreadyImportedError(
                f"{file} has the same content as {first_with[sha]} (sha256 {sha[:12]}…); "
                "pass --again to import both"
            )
        first_with[sha] = file
