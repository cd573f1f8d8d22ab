"""Expand a manifest into configs × items × repeats, and check limits before anything is spent."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evalsite.datasets import Dataset, Item, load_dataset
from evalsite.errors import PlanError
from evalsite.hashing import short_hash
from evalsite.manifest import Manifest
from evalsite.project import Project

DEFAULT_MAX_CASES = 5000


@dataclass(frozen=True)
class Config:
    """An arm with every parameter resolved; ``config_id`` is the hash of ``resolved``."""

    arm_id: str
    target: str
    params: dict
    price: dict | None
    settings: dict
    resolved: dict = field(hash=False)
    config_id: str = ""
    prompt_variables: dict = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Plan:
    manifest: Manifest
    dataset: Dataset
    configs: list[Config]
    repeat: int

    def case_keys(self, config: Config) -> list[tuple[Item, int]]:
        """The (item, repeat) pairs ``config`` runs; every design mode answers through here."""
        return [(item, repeat) for item in self.dataset.items for repeat in range(self.repeat)]

    @property
    def cases_per_config(self) -> int:
        return len(self.dataset.items) * self.repeat

    @property
    def total_cases(self) -> int:
        return self.cases_per_config * len(self.configs)


def make_config(arm) -> Config:
    resolved = {
        "arm_id": arm.id,
        "target": arm.target,
        "params": arm.params,
        "price": arm.price,
        "settings": arm.settings,
    }
    return Config(
        arm_id=arm.id,
        target=arm.target,
        params=arm.params,
        price=arm.price,
        settings=arm.settings,
        resolved=resolved,
        config_id=short_hash(resolved, 16),
    )


def build_plan(
    project: Project,
    manifest: Manifest,
    *,
    arm_ids: tuple[str, ...] = (),
    repeat: int | None = None,
) -> Plan:
    dataset_spec = manifest.dataset
    dataset_path = project.inside(Path(dataset_spec["path"]), "dataset")
    dataset = load_dataset(dataset_path, name=dataset_spec.get("name"), limit=dataset_spec.get("limit"))
    arms = manifest.arms
    if arm_ids:
        known = {arm.id for arm in arms}
        unknown = [arm_id for arm_id in arm_ids if arm_id not in known]
        if unknown:
            raise PlanError(
                f"{manifest.path}: unknown arm {unknown[0]!r} (arms: {', '.join(sorted(known))})"
            )
        arms = [arm for arm in arms if arm.id in arm_ids]
    plan = Plan(
        manifest=manifest,
        dataset=dataset,
        configs=[make_config(arm) for arm in arms],
        repeat=repeat or manifest.repeat,
    )
    _check_limits(plan)
    return plan


def _check_limits(plan: Plan) -> None:
    if plan.total_cases == 0:
        raise PlanError("Nothing to run: the dataset is empty")
    max_cases = plan.manifest.limits.get("max_cases", DEFAULT_MAX_CASES)
    if plan.total_cases > max_cases:
        raise PlanError(
            f"{plan.manifest.path}: the plan has {plan.total_cases} cases, more than "
            f"limits.max_cases = {max_cases}; raise the limit or narrow the plan"
        )
