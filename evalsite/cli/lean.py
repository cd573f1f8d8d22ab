"""Costs a command does not need to pay: pyarrow's look for pandas and BLAS threads spinning
between small products (commands that only read runs), and, in every command, most of the garbage
collector's passes (:func:`fewer_collections`) and httpx's command-line client
(:func:`httpx_without_its_command_line`).

pyarrow imports pandas, when it is installed, the first time it converts a value to or from numpy
(any ``to_numpy``, a fill value, a list), to recognise pandas objects (``NaT``, ``NA``, a
``Series``): 0.4 s of CPU and 70 MB, a third of ``evalsite leaderboard`` on a small project
(bench/startup.py). The commands that only read runs (``READS_RUNS``) never hand pyarrow a pandas
object, so before one runs, the CLI lets pyarrow's two looks (its Python side and its C++ side;
each looks once per process) find pandas absent: :func:`pyarrow_without_pandas` (loading pyarrow
first for a command that loads it anyway; ``runs``, ``show`` and a nothing-new ``build`` never do).

What that changes, for the rest of that process only: pandas stays importable, and pyarrow
still imports it when a pandas feature is asked for (``to_pandas``, ``from_pandas``), but pyarrow
no longer treats ``pandas.NaT`` and ``pandas.NA`` in a Python list as nulls. Commands that run
user code which may build Arrow data from pandas (``run``, ``rescore``, ``import``) do not do this.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys

#: The environment variable OpenBLAS (numpy's BLAS in its wheels) reads, once, when numpy loads.
BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def blas_on_one_thread() -> None:
    """Let numpy's BLAS use one thread in this process, unless the user chose a number, and only
    if numpy is not loaded yet (its BLAS reads the setting when it loads).

    The products evalsite's analysis computes are small (bootstrap counts × a few thousand distinct
    item rows × the arms), and OpenBLAS, after each one, keeps its worker threads spinning a while
    for the next: at 1M cases that spinning was a fifth of ``evalsite leaderboard``'s CPU
    (docs/benchmarks.md), for no gain in time on a busy machine. The figures stay the same
    (``leaderboard --json`` compared byte for byte at 100k and 1M cases). Child processes of the
    command inherit the setting."""
    if "numpy" not in sys.modules:
        os.environ.setdefault(BLAS_THREADS, "1")


class _Refuses:
    """A finder (on ``sys.meta_path``) that refuses to find ``package`` and its modules, as if it
    were not installed; ``once``: it leaves ``sys.meta_path`` at its first refusal."""

    def __init__(self, package: str, reason: str, *, once: bool = False) -> None:
        self.package, self.reason, self.once = package, reason, once

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == self.package or name.startswith(self.package + "."):
            if self.once:
                sys.meta_path.remove(self)
            raise ImportError(f"{name}: {self.reason}")
        return None


def pyarrow_without_pandas(*, load: bool = False) -> None:
    """Settle pyarrow's looks for pandas as "absent", if pyarrow is loaded (or ``load``: loading it
    now, for a command about to) and pandas is not (when pandas is loaded already, pyarrow finds it
    as it would have)."""
    if (not load and "pyarrow.lib" not in sys.modules) or "pandas" in sys.modules:
        return
    import pyarrow

    finder = _Refuses("pandas", "not needed by a command that only reads runs")
    sys.meta_path.insert(0, finder)
    try:
        pyarrow.lib._pandas_api.have_pandas  # noqa: B018  (reading the property is the Python side's look)
        pyarrow.chunked_array([], type=pyarrow.int8()).to_numpy()  # the C++ side's look (its NaT, NA, Timestamp)
    except Exception:
        pass
    finally:
        sys.meta_path.remove(finder)


#: How many new objects the collector's youngest generation takes before it is collected (Python's
#: default is 700; 3.13 raised it to 2,000).
YOUNG_GENERATION = 10_000


def fewer_collections() -> None:
    """For the process's lifetime: collect the youngest generation every :data:`YOUNG_GENERATION`
    new objects, and skip the collections the interpreter runs over everything alive at exit (an
    exit handler freezes it, ``gc.freeze``; registered at the process's entry, so it runs after
    every other exit handler).

    A command makes its objects to keep them (modules, a dataset's rows, a run's records) or makes
    short-lived ones that reference counting frees (a call's request and reply): at Python's
    threshold the collector scans what is still young hundreds of times a second, and at exit it
    scans every module and record left only to free what the end of the process frees anyway.
    On ``evalsite run`` of 6,000 calls (bench/runner.py) the collections cost 0.1-0.2 s before
    the first call and during the calls, and 0.1 s at exit. Cyclic garbage waits a little longer
    for its collection (at most ``YOUNG_GENERATION`` new objects); what is left at exit is freed by
    the operating system without being finalized, which Python never promises (every file a
    command writes is written and closed before it returns)."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION, older, oldest)
    atexit.register(gc.freeze)


def httpx_without_its_command_line() -> None:
    """Unless httpx is loaded already: the process's ``import httpx`` skips its command-line
    client (``httpx._main``), as it does where that client's libraries are not installed.

    httpx's package imports ``httpx._main`` for ``httpx.main`` (the ``httpx`` console script)
    whenever rich and pygments happen to be installed (as in a development environment, where
    import-linter brings rich): some 70 modules and ~0.24 G instructions (~50 ms of CPU) in every
    command that loads a model client, none of which evalsite calls. A finder refuses that one
    import (then leaves ``sys.meta_path``), so httpx defines its own stand-in ``httpx.main``, which
    says the client is not installed; an explicit ``import httpx._main`` later still works, and
    ``python -m httpx`` and the ``httpx`` script, their own processes, are unchanged."""
    if "httpx" not in sys.modules:
        sys.meta_path.insert(0, _Refuses("httpx._main", "not needed by evalsite", once=True))
