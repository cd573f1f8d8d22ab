"""One target call under the experiment's schedule: a timeout per call, retries with backoff.

Timeouts, connection errors, 429 and 5xx (a target raising :class:`TransientTargetError`) are
retried up to ``schedule.max_attempts`` with exponential backoff and jitter, waiting at least as
long as a ``Retry-After`` asked; any other failure is final at once. Between attempts and during
the backoff the call's :class:`~evalsite.calls.context.CallContext` is consulted: once the batch is
stopping, its cost ceiling is reached or its deadline would pass before the next attempt, the call
is :class:`~evalsite.calls.context.Abandoned`. Latency is measured around the attempt whose result
is recorded, failures included.

Each attempt's timeout works as ``asyncio.timeout`` does (the attempt's task is canceled at its
deadline and the cancellation becomes a :class:`TimeoutError`, unless someone else canceled the
task too), but all the attempts in flight in one event loop share one timer
(:class:`AttemptDeadlines`): an attempt costs a heap entry, not a timer of its own armed and
canceled (a timeout context manager per attempt was a measurable share of a fast run's CPU).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import random
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalsite.calls.context import CallContext
from evalsite.calls.targets import TargetRequest, TargetResult, TransientTargetError
from evalsite.calls.targets.base import Target
from evalsite.errors import ManifestError, TargetError
from evalsite.jsonshape import described

DEFAULTS = {"timeout_s": 60.0, "max_attempts": 3, "backoff_s": 1.0, "max_backoff_s": 60.0}
RETRY_AFTER_LIMIT = 600.0  # a provider asking for a longer wait fails the case instead


@dataclass(frozen=True)
class RetryPolicy:
    timeout: float = DEFAULTS["timeout_s"]
    max_attempts: int = int(DEFAULTS["max_attempts"])
    backoff: float = DEFAULTS["backoff_s"]
    max_backoff: float = DEFAULTS["max_backoff_s"]

    @classmethod
    def from_schedule(cls, schedule: Mapping[str, Any], settings: dict[str, Any]) -> RetryPolicy:
        """``schedule.{timeout_s,max_attempts,backoff_s,max_backoff_s}``; an arm's ``settings.timeout`` wins."""
        values = {key: schedule.get(key, default) for key, default in DEFAULTS.items()}
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ManifestError(f"schedule.{key}: needs a number > 0, got {value!r}")
        if not isinstance(values["max_attempts"], int):
            raise ManifestError(f"schedule.max_attempts: needs a whole number >= 1, got {values['max_attempts']!r}")
        timeout = settings.get("timeout", values["timeout_s"])
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise TargetError(f"settings.timeout: needs a number of seconds > 0, got {timeout!r}")
        return cls(float(timeout), values["max_attempts"], float(values["backoff_s"]), float(values["max_backoff_s"]))

    def delay(self, failures: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds before the next attempt: backoff × 2^(failures-1) jittered to 50–100 % and capped at
        ``max_backoff``, or longer when the provider's ``Retry-After`` asked for longer."""
        backoff = min(self.max_backoff, self.backoff * float(2 ** (failures - 1))) * (0.5 + rng.random() / 2)
        return max(backoff, retry_after or 0.0)


@dataclass(slots=True)
class CallOutcome:
    """``request_ids``: the provider's id for every attempt that gave one, in order (retries included).
    Not frozen: one is made per call, and a frozen dataclass's ``__init__`` costs 3-4 times as much."""

    result: TargetResult
    latency_ms: float
    attempts: int
    request_ids: tuple[str, ...] = ()


class _Attempt:
    """One attempt in flight: its task, the task's cancel requests when it began, and its state."""

    __slots__ = ("task", "cancelling", "done", "expired")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.cancelling = task.cancelling()
        self.done = self.expired = False


class AttemptDeadlines:
    """The deadlines of the attempts in flight in one event loop, under one timer.

    The timer is armed for the earliest deadline of an attempt still in flight. An attempt that
    ends is marked done and left in the heap until it reaches the top, so the timer usually fires
    long after the attempt it was armed for has ended; it then cancels whatever has expired and is
    armed again for the earliest attempt still in flight. Once no attempt is in flight it is
    canceled (nothing then keeps the loop referenced).
    """

    _of_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AttemptDeadlines] = weakref.WeakKeyDictionary()
    _last: AttemptDeadlines | None = None  # the loop's asked for last: found again without the weak dictionary

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)
        self._heap: list[tuple[float, int, _Attempt]] = []  # (deadline in loop time, order, attempt)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf
        self._order = itertools.count()

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> AttemptDeadlines:
        last = cls._last
        if last is not None and last._loop() is loop:  # once an attempt: a weak dictionary's lookup costs more
            return last
        deadlines = cls._of_loop.get(loop)
        if deadlines is None:
            deadlines = cls._of_loop[loop] = cls(loop)
        cls._last = deadlines
        return deadlines

    def start(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any], seconds: float) -> _Attempt:
        """Cancel ``task`` ``seconds`` from now unless :meth:`finish` ends the attempt first."""
        attempt = _Attempt(task)
        when = loop.time() + seconds
        heapq.heappush(self._heap, (when, next(self._order), attempt))
        if when < self._timer_at:
            self._arm(loop, when)
        return attempt

    def finish(self, attempt: _Attempt) -> bool:
        """End ``attempt``; true when its deadline canceled its task and no other cancellation
        is pending (the task's CancelledError is then a timeout: ``asyncio.timeout``'s rule)."""
        attempt.done = True
        heap = self._heap
        while heap and heap[0][2].done:
            heapq.heappop(heap)
        if not heap and self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_at = None, math.inf
        return attempt.expired and attempt.task.uncancel() <= attempt.cancelling

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = loop.call_at(when, self._expire, loop), when

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer, self._timer_at = None, math.inf
        heap, now = self._heap, loop.time()
        while heap and (heap[0][2].done or heap[0][0] <= now):
            attempt = heapq.heappop(heap)[2]
            if not attempt.done:  # as under asyncio.timeout: the task is canceled, the attempt ends
                attempt.expired = True
                attempt.task.cancel()
        if heap:
            self._arm(loop, heap[0][0])


