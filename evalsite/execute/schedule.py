"""How a batch walks its matrix: ordering, parallel arms, a pause between cases. Never part of the
fingerprint: it changes how fast and in which order the same cells are collected, not what
they mean.

* ``ordering: depth`` (default): arm by arm, each run walking its items in dataset order;
  ``parallel_arms: N`` runs N arms at once, each with its own ``concurrency``.
* ``ordering: coverage``: every arm's run is open at once and cases are handed out item by item
  across the arms (every arm gets item 1, repeat 0 before any gets the next), by
  ``concurrency × parallel_arms`` workers with at most ``concurrency`` cases of one arm in flight.
* ``pause_between_s``: each worker waits this long after a case before taking the next.
* ``reset_state: true``: every case gets a target of its own, built for it and closed after it
  (a new HTTP client: no connections or cookies from another case; a ``python:`` target's module,
  and a tool handler's, executed anew), so nothing one case leaves in the target reaches another,
  whatever the order or the concurrency; the turns and retries of one case share it. Default
  ``false``: one target per run, shared by its cases.

Whatever the ordering, the workers take cases from a :class:`CaseQueue`, one batch (at least as
many cases as there are workers) at a time, and every finished case is made durable before the
next batch is handed out (docs/reference/run-format.md#durability).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

ORDERINGS = ("depth", "coverage")
SYNC_SHARE = 0.05  # at most this share of the time between batches goes to the batch's fsync
MAX_BATCH = 4096


@dataclass(frozen=True)
class Schedule:
    ordering: str = "depth"
    parallel_arms: int = 1
    pause_between_s: float = 0.0
    reset_state: bool = False

    @classmethod
    def of(cls, schedule: Mapping[str, Any], *, paired: bool = False) -> Schedule:
        """The manifest's schedule; ``paired`` (``stop_when``) walks every arm together (coverage)."""
        return cls("coverage" if paired else schedule.get("ordering", "depth"), schedule.get("parallel_arms", 1),
                   float(schedule.get("pause_between_s", 0.0)), schedule.get("reset_state", False))

    def record(self) -> dict[str, Any]:
        return {"ordering": self.ordering, "parallel_arms": self.parallel_arms, "pause_between_s": self.pause_between_s,
                "reset_state": self.reset_state}

    def groups(self, jobs: list[Any]) -> list[list[Any]]:
        """The jobs walked through one queue: each alone (depth), or all together (coverage)."""
        return [list(jobs)] if self.ordering == "coverage" and jobs else [[job] for job in jobs]

    def group_parallelism(self) -> int:
        """How many groups run at once."""
        return 1 if self.ordering == "coverage" else self.parallel_arms

    def workers(self, concurrency: int, runs: int) -> int:
        """Workers of one group's queue: a run's concurrency, times the arms walked together."""
        return concurrency * (min(self.parallel_arms, runs) if self.ordering == "coverage" else 1)


def pending_in_walk_order(states: list[Any]) -> list[tuple[Any, ...]]:
    """``(state, item, repeat)`` for every pending case: one run's in its own order, several runs'
    interleaved by item position, then repeat, then arm (coverage)."""
    if len(states) == 1:
        return [(states[0], item, repeat) for item, repeat in states[0].pending]
    position: dict[str, int] = {}
    for state in states:
        for item, _ in state.keys:
            position.setdefault(item.item_id, len(position))
    entries = [(position[item.item_id], repeat, index, state, item)
               for index, state in enumerate(states) for item, repeat in state.pending]
    entries.sort(key=lambda e: e[:3])
    return [(state, item, repeat) for _, repeat, _, state, item in entries]


class CaseQueue:
    """The pending cases, handed out one at a time and opened a batch at a time.

    Before the first case of a batch is taken, ``sync`` is awaited (the runner fsyncs its open
    runs there, in a thread), so every case that finished before a batch was scheduled is durable
    before that batch calls anything; the workers already calling go on meanwhile. A batch starts
    as ``batch_size`` cases (the workers) and doubles while syncing takes more than
    ``SYNC_SHARE`` of the time between batches (a slow disk, instant targets), halving back when
    it takes under a quarter of that: waiting on the disk stays a small share of the run.
    """

    def __init__(self, entries: list[tuple[Any, ...]], batch_size: int, sync: Callable[[], Awaitable[None]],
                 clock: Callable[[], float] = time.monotonic):
        self._entries = entries
        self._smallest = self.batch_size = max(1, batch_size)
        self._sync = sync
        self._clock = clock
        self._next = self._batch_end = 0
        self._opened_at = clock()
        self._opening: asyncio.Future[None] | None = None
        self.batches = 0

    async def take(self) -> tuple[Any, ...] | None:
        """The next case, or None when every case has been taken."""
        while self._next == self._batch_end:
            if self._batch_end == len(self._entries):
                return None
            if self._opening is None:
                self._opening = asyncio.ensure_future(self._open_batch())
            await asyncio.shield(self._opening)  # one sync per batch, however many workers wait
        entry = self._entries[self._next]
        self._next += 1
        return entry

    async def drain(self) -> None:
        """Wait for a sync in progress (the run's files must not be closed under it)."""
        if self._opening is not None:
            await asyncio.gather(self._opening, return_exceptions=True)

    async def _open_batch(self) -> None:
        started = self._clock()
        try:
            await self._sync()
        finally:
            self._opening = None
        self._resize(self._clock() - started, started - self._opened_at)
        self._opened_at = self._clock()
        self._batch_end = min(len(self._entries), self._batch_end + self.batch_size)
        self.batches += 1

    def _resize(self, sync_s: float, batch_s: float) -> None:
        if self.batches == 0:
            return  # the first batch had nothing to sync and no time to measure
        if sync_s > SYNC_SHARE * batch_s:
            self.batch_size = min(self.batch_size * 2, MAX_BATCH)
        elif sync_s < SYNC_SHARE / 4 * batch_s:
            self.batch_size = max(self.batch_size // 2, self._smallest)
