"""evalsite: honest experiments over LLMs, prompts and pipelines, published as a static site.

The top-level names are the Python API (:mod:`evalsite.api`), loaded on first use so that
``import evalsite`` stays cheap; a type checker reads them from the ``TYPE_CHECKING`` block, so
``evalsite.run_experiment`` has its real signature in mypy and pyright.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the real types for a type checker; at run time __getattr__ loads evalsite.api
    from evalsite.api import (
        BatchResult,
        OptionError,
        build_site,
        cases_in_dataset_order,
        compare,
        leaderboard,
        load_runs,
        run_experiment,
        run_experiment_async,
    )

__version__ = "0.1.0"

__all__ = [
    "__version__", "run_experiment", "run_experiment_async", "load_runs", "cases_in_dataset_order", "leaderboard",
    "compare", "build_site", "BatchResult", "OptionError",
]
#: The names :func:`__getattr__` loads from evalsite.api.
API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    if name in API:
        from evalsite import api

        return getattr(api, name)
    raise AttributeError(f"module 'evalsite' has no attribute {name!r}")
