"""evalsite: honest experiments over LLMs, prompts and pipelines, published as a static site.

The top-level names are the Python API (:mod:`evalsite.api`), loaded on first use so that
``import evalsite`` stays cheap.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

API = ("run_experiment", "run_experiment_async", "load_runs", "cases_in_dataset_order", "leaderboard", "compare", "build_site")
__all__ = ["__version__", *API]


def __getattr__(name: str) -> Any:
    if name in API:
        from evalsite import api

        return getattr(api, name)
    raise AttributeError(f"module 'evalsite' has no attribute {name!r}")
