"""Python's cyclic garbage collector paused while a command makes what it keeps.

An import's cases and a run's preparation (the modules it loads, the dataset's rows, the plan)
make many objects and keep nearly all of them, in no cycle: each collection meanwhile walks what
is held so far and frees nothing. :func:`collector_paused` turns the collector off for such a
block and leaves it on or off as it was; :func:`kept_frozen` takes what exists when a block starts
out of every collection (``gc.freeze``) until the block ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0  # blocks of kept_frozen that hold the freeze now (nested, or in other threads)


@contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection in the block."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def kept_frozen() -> Iterator[None]:
    """Everything tracked when the block starts frozen until it ends: the last block of these to end
    unfreezes. ``gc.unfreeze`` unfreezes everything, so when the caller froze objects of its own
    before the first block, the blocks freeze nothing and leave the caller's freeze as it was."""
    global _holders
    with _lock:
        if _holders == 0 and gc.get_freeze_count():
            holding = False
        else:
            holding = True
            _holders += 1
            gc.freeze()
    try:
        yield
    finally:
        if holding:
            with _lock:
                _holders -= 1
                if _holders == 0:
                    gc.unfreeze()
