"""Files' sha256s kept between processes by the files' states, as git keeps its index.

Every command that trusts a finished run's footer (``runs``, ``show``, the leaderboards, ``compare``,
the site) first checks its ``cases_sha256`` against the cases file, ~1 s a GB:
:func:`kept_sha256` takes a run's sha256 from its project's keep (``<project>/.evalsite/digests.json``,
for runs in the ``runs/`` folder of a project: a folder with ``evalsite.toml``, ``experiments/``,
``data/`` or ``.evalsite/``) when the file is in the state it was hashed in, and
:func:`save_kept` (the CLI calls it as each command ends) writes what this process hashed.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import orjson

from evalsite.project import PROJECT_MARKERS
from evalsite.runlog.hashing import file_sha256_once, settled
from evalsite.runlog.state_files import made_folder, not_a_folder, open_regular, replace_file

#: The folder of a project's derived data (git-ignored), and the file :class:`KeptDigests` keeps there.
STATE_FOLDER = ".evalsite"
DIGESTS_FILE = "digests.json"
DIGESTS_VERSION = 1


class KeptDigests:
    """Files' sha256s by their states (``os.stat``: device, inode, size, modification and change
    times), kept in a JSON file between processes, as git keeps its index: a command checking finished
    runs' cases against their footers' sha256s (~1 s a GB) reads them again only when a file's state
    changed. A file changed within
    :data:`~evalsite.runlog.hashing.RACY_SECONDS` is hashed and not kept;
    a copied or cloned project (new inodes and change times) is hashed again. An unreadable or
    malformed keep is ignored, and one that cannot be written (a read-only checkout) is not kept; as
    with the site's cache, a symlinked ``.evalsite`` turns the keep off, and a link planted at its
    file's name is never followed (:mod:`~evalsite.runlog.state_files`)."""

    def __init__(self, root: Path):
        """The keep of the project at ``root``."""
        self.root, self.folder = root, root / STATE_FOLDER
        self.refused = not_a_folder(root, self.folder) is not None
        self._entries = {} if self.refused else self._load(self.folder / DIGESTS_FILE)
        self._changed = False

    @staticmethod
    def _load(path: Path) -> dict[str, list[Any]]:
        try:
            with open_regular(path) as handle:
                data = orjson.loads(handle.read())
        except (OSError, orjson.JSONDecodeError):
            return {}
        entries = data.get("digests") if isinstance(data, dict) and data.get("version") == DIGESTS_VERSION else None
        return {key: entry for key, entry in entries.items() if _well_formed(entry)} if isinstance(entries, dict) else {}

    def sha256(self, file: str | Path) -> str:
        """The file's sha256: kept, when an earlier look hashed it in the same state, else read (and
        kept once settled). Raises :class:`OSError` when the file cannot be read."""
        found = os.stat(file)
        key = os.fspath(file)
        state = [found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns]
        entry = self._entries.get(key)
        if entry is not None and entry[:5] == state:
            return str(entry[5])
        digest = file_sha256_once(file)
        if settled(found):
            self._entries[key] = [*state, digest]
            self._changed = True
        return digest

    def save(self) -> None:
        """Write the keep when a file was hashed (the entries of files gone are dropped)."""
        if not self._changed:
            return
        entries = {key: entry for key, entry in self._entries.items() if os.path.isfile(key)}
        text = orjson.dumps({"version": DIGESTS_VERSION, "digests": entries})
        if not self.refused and made_folder(self.root, self.folder) and \
                replace_file(self.folder, DIGESTS_FILE, lambda handle: handle.write(text)):
            self._changed = False


def _well_formed(entry: Any) -> bool:
    """A kept entry: five whole numbers (the state) and a sha256's hex digits."""
    return (isinstance(entry, list) and len(entry) == 6 and all(type(n) is int for n in entry[:5])
            and isinstance(entry[5], str) and len(entry[5]) == 64)


#: The keep of each project this process read runs of, by project root (None: the folder holding the
#: ``runs/`` folder is no project); the lock makes one each.
_KEEPS: dict[Path, KeptDigests | None] = {}
_KEEPS_LOCK = threading.Lock()


def kept_sha256(file: Path) -> str:
    """The sha256 of a run's file (``run.json``, ``cases.jsonl``, ``end.json``): from its project's
    :class:`KeptDigests` when the run is in that project's ``runs/`` folder, else (any other file, or
    runs outside a project: nothing is written beside them) hashed once in this process
    (:func:`~evalsite.runlog.hashing.file_sha256_once`). Raises OSError when it cannot be read."""
    keep = _keep_of(file)
    return file_sha256_once(file) if keep is None else keep.sha256(file)


def _keep_of(file: Path) -> KeptDigests | None:
    from evalsite.runlog.store import CASES_FILE, END_FILE, RUN_FILE  # (the store imports this module)

    runs = file.parent.parent
    if file.name not in (RUN_FILE, CASES_FILE, END_FILE) or runs.name != "runs":
        return None
    root = runs.parent
    with _KEEPS_LOCK:
        if root not in _KEEPS:
            project = any((root / marker).exists() for marker in (*PROJECT_MARKERS, STATE_FOLDER))
            _KEEPS[root] = KeptDigests(root) if project else None
        return _KEEPS[root]


def save_kept() -> None:
    """Write every keep this process added to (see :meth:`KeptDigests.save`)."""
    with _KEEPS_LOCK:
        keeps = [keep for keep in _KEEPS.values() if keep is not None]
    for keep in keeps:
        keep.save()
