"""Splitting one experiment over N machines: ``evalsite run M --shard K/N``.

A shard holds the (config, item) cells whose hash falls in its slot, so N machines given the
same manifest split it the same way without talking to each other, and every repeat of an item
stays on one machine. Their runs agree on a batch id derived from what the plan runs — the
resolved configs, the dataset id, the repeats — and an optional ``--batch NAME``, so
``evalsite merge`` can put the shards of a batch back together (evalsite.execute.merge).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalsite.errors import PlanError
from evalsite.jsonshape import JSONObject
from evalsite.runlog.hashing import short_hash

if TYPE_CHECKING:
    from evalsite.experiment.plan import Plan

_SHARD = re.compile(r"^(\d{1,9})/(\d{1,9})$")  # (a count of more digits is no split; int() would refuse 4,300)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based, as CI matrices and array jobs number them)."""

    index: int
    count: int

    def holds(self, config_id: str, item_id: str) -> bool:
        digest = hashlib.sha256(f"{config_id}\0{item_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def record(self) -> JSONObject:
        return {"index": self.index, "count": self.count}

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``K/N`` with 1 <= K <= N, or a PlanError naming the value."""
    match = _SHARD.match(text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise PlanError(f"--shard {text!r}: expected K/N with 1 <= K <= N, e.g. 2/3")
    return Shard(int(match.group(1)), int(match.group(2)))


def plan_batch_id(plan: Plan, name: str | None = None) -> str:
    """The batch id every shard of this plan derives alike: ``batch-<name>-<hash>``.

    The hash covers the resolved configs, the dataset id, the repeats, the shard count and the
    name, so another manifest, dataset, repeat count or split never shares it."""
    identity = {
        "configs": sorted((config.config_id, config.resolved) for config in plan.configs),
        "dataset_id": plan.dataset.dataset_id,
        "repeat": plan.repeat,
        "shards": plan.shard.count if plan.shard else 1,
        "name": name,
    }
    label = re.sub(r"[^A-Za-z0-9_.-]+", "-", name or plan.manifest.name).strip("-") or "batch"
    return f"batch-{label}-{short_hash(identity)}"
