"""Cooperative stopping: why a batch stops taking new cases, and the cost ceiling it counts against."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalsite.execute.cache import HIT
from evalsite.experiment.manifest import Manifest
from evalsite.experiment.plan import Config
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
    """Cost spent by this invocation (resumed cases already on disk do not count), and, once a
    case's cost could not be counted against the ceiling, why (``unknown``)."""

    limit: float | None
    spent: float = 0.0
    unknown: str | None = None

    def add(self, cost: float | None) -> bool:
        """Count ``cost``; true when the ceiling is reached. Only a finite positive cost counts
        (targets' numbers are checked before this; a NaN here would disable the ceiling for good)."""
        if cost is None or not math.isfinite(cost) or cost <= 0:
            return False
        self.spent += cost
        return self.reached()

    def reached(self) -> bool:
        return self.limit is not None and self.spent >= self.limit

    def count_case(self, case: Mapping[str, Any], config: Config) -> bool:
        """Check a recorded case, whose calls were counted as they returned (the batch's
        :class:`~evalsite.calls.context.CallContext`); true when the batch must stop: the ceiling
        is reached, or the case's cost is one the ceiling cannot count (:func:`uncounted_cost`)."""
        if self.limit is not None and self.unknown is None:
            self.unknown = uncounted_cost(case, config)
        return self.reached() or self.unknown is not None

    def record(self) -> dict[str, Any]:
        """``end.json``'s ``cost_ceiling``."""
        return {"max_cost_usd": self.limit, "spent_usd": self.spent, **({"unknown_cost": self.unknown} if self.unknown else {})}


def uncounted_cost(case: Mapping[str, Any], config: Config) -> str | None:
    """Why a ceiling cannot count ``case``'s cost, else None: its arm has a ``price`` above 0 (its
    cost is tokens × price), its target answered (no error, not a cache hit, a target that makes calls)
    and yet its cost is unknown — the provider sent no usable token count (none, ``12.5``, NaN,
    ``"12"``) or tokens × price is out of range. Counting it as 0 would let the run spend past the
    ceiling unseen, so the batch stops (docs/reference/commands/run.md#cost-ceiling). A failed
    generation counts the cost it recorded, or nothing; an arm without a price is not counted,
    as the dry run and the run's warnings say."""
    if (not any((config.price or {}).values()) or case.get("cost_usd") is not None or case.get("error")
            or case.get("cache") == HIT or config.target.partition(":")[0] == "none"):
        return None
    tokens = ", ".join(f"{key}={case.get(key)}" for key in ("input_tokens", "output_tokens"))
    return (f"{config.arm_id}: the cost of item {case.get('item_id')!r} (repeat {case.get('repeat')}) is unknown "
            f"({tokens} from its target), so the ceiling cannot count it")


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
