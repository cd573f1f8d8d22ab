"""Files of a project's ``.evalsite`` folder (the site's build cache, the kept digests), read and
written so that a link a pull request planted there is never followed: docs/security.md."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

#: The suffix of a file being written (a killed process may leave one; the site cache prunes them).
TEMP_SUFFIX = ".tmp"


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading only when it is a regular file: a symlink (``O_NOFOLLOW``), a FIFO
    (``O_NONBLOCK``, then refused) or a folder raises OSError."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise OSError(f"{path.name}: not a regular file")
    return os.fdopen(descriptor, "rb")


def replace_file(folder: Path, name: str, write: Callable[[BinaryIO], object],
                 failures: tuple[type[BaseException], ...] = (OSError, ValueError)) -> bool:
    """Write ``name`` in ``folder`` through a new temporary file (``mkstemp``: ``O_EXCL``, a fresh
    name, so a planted symlink is never opened) renamed over it, which replaces a symlink at ``name``
    rather than writing through it. False when it could not be written (``write`` raised one of
    ``failures``, or the folder is read-only): nothing is left behind."""
    try:
        descriptor, temp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=TEMP_SUFFIX)
    except OSError:
        return False
    try:
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
        os.replace(temp, folder / name)
    except failures:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        return False
    return True


def made_folder(root: Path, folder: Path) -> bool:
    """Whether ``folder`` (below ``root``) is there to write in, creating what is missing one folder
    at a time, each checked (not a symlink) before the next is made in it."""
    path = root
    for part in folder.relative_to(root).parts:
        path = path / part
        try:
            os.mkdir(path)
        except FileExistsError:
            pass
        except OSError:
            return False
        if not_a_folder(path.parent, path) is not None:
            return False
    return True


def not_a_folder(root: Path, folder: Path) -> Path | None:
    """The first path from below ``root`` down to ``folder`` that exists and is not a real folder (a
    symlink, even to a folder, or a file); None when each one is a folder or missing."""
    path = root
    for part in folder.relative_to(root).parts:
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return None
        except OSError:
            return path
        if not stat.S_ISDIR(mode):
            return path
    return None
