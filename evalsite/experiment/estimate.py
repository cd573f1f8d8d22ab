"""What a plan would cost, before anything is spent: calls, tokens and dollars per config, per arm
and in total (``evalsite run --dry-run``).

Token counts are an estimate, not a measurement: every text counts characters / 4, rounded up
(no tokenizer). Input tokens come from each case's rendered input (message contents summed).
Output tokens come from ``params.max_tokens`` when the arm sets it (an upper bound), else from
the length of the row's expected answer, else they are unknown: counted as 0 and reported as
``unknown_output_calls``. A ``turns`` row is a replay: call k sends every turn up to the k-th user
turn plus the k-1 replies before it. The ``none`` target makes no calls. Cost is tokens × the
arm's ``price`` (US dollars per million input/output tokens); an arm without one has an unknown
cost, left out of the total and named in ``unpriced_arms``. Prompt-cache hits cannot be known
before the calls, so every input token is priced at ``price.input`` (``cache_read`` and
``cache_write`` apply to the measured counts of a real run only).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from evalsite.experiment.manifest_shapes import PriceSpec
from evalsite.experiment.plan import Config, Plan, rendered_inputs
from evalsite.jsonshape import JSONObject
from evalsite.runlog.hashing import canonical_json

CHARS_PER_TOKEN = 4
METHOD = {
    "tokens": "characters / 4, rounded up",
    "input_tokens": "from each case's rendered input",
    "output_tokens": "params.max_tokens if set, else the expected answer's length, else unknown (0)",
    "cost_usd": ("tokens x the arm's price per million (every input token at price.input: prompt-cache hits "
                 "are not predicted); arms without a price are left out"),
}


@dataclass(frozen=True)
class Workload:
    cases: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    unknown_output_calls: int = 0

    def __add__(self, other: Workload) -> Workload:
        return Workload(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def times(self, factor: int) -> Workload:
        return Workload(*(getattr(self, f.name) * factor for f in fields(self)))


@dataclass(frozen=True)
class ConfigEstimate:
    config: Config
    estimate: Workload

    @property
    def cost_usd(self) -> float | None:
        return cost_usd(self.config.price, self.estimate)


@dataclass(frozen=True)
class PlanEstimate:
    configs: list[ConfigEstimate]
    max_cost_usd: float | None = None

    def by_arm(self) -> list[JSONObject]:
        arms: dict[str, list[ConfigEstimate]] = {}
        for entry in self.configs:
            arms.setdefault(entry.config.arm_id, []).append(entry)
        return [_row(arm_id, entries) for arm_id, entries in arms.items()]

    def total(self) -> JSONObject:
        row = _row("total", self.configs)
        unpriced = [arm["arm"] for arm in self.by_arm() if arm["cost_usd"] is None]
        priced = [entry.cost_usd for entry in self.configs if entry.cost_usd is not None]
        return {**row, "cost_usd": sum(priced) if priced else (0.0 if not unpriced else None), "unpriced_arms": unpriced}

    @property
    def over_max_cost(self) -> bool:
        cost = self.total()["cost_usd"]
        return self.max_cost_usd is not None and cost is not None and cost > self.max_cost_usd

    def to_json(self) -> JSONObject:
        return {
            "method": METHOD,
            "arms": self.by_arm(),
            "configs": [
                {"arm": e.config.arm_id, "label": e.config.label, "config_id": e.config.config_id,
                 **asdict(e.estimate), "cost_usd": e.cost_usd}
                for e in self.configs
            ],
            "total": self.total(),
            "max_cost_usd": self.max_cost_usd,
            "over_max_cost": self.over_max_cost,
        }


def _row(name: str, entries: list[ConfigEstimate]) -> JSONObject:
    summed = sum((entry.estimate for entry in entries), Workload())
    known = [entry.cost_usd for entry in entries if entry.cost_usd is not None]
    cost = sum(known) if len(known) == len(entries) else None
    return {"arm": name, "configs": len(entries), **asdict(summed), "cost_usd": cost}


def cost_usd(price: PriceSpec | None, estimate: Workload) -> float | None:
    """Dollars for ``estimate``: known to be 0 without calls, unknown without a price."""
    if estimate.calls == 0:
        return 0.0
    if price is None:
        return None
    return (estimate.input_tokens * price["input"] + estimate.output_tokens * price["output"]) / 1e6


def estimate_plan(plan: Plan) -> PlanEstimate:
    entries = [ConfigEstimate(config, _config_estimate(plan, config)) for config in plan.configs]
    return PlanEstimate(entries, plan.manifest.limits.get("max_cost_usd"))


def _config_estimate(plan: Plan, config: Config) -> Workload:
    total = Workload()
    for item, rendered in rendered_inputs(plan, config):
        total += _case(config, item.row, rendered)
    return total.times(plan.repeat)


def _case(config: Config, row: JSONObject, rendered: Any) -> Workload:
    if config.target.partition(":")[0] == "none":
        return Workload(cases=1)
    max_tokens = config.params.get("max_tokens")
    if rendered is None:
        return _replay(row, max_tokens)
    output = _output_tokens(max_tokens, row.get("expected"))
    return Workload(1, 1, tokens(_length(rendered)), output or 0, int(output is None))


def _replay(row: JSONObject, max_tokens: int | None) -> Workload:
    expected = row.get("expected")
    history_chars = replies = asked = 0
    total = Workload(cases=1)
    for turn in row["turns"]:
        history_chars += _length(turn if isinstance(turn, str) else turn.get("content"))
        if isinstance(turn, dict) and turn.get("role") != "user":
            continue
        output = _output_tokens(max_tokens, expected[asked] if isinstance(expected, list) else expected)
        total += Workload(0, 1, tokens(history_chars) + replies, output or 0, int(output is None))
        replies += output or 0
        asked += 1
    return total


def _output_tokens(max_tokens: int | None, expected: Any) -> int | None:
    if max_tokens is not None:
        return max_tokens
    return None if expected is None else tokens(_length(expected))


def tokens(characters: int) -> int:
    return math.ceil(characters / CHARS_PER_TOKEN)


def _length(value: Any) -> int:
    """Characters of a text, or of a message list's contents."""
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_length(part["content"] if isinstance(part, dict) and "content" in part else part) for part in value)
    return len(canonical_json(value))