async def _generate_within(target: Target, request: TargetRequest, seconds: float) -> TargetResult:
    """``target.generate(request)``, canceled after ``seconds`` (:class:`TimeoutError`), exactly as
    under ``asyncio.timeout(seconds)``."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task(loop)
    if task is None:  # not in a task (another runner's coroutine driving this one): the stdlib's way
        async with asyncio.timeout(seconds):
            return await target.generate(request)
    deadlines = AttemptDeadlines.of(loop)
    attempt = deadlines.start(loop, task, seconds)
    try:
        result = await target.generate(request)
    except asyncio.CancelledError as exc:
        if deadlines.finish(attempt):
            raise TimeoutError from exc
        raise
    except BaseException:
        deadlines.finish(attempt)
        raise
    deadlines.finish(attempt)
    return result


async def call_with_retries(
    target: Target, request: TargetRequest, policy: RetryPolicy, context: CallContext, rng: random.Random
) -> CallOutcome:
    attempt = 0
    request_ids: list[str] = []
    while True:
        attempt += 1
        transient: str | None = None
        wait_at_least = None
        clock = time.perf_counter()
        try:
            result = await _generate_within(target, request, policy.timeout)
        except TimeoutError:
            transient = f"timed out after {policy.timeout:g} s"
        except TransientTargetError as exc:
            transient, wait_at_least = str(exc), exc.retry_after
            request_ids += [exc.request_id] if exc.request_id else []
        except Exception as exc:  # a target's own bug fails this case, not the run
            result = TargetResult(error=described(exc))
        latency_ms = (time.perf_counter() - clock) * 1000
        if transient is None:
            if result.request_id:
                request_ids.append(result.request_id)
            made = attempt if result.called else attempt - 1  # an attempt that called nothing is not one
            return CallOutcome(result, latency_ms, made, tuple(request_ids))
        too_long = wait_at_least is not None and wait_at_least > RETRY_AFTER_LIMIT
        if too_long:
            transient += f"; the provider asked to retry after {wait_at_least:g} s"
        if too_long or attempt >= policy.max_attempts:
            tries = "1 attempt" if attempt == 1 else f"{attempt} attempts"
            return CallOutcome(TargetResult(error=f"{transient} ({tries})"), latency_ms, attempt, tuple(request_ids))
        await context.pause(policy.delay(attempt, wait_at_least, rng), transient)
