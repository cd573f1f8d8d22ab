"""Which runs may be compared, and which run stands for each arm.

Runs are comparable only on the same ``dataset_id`` with the same evaluator versions (DESIGN.md,
honesty rules). Within such a group an arm — one (experiment, arm id, config id) — is represented by
its most recent completed, scored run; every other run is left out with the reason.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from evalsite.site.inputs import RunSource


@dataclass(frozen=True)
class LeftOut:
    run: RunSource
    reason: str


@dataclass(frozen=True)
class ComparableGroup:
    """Runs sharing a dataset and evaluator versions; ``chosen`` holds one run per arm."""

    dataset_id: str
    evaluators: tuple[tuple[str, str], ...]
    chosen: list[RunSource]

    @property
    def newest(self) -> tuple[str, str]:
        return max(run.recency for run in self.chosen)

    def describe(self) -> str:
        names = ", ".join(f"{name} {version}" for name, version in self.evaluators)
        return f"dataset {self.dataset_id}; evaluators {names}"


def arm_key(run: RunSource) -> tuple[str, str, str]:
    return (run.experiment or "", run.arm_id, run.config_id or "")


def comparable_groups(runs: list[RunSource]) -> tuple[list[ComparableGroup], list[LeftOut]]:
    """Group ``runs`` (of one dataset or many); newest group first, arms oldest first."""
    left_out: list[LeftOut] = []
    buckets: dict[tuple, list[RunSource]] = defaultdict(list)
    for run in runs:
        reason = _unusable(run)
        if reason:
            left_out.append(LeftOut(run, reason))
        else:
            buckets[(run.dataset_id, run.evaluator_versions)].append(run)
    groups = []
    for (dataset_id, evaluators), members in buckets.items():
        latest: dict[tuple, RunSource] = {}
        for run in sorted(members, key=lambda r: r.recency):
            key = arm_key(run)
            if key in latest:
                left_out.append(LeftOut(latest[key], f"an older run of the same arm and config; {run.run_id} is newer"))
            latest[key] = run
        groups.append(ComparableGroup(dataset_id, evaluators, sorted(latest.values(), key=lambda r: r.recency)))
    groups.sort(key=lambda g: g.newest, reverse=True)
    left_out.sort(key=lambda item: item.run.recency)
    return groups, left_out


def _unusable(run: RunSource) -> str | None:
    if not run.dataset_id:
        return "its run.json names no dataset_id"
    if run.status != "completed":
        return f"status {run.status}" + (" (no end.json)" if run.end is None else "")
    if not run.evaluator_versions:
        return "unscored: the run has no evaluators"
    return None
