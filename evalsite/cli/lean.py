"""Start-up cost a command that only reads runs does not need to pay: pyarrow's look for pandas.

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

import sys


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
