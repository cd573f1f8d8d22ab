"""Cooperative stopping: why a batch stops taking new cases, and the cost ceiling it counts against."""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from evalsite.experiment.manifest import Manifest


@dataclass
class StopControl:
    reason: str | None = None
    workers: list[asyncio.Task] = field(default_factory=list)

    def request(self, reason: str) -> None:
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
