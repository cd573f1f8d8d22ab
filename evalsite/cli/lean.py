"""Costs a command does not need to pay: pyarrow's look for pandas, BLAS threads spinning between
small products and scipy loading every numpy submodule to copy numpy's namespace
(:func:`scipy_copies_numpy_as_loaded`) in the commands that only read runs, and, in every command,
most of the garbage collector's passes (:func:`fewer_collections`) and httpx's command-line client
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
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader  # typing only: importing importlib.abc costs ~20 ms

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


#: scipy's array-API layer's copy of numpy's namespace, which ``scipy.special`` imports.
ARRAY_API_NUMPY = "scipy._lib.array_api_compat.numpy"


def scipy_copies_numpy_as_loaded() -> None:
    """Unless scipy's array-API layer is loaded already: when ``scipy.special`` loads it (at the
    first figure a command computes, evalsite/stats/distributions.py), it copies numpy's namespace
    as numpy has loaded it, rather than loading every submodule numpy loads on first access.

    That layer copies numpy by ``from numpy import *`` and a ``getattr`` of every name in
    ``dir(numpy)``, which loads each of numpy's lazily loaded submodules: ``f2py`` (its Fortran
    parser, and charset_normalizer), ``testing`` (and unittest), ``ma``, ``polynomial``, ``rec``,
    ``char``, ``strings``, ``ctypeslib``, ``core``: ~0.08 s of CPU and 12 MB, about a third of
    what ``import scipy.special`` costs beyond numpy (docs/benchmarks.md, branch `startup6`). While that
    one module runs, numpy's ``__all__`` and ``dir()`` leave out the submodules not loaded yet;
    both are numpy's own again as soon as it has run (or failed). What changes, for the rest of the
    process: scipy's copy (the namespace scipy's functions use for numpy arrays) has no attribute
    for those submodules, which scipy reads only in its own test assertions (``xp.testing``);
    numpy itself, its submodules and scipy's results are unchanged."""
    if ARRAY_API_NUMPY not in sys.modules:
        sys.meta_path.insert(0, _CopiesAsLoaded())


class _CopiesAsLoaded:
    """A finder for :data:`ARRAY_API_NUMPY` only: the path finder's spec with its loader wrapped
    (:class:`_NumpyAsLoaded`); it leaves ``sys.meta_path`` when asked for that module."""

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: object = None) -> ModuleSpec | None:
        if name != ARRAY_API_NUMPY:
            return None
        sys.meta_path.remove(self)
        spec = PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = cast("Loader", _NumpyAsLoaded(spec.loader))
        return spec


class _NumpyAsLoaded:
    """``loader``, run while numpy's ``__all__`` and ``dir()`` name only what numpy has loaded."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        import numpy

        namespace = vars(numpy)
        if "__dir__" not in namespace:  # numpy 1.x: no lazy listing to limit (its dir() is its dict)
            self.loader.exec_module(module)
            return
        names: list[str] = namespace["__all__"]
        listing: Callable[[], list[str]] = namespace["__dir__"]
        unloaded = {name for name in set(listing()) - namespace.keys() if f"numpy.{name}" not in sys.modules}
        namespace["__all__"] = [name for name in names if name not in unloaded]
        namespace["__dir__"] = lambda: [name for name in listing() if name not in unloaded]
        try:
            self.loader.exec_module(module)
        finally:
            namespace["__all__"], namespace["__dir__"] = names, listing

    def __getattr__(self, name: str) -> object:
        """The wrapped loader's other methods (``get_source`` for tracebacks, ``get_filename``)."""
        return getattr(self.loader, name)
