"""The run log's vocabulary: the one status enum every layer uses.

A run's status is written once, in its footer (``end.json``); a run without a footer is
``running`` while a process holds its lock and ``interrupted`` otherwise.
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    RUNNING = "running"
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    STOPPED_COST_CEILING = "stopped_cost_ceiling"
    TIMED_OUT = "timed_out"

    @property
    def finished(self) -> bool:
        """The run wrote its footer (it may still be resumable: canceled, stopped, timed out)."""
        return self not in (RunStatus.RUNNING, RunStatus.INTERRUPTED)

    @property
    def resumable(self) -> bool:
        return self is not RunStatus.COMPLETED and self is not RunStatus.RUNNING
