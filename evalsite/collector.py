"""Python's cyclic garbage collector paused while a command makes what it keeps.

An import's cases and a run's preparation (the modules it loads, the dataset's rows, the plan)
make many objects and keep nearly all of them, in no cycle: each collection meanwhile walks what
is held so far and frees nothing. :func:`collector_paused` turns the collector off for such a
block and leaves it on or off as it was; with ``freeze`` what the block made is then frozen
(``gc.freeze``): out of every later collection until the caller's ``gc.unfreeze``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(*, freeze: bool = False) -> Iterator[None]:
    """No garbage collection in the block; ``freeze``: everything tracked is frozen when the block
    ends without an error (the caller unfreezes it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if freeze:
            gc.freeze()
    finally:
        if enabled:
            gc.enable()
