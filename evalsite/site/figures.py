"""Per-run figures the site's listings read, and the cache that lets a build skip reading a run.

A build reads each run's cases at most once (:mod:`evalsite.site.build`). What other pages need of
a run — the runs-table figures (:class:`RunFigures`) and its column of the experiment matrix (its
:class:`~evalsite.site.matrixdata.MatrixPart`: arrays and the cells' JSON text, no object per
cell) — is kept under ``.evalsite/site-cache/<content hash of the run's files>.json`` and
``….matrix.npz`` (numpy arrays, read without pickle; the texts the runs of a dataset share — their
items' ids, row starts and input snippets — once, in ``<hash of those texts>.texts.npz``), so a later
build that re-renders the runs table, the home page or an experiment's matrix after one new run
reads only that run; ``intervals.json`` keeps the bootstrap intervals, the verdicts' paired tests and the arms' figures, so a
leaderboard that run joins bootstraps and tests only the arms and pairs whose items changed, and ``pairs.json`` the runs table's
change counts of each run against its baseline (:class:`KeptValues`), so only new pairs are compared.
An entry is found by the content hash of what it was computed from, so a changed run never meets
an old entry; a missing or unreadable entry just means the value is computed again. The cache is
derived data, local to the project (``.evalsite/`` is git-ignored), and never published."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa

from evalsite.analysis.case_columns import CaseColumns, columns_arrays, columns_of_arrays
from evalsite.analysis.interval_memo import kept_intervals, recall_kept_intervals
from evalsite.analysis.items import CELLS_SCHEMA
from evalsite.analysis.matrix import FIGURES, RunColumn
from evalsite.analysis.summary import RunSummary
from evalsite.jsonshape import JSONObject
from evalsite.runlog.state_files import TEMP_SUFFIX, made_folder, not_a_folder, open_regular, replace_file
from evalsite.site.matrixdata import MatrixPart

CACHE_VERSION = 6
INTERVALS_FILE = "intervals.json"
#: A run against its baseline: the runs table's change counts, by the hash of both runs' inputs.
PAIRS_FILE = "pairs.json"
#: Files' hashes by their states (:func:`evalsite.site.inputs.kept_file_hash`).
HASHES_FILE = "hashes.json"
#: What the dataset files give, by their content: their selections' hashes, the items' metadata scripts.
DATASETS_FILE = "datasets.json"
#: A run's matrix part: its column's arrays, and its texts as UTF-8 lines (JSON text has no raw newline).
MATRIX_SUFFIX = ".matrix.npz"
#: Texts of a matrix part that the runs of a dataset share, kept once by a hash of their content.
TEXTS_SUFFIX = ".texts.npz"
#: The name of shared texts: their blake2b digest (16 bytes), checked before a file is opened.
TEXTS_HASH = re.compile(r"[0-9a-f]{32}")
#: A run's case columns (:func:`~evalsite.analysis.case_columns.columns_arrays`), which comparisons read.
COLUMNS_SUFFIX = ".columns.npz"
#: A run's cells as the leaderboards' item matrix reads them (an Arrow IPC file).
CELLS_SUFFIX = ".cells.arrow"
#: A matrix part's texts of its own, and those the runs of its dataset share (besides the item ids).
_OWN_TEXTS = ("heads", "tails")
_SHARED_TEXTS = ("items", "snippets")


@dataclass(frozen=True)
class RunFigures:
    """A run's figures in the runs tables and on the home page (from its one summary), and which item
    buckets it has cases in (the item pages a dataset needs)."""

    cases: int
    mean_score: float | None
    pass_rate: float | None
    errors: int
    critical_failures: int | None
    cost_total: float | None
    buckets: tuple[str, ...]

    @classmethod
    def of(cls, summary: RunSummary, buckets: set[str]) -> RunFigures:
        critical = None if summary.critical_failures is None else len(summary.critical_failures)
        return cls(summary.cases, summary.mean_score, summary.pass_rate, summary.errors, critical, summary.cost.total,
                   tuple(sorted(buckets)))


@dataclass(frozen=True)
class CachedRun:
    figures: RunFigures
    matrix: MatrixPart | None


class SiteCache:
    """``.evalsite/site-cache/`` of one project: per run ``<hash>.json`` (figures) and
    ``<hash>.matrix.npz`` (its matrix part), read separately so a build that needs only a run's
    figures never reads its matrix part; entries of runs that are gone are pruned by :meth:`keep_only`.

    A cloned repository can plant symlinks here, so the cache never follows one (docs/security.md):
    when a folder between ``root`` and the cache folder is a symlink or not a folder, the cache is
    not used at all (:attr:`refused` names it; the build computes everything and warns); files are
    read only when they are regular files (``O_NOFOLLOW``), written through a fresh temporary file
    (``O_EXCL``) renamed over their name, and only regular files directly in the folder are deleted."""

    def __init__(self, folder: Path, *, root: Path | None = None) -> None:
        self.folder = folder
        self.root = folder.parent if root is None else root
        self.refused = not_a_folder(self.root, folder)
        #: Shared texts this build has read or written whole, by their hash.
        self._texts: dict[str, tuple[tuple[str, ...], dict[str, list[str]]]] = {}

    def get(self, content_hash: str, *, matrix: bool) -> CachedRun | None:
        """The run's figures, and its matrix part when ``matrix`` (else None)."""
        try:
            data = self._read(f"{content_hash}.json")
            figures = data["figures"]
            figures["buckets"] = tuple(figures["buckets"])
            return CachedRun(RunFigures(**figures), self._matrix(content_hash, data["texts"]) if matrix else None)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, EOFError, zipfile.BadZipFile):
            return None

    def _matrix(self, content_hash: str, texts_hash: str) -> MatrixPart:
        with self._open(f"{content_hash}{MATRIX_SUFFIX}") as handle, np.load(handle, allow_pickle=False) as data:
            if int(data["version"]) != CACHE_VERSION:
                raise ValueError(f"{content_hash}{MATRIX_SUFFIX}: another cache version")
            item_ids, shared = self._shared_texts(texts_hash)
            column = RunColumn(_text(data["run_id"]), item_ids, answers=data["answers"], variants=data["variants"],
                               **{name: data[name] for name in FIGURES})
            texts = {name: _text(data[name]).split("\n") if item_ids else [] for name in _OWN_TEXTS}
        if any(len(getattr(column, name)) != len(item_ids) for name in (*FIGURES, "answers")) or \
                any(len(lines) != len(item_ids) for lines in texts.values()):
            raise ValueError(f"{content_hash}{MATRIX_SUFFIX}: columns of different lengths")
        return MatrixPart(column, **texts, **shared)

    def _shared_texts(self, texts_hash: str) -> tuple[tuple[str, ...], dict[str, list[str]]]:
        """The item ids and shared texts kept under ``texts_hash``, read once a build: every run of
        the dataset that shows the same texts gets the same objects. A name that is not such a hash
        (an entry planted or damaged) is refused: the cache reads no file outside its folder."""
        if not TEXTS_HASH.fullmatch(str(texts_hash)):
            raise ValueError(f"{texts_hash!r}: not the hash of shared texts")
        if texts_hash not in self._texts:
            with self._open(f"{texts_hash}{TEXTS_SUFFIX}") as handle, np.load(handle, allow_pickle=False) as data:
                if int(data["version"]) != CACHE_VERSION:
                    raise ValueError(f"{texts_hash}{TEXTS_SUFFIX}: another cache version")
                item_ids = tuple(json.loads(_text(data["item_ids"])))
                shared = {name: _text(data[name]).split("\n") if item_ids else [] for name in _SHARED_TEXTS}
            if any(len(lines) != len(item_ids) for lines in shared.values()):
                raise ValueError(f"{texts_hash}{TEXTS_SUFFIX}: texts of different lengths")
            self._texts[texts_hash] = item_ids, shared
        return self._texts[texts_hash]

    def put(self, content_hash: str, run_id: str, figures: RunFigures, matrix: MatrixPart) -> None:
        """Store a run's figures and matrix part, and its shared texts unless this build has read or
        written them whole already; a read-only project just goes without a cache."""
        column = matrix.column
        shared = {"item_ids": _bytes(json.dumps(column.item_ids, ensure_ascii=False)),
                  **{name: _bytes("\n".join(getattr(matrix, name))) for name in _SHARED_TEXTS}}
        digest = hashlib.blake2b(f"{CACHE_VERSION}".encode(), digest_size=16)
        for name, array in shared.items():
            digest.update(f"{name}:{array.size}:".encode())
            digest.update(array.data)
        texts_hash = digest.hexdigest()
        arrays: dict[str, Any] = {"run_id": _bytes(run_id), "answers": column.answers, "variants": column.variants,
                                  **{name: getattr(column, name) for name in FIGURES},
                                  **{name: _bytes("\n".join(getattr(matrix, name))) for name in _OWN_TEXTS}}
        if texts_hash not in self._texts:
            if not self._write_arrays(f"{texts_hash}{TEXTS_SUFFIX}", shared):
                return
            self._texts[texts_hash] = column.item_ids, {name: getattr(matrix, name) for name in _SHARED_TEXTS}
        if self._write_arrays(f"{content_hash}{MATRIX_SUFFIX}", arrays):
            self._write(f"{content_hash}.json", {"version": CACHE_VERSION, "figures": asdict(figures), "texts": texts_hash})

    def case_columns(self, content_hash: str) -> CaseColumns | None:
        """The run's case columns kept by :meth:`put_columns` (None when there are none)."""
        try:
            with self._open(f"{content_hash}{COLUMNS_SUFFIX}") as handle, np.load(handle, allow_pickle=False) as data:
                if int(data["version"]) != CACHE_VERSION:
                    return None
                return columns_of_arrays({name: data[name] for name in data.files if name != "version"})
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
            return None

    def put_columns(self, content_hash: str, columns: CaseColumns) -> None:
        """Keep a run's case columns as the Python reader gave them (with their expected values:
        :func:`~evalsite.analysis.case_scan.cases_in_hand`), for the leaderboards and comparisons
        of later builds."""
        self._write_arrays(f"{content_hash}{COLUMNS_SUFFIX}", columns_arrays(columns))

    def case_cells(self, content_hash: str) -> pa.Table | None:
        """The run's cells as the item matrix reads them (:func:`evalsite.analysis.items.case_cells`)."""
        try:
            with self._open(f"{content_hash}{CELLS_SUFFIX}") as handle:  # read into memory, in one read
                table = pa.ipc.open_file(pa.BufferReader(handle.read())).read_all()
        except (OSError, ValueError, pa.ArrowException):
            return None
        return table if table.schema.equals(CELLS_SCHEMA) else None

    def has_cells(self, content_hash: str) -> bool:
        """Whether the run's cells are kept (a regular file; :meth:`case_cells` still checks what it reads)."""
        return self._has(f"{content_hash}{CELLS_SUFFIX}")

    def has_columns(self, content_hash: str) -> bool:
        """Whether the run's case columns are kept (a regular file; :meth:`case_columns` still checks what it reads)."""
        return self._has(f"{content_hash}{COLUMNS_SUFFIX}")

    def _has(self, name: str) -> bool:
        if self.refused:
            return False
        try:
            return stat.S_ISREG(os.lstat(self.folder / name).st_mode)
        except OSError:
            return False

    def put_cells(self, content_hash: str, table: pa.Table) -> None:
        def write(handle: BinaryIO) -> None:
            with pa.ipc.new_file(handle, table.schema) as writer:
                writer.write_table(table)

        self._store(f"{content_hash}{CELLS_SUFFIX}", write)

    def _write_arrays(self, name: str, arrays: dict[str, Any]) -> bool:
        return self._store(name, lambda handle: np.savez(handle, version=np.array(CACHE_VERSION), **arrays))

    def keep_only(self, hashes: set[str]) -> None:
        """Delete the entries of runs not in ``hashes`` (and shared texts none of theirs names) and
        temporary files a killed build left: regular files directly in the cache folder only, never
        a symlink or what it leads to."""
        if self.refused or not_a_folder(self.root, self.folder):
            return
        hashes = hashes | self._texts_of(hashes)
        try:
            with os.scandir(self.folder) as entries:
                doomed = [entry.path for entry in entries if entry.is_file(follow_symlinks=False) and _pruned(entry.name, hashes)]
        except OSError:
            return
        for path in doomed:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def _texts_of(self, hashes: set[str]) -> set[str]:
        """The hashes of the shared texts the entries of ``hashes`` name."""
        found = set()
        for content_hash in hashes:
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
                found.add(str(self._read(f"{content_hash}.json")["texts"]))
        return found

    def kept_values(self, name: str, identity: str) -> KeptValues:
        """Small figures an earlier build with the same ``identity`` (code, settings) stored under ``name``."""
        try:
            data = self._read(name)
            values = data["values"] if data.get("identity") == identity and isinstance(data["values"], dict) else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            values = {}
        return KeptValues(self, name, identity, values)

    def recall_intervals(self, code: str) -> None:
        """Put the bootstrap intervals earlier builds computed (with this code) back in the statistics'
        memo (and the paired tests in theirs): a leaderboard a new run joins then bootstraps and tests only the arms
        and pairs that changed."""
        try:
            data = self._read(INTERVALS_FILE)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return
        recall_kept_intervals(data.get("intervals"), code)

    def keep_intervals(self, code: str) -> None:
        self._write(INTERVALS_FILE, {"version": CACHE_VERSION, "intervals": kept_intervals(code)})

    def _read(self, name: str) -> JSONObject:
        with self._open(name) as handle:
            data = json.loads(handle.read().decode("utf-8"))
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
            raise ValueError(f"{name}: another cache version")
        return data

    def _write(self, name: str, payload: JSONObject) -> None:
        text = json.dumps(payload, separators=(",", ":"), default=str)
        self._store(name, lambda handle: handle.write(text.encode("utf-8")))

    def _open(self, name: str) -> BinaryIO:
        """``name`` in the cache folder, opened for reading only when it is a regular file
        (:func:`~evalsite.runlog.state_files.open_regular`)."""
        if self.refused:
            raise OSError(f"{self.refused}: not a folder of the project")
        return open_regular(self.folder / name)

    def _store(self, name: str, write: Callable[[BinaryIO], object]) -> bool:
        """Write ``name`` (:func:`~evalsite.runlog.state_files.replace_file`: a planted symlink is never
        written through). False when it could not be written (read-only project, refused folder)."""
        return not self.refused and made_folder(self.root, self.folder) and \
            replace_file(self.folder, name, write, (OSError, ValueError, pa.ArrowException))


