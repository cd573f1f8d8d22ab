"""Cooperative stopping: why a batch stops taking new cases, and the cost ceiling it counts against."""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass, field

from evalsite.experiment.manifest import Manifest
from evalsite.runlog.records import RunStatus


@dataclass
class StopControl:
    reason: RunStatus | None = None
    workers: list[asyncio.Task[None]] = field(default_factory=list)

    def request(self, reason: RunStatus) -> None:
        if self.reason is None:
            self.reason = reason

    def requested(self) -> bool:
        return self.reason is not None

    def abandon_in_flight(self) -> None:
        for task in self.workers:
            task.cancel()


@dataclass
class Budget:
    """Cost spent by this invocation (resumed cases already on disk do not count)."""

    limit: float | None
    spent: float = 0.0

    def add(self, cost: float | None) -> bool:
        """Count ``cost``; true when the ceiling is reached. Only a finite positive cost counts
        (targets' numbers are checked before this; a NaN here would disable the ceiling for good)."""
        if cost is None or not math.isfinite(cost) or cost <= 0:
            return False
        self.spent += cost
        return self.limit is not None and self.spent >= self.limit


def manifest_ceiling(manifest: Manifest) -> float | None:
    """``limits.max_cost_usd`` (the manifest's validation pass has checked it)."""
    return manifest.limits.get("max_cost_usd")


DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h)?")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, None: 1}


def parse_duration(text: str) -> float:
    """Seconds in ``90``, ``2s``, ``30m`` or ``1.5h``; ValueError naming the value otherwise."""
    match = DURATION.fullmatch(text.strip())
    seconds = float(match[1]) * UNIT_SECONDS[match[2]] if match else 0.0
    if seconds <= 0:
        raise ValueError(f"{text!r} is not a duration > 0 such as 90, 2s, 30m or 1.5h")
    return seconds


def manifest_deadline(manifest: Manifest) -> float | None:
    """``limits.timeout_s``: seconds the whole batch may take (the schema has checked it)."""
    return manifest.limits.get("timeout_s")
