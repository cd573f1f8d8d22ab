"""Costs a command does not need to pay: pyarrow's look for pandas and BLAS threads spinning
between small products (commands that only read runs), and the interpreter's last collections at
exit (every command).

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


class _NoPandasNow:
    """Refuses to find pandas, for the moment pyarrow looks for it (a finder on ``sys.meta_path``)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas: not needed by a command that only reads runs")
        return None


def pyarrow_without_pandas(*, load: bool = False) -> None:
    """Settle pyarrow's looks for pandas as "absent", if pyarrow is loaded (or ``load``: loading it
    now, for a command about to) and pandas is not (when pandas is loaded already, pyarrow finds it
    as it would have)."""
    if (not load and "pyarrow.lib" not in sys.modules) or "pandas" in sys.modules:
        return
    import pyarrow

    finder = _NoPandasNow()
    sys.meta_path.insert(0, finder)
    try:
        pyarrow.lib._pandas_api.have_pandas  # noqa: B018  (reading the property is the Python side's look)
        pyarrow.chunked_array([], type=pyarrow.int8()).to_numpy()  # the C++ side's look (its NaT, NA, Timestamp)
    except Exception:
        pass
    finally:
        sys.meta_path.remove(finder)


def no_collection_at_exit() -> None:
    """Skip the garbage collections the interpreter runs over every object still alive when the
    process exits: an exit handler freezes them (``gc.freeze``), registered at the process's entry
    so that it runs after every other exit handler.

    Those collections look for reference cycles among all the modules loaded and all the data a
    command still holds, only to free what is freed anyway when the process ends: 0.1 s of CPU and
    of wall time at the end of ``evalsite run`` (its modules and a 6,000-case run's records,
    bench/runner.py). The objects are still freed as the modules are cleared; only cyclic garbage
    left at exit is not finalized, which Python never promises (every file a command writes is
    written and closed before it returns)."""
    atexit.register(gc.freeze)