def _pruned(name: str, hashes: set[str]) -> bool:
    """Whether a build that keeps the entries of ``hashes`` deletes the cache file ``name``."""
    if name.endswith(TEMP_SUFFIX):
        return True
    if name in (INTERVALS_FILE, PAIRS_FILE, HASHES_FILE, DATASETS_FILE) or not name.endswith((".json", ".npz", CELLS_SUFFIX)):
        return False
    return name.split(".")[0] not in hashes


@dataclass
class KeptValues:
    """Figures computed from a few inputs (e.g. a pair of runs), found by the hash of those inputs; the
    next build keeps only the entries this one used, so a pair that is gone is forgotten."""

    cache: SiteCache | None
    name: str
    identity: str
    values: dict[str, Any]
    used: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def unsaved(cls) -> KeptValues:
        """Values computed once in this process and never stored."""
        return cls(None, "", "", {})

    def get(self, key: str, compute: Callable[[], Any]) -> Any:
        """The value stored under ``key``, else ``compute()`` (stored for the next build; it must be JSON)."""
        if key not in self.used:
            self.used[key] = self.values[key] if key in self.values else compute()
        return self.used[key]

    def adopt(self, used: dict[str, Any]) -> None:
        """Values another process of this build computed (a page rendered in a child), as if computed here."""
        for key, value in used.items():
            self.used.setdefault(key, value)

    def save(self) -> None:
        """Keep what this build used (nothing is written when it used nothing: the page reading these
        values was not rebuilt)."""
        if self.cache is not None and self.used:
            self.cache._write(self.name, {"version": CACHE_VERSION, "identity": self.identity, "values": self.used})


def _bytes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)


def _text(array: np.ndarray) -> str:
    return array.tobytes().decode("utf-8", "surrogatepass")
