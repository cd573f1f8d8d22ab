"""The run log: the contract every other layer reads (docs/reference/run-format.md).

``read_run(path)`` is the one reader (:mod:`evalsite.runlog.store`); the records it returns are in
:mod:`evalsite.runlog.records`.
"""

from evalsite.runlog.store import Run, read_run

__all__ = ["Run", "read_run"]
