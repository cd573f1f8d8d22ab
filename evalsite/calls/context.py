"""What every model call of a batch consults between attempts: the stop predicate, the budget, the deadline.

The runner builds one :class:`CallContext` per batch and hands it to every generation call and,
through :class:`~evalsite.scoring.evaluators.base.CaseView`, to every evaluator that calls a model
(``llm_judge``), so a judge's retries stop on the same cost ceiling, deadline and Ctrl-C as
generation's. Every call's cost is counted against the one budget as it returns. Outside a batch
(``rescore``, a comparison re-scoring against edited ground truth) the default context never stops.
Only the standard library: scoring imports this without loading any target.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

#: How often a backoff sleep looks at the stop predicate (a Ctrl-C ends the wait this soon).
POLL_SECONDS = 0.1


class Abandoned(Exception):
    """The run is stopping before a retry: the case is left unrecorded so a resume runs it."""


class CostCounter(Protocol):
    """The batch's budget (:class:`~evalsite.execute.stopping.Budget`): counts a call's cost and
    says whether the ceiling is reached."""

    def add(self, cost: float | None) -> bool: ...

    def reached(self) -> bool: ...


def _never() -> bool:
    return False


@dataclass(frozen=True)
class CallContext:
    """``stopping``: the batch is stopping (cost ceiling counted, deadline, Ctrl-C); ``budget``: what
    every call's cost counts against (None: nothing counted); ``deadline``: the ``time.monotonic()``
    after which no retry starts (None: no deadline)."""

    stopping: Callable[[], bool] = _never
    budget: CostCounter | None = None
    deadline: float | None = None

    @classmethod
    def for_batch(cls, stopping: Callable[[], bool], budget: CostCounter, deadline_s: float | None) -> CallContext:
        """A batch's context, its deadline ``deadline_s`` seconds from now."""
        return cls(stopping, budget, None if deadline_s is None else time.monotonic() + deadline_s)

    def spend(self, cost: float | None) -> None:
        """Count one call's cost (None, 0 and non-finite costs count nothing)."""
        if self.budget is not None:
            self.budget.add(cost)

    def stop_reason(self) -> str | None:
        """Why no further attempt may start, or None."""
        if self.stopping():
            return "the run is stopping"
        if self.budget is not None and self.budget.reached():
            return "the cost ceiling is reached"
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return "the deadline has passed"
        return None

    async def pause(self, seconds: float, failure: str) -> None:
        """Wait ``seconds`` before a retry, looking at :meth:`stop_reason` every :data:`POLL_SECONDS`;
        :class:`Abandoned` (quoting ``failure``) as soon as it gives one."""
        end = time.monotonic() + seconds
        while (reason := self.stop_reason()) is None:
            remaining = end - time.monotonic()
            if remaining <= 0:
                return
            await asyncio.sleep(min(remaining, POLL_SECONDS))
        raise Abandoned(f"{failure}; not retried: {reason}")


#: The context of calls made outside a batch: never stops, counts nothing.
UNBOUNDED = CallContext()
