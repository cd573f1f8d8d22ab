"""Work started beside the caller's: a large matrix's seeded resamples in a thread of their own.

numpy's permutations, multinomial draws and large array operations release the GIL, so on a
second core they overlap the paired tests instead of following them. The result is the same
either way: each piece of work draws from its own seeded generator. Small inputs run in line,
quicker than a thread starts.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")

#: A matrix of at least this many cells has its resampling work started in a thread (Friedman's
#: permutations and rank stability's draws are ~3 s of CPU each at 1M cases).
THREAD_CELLS = 1 << 18


def started(name: str, cells: int, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Callable[[], T]:
    """``function(*args, **kwargs)`` started (in a thread named evalsite-``name`` when ``cells``, the
    size of its input, reaches :data:`THREAD_CELLS`); call the result for its outcome (an exception
    it raised is raised then)."""
    if cells < THREAD_CELLS:
        return lambda: function(*args, **kwargs)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"evalsite-{name}")
    future = pool.submit(function, *args, **kwargs)
    pool.shutdown(wait=False)  # the thread ends when the work does; the caller waits on the result
    return future.result
