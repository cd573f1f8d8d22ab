"""The run log: the contract every other layer reads (docs/reference/run-format.md).

``read_run(path)`` is the one reader (:mod:`evalsite.runlog.store`); the records it returns are in
:mod:`evalsite.runlog.records`. Both names load the store when first asked for, so a module that
needs one small part of the run log (``hashing``'s ``RACY_SECONDS`` in a nothing-new build) does
not load the reader and the records with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalsite.runlog.store import Run, read_run

__all__ = ["Run", "read_run"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from evalsite.runlog import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
