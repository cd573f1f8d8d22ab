"""Expand a manifest into configs × items × repeats, and check limits before anything is spent.

A config is an arm after sweep expansion: a sweep over ``model``, ``temperature`` or
``max_tokens`` replaces that parameter of every arm (it never multiplies arms); any other sweep
variable becomes a prompt variable. The design mode picks which (config, item) cells run, and
:meth:`Plan.case_keys` is the one place every part of evalsite asks which cases a config has.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalsite.errors import EvalsiteError, PlanError, did_you_mean, listed
from evalsite.experiment.checkpoints import Checkpoint, resolve_checkpoints
from evalsite.experiment.datasets import Dataset, Item, inline_dataset, item_split, load_dataset, select_items
from evalsite.experiment.item_checkpoints import item_checkpoint, overridden_warning
from evalsite.experiment.locks import changes_since_lock, declared_tier
from evalsite.experiment.manifest import ArmSpec, Manifest
from evalsite.experiment.manifest_shapes import ItemRef, PriceSpec
from evalsite.experiment.prompt_versions import with_resolved_prompt
from evalsite.experiment.prompts import render_input
from evalsite.experiment.shards import Shard
from evalsite.experiment.sweeps import schedule_trials
from evalsite.jsonshape import JSONObject, JSONValue
from evalsite.project import Project, cwd_relative
from evalsite.runlog.hashing import canonical_json, short_hash
from evalsite.runlog.secrets import redact_secrets

DEFAULT_MAX_CASES = 5000
DEFAULT_MAX_COMBINATIONS = 500
MODEL_PARAMS = ("model", "temperature", "max_tokens")


@dataclass(frozen=True)
class Config:
    """An arm with every parameter resolved; ``config_id`` is the hash of ``resolved``.

    ``sweep`` is the sweep combination that made this config (empty without a sweep); several
    configs share an ``arm_id`` when the manifest has a sweep, so group by ``config_id``.
    """

    arm_id: str
    target: str
    params: JSONObject
    price: PriceSpec | None
    settings: JSONObject
    resolved: JSONObject = field(hash=False)
    config_id: str = ""
    prompt_variables: JSONObject = field(default_factory=dict, hash=False)
    sweep: JSONObject = field(default_factory=dict, hash=False)
    checkpoint: JSONObject | None = field(default=None, hash=False)  # {id, path} as the target gets it

    @property
    def label(self) -> str:
        """``arm`` or ``arm model=x temperature=0.5`` (``checkpoint=id`` on a checkpoint axis)."""
        checkpoint = [f"checkpoint={self.checkpoint['id']}"] if self.checkpoint else []
        return " ".join([self.arm_id, *(f"{name}={value}" for name, value in self.sweep.items()), *checkpoint])


@dataclass(frozen=True)
class Plan:
    """``dataset`` holds the items selected by ``dataset.split``/``limit`` (its id is theirs);
    ``file_dataset_id`` is the whole file's id. ``item_selection`` maps an arm to the item ids
    the design gives it; ``None`` means every arm runs every item (cartesian). ``shard`` keeps
    one shard's share of those cells (evalsite.experiment.shards)."""

    manifest: Manifest
    dataset: Dataset
    configs: list[Config]
    repeat: int
    item_selection: dict[str, frozenset[str]] | None = None
    file_dataset_id: str = ""
    reference_tier: str | None = None  # the expected values' provenance (experiment.locks)
    shard: Shard | None = None  # --shard K/N: only the (config, item) cells of that shard
    depth: str = "experiment"  # --depth LEVEL: the outermost study level whose post steps run
    #: item id → {id, path} of its own inputs.checkpoint.load (none on a checkpoint axis, which wins)
    item_checkpoints: dict[str, JSONObject] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()  # what the plan tells the user before anything is spent

    def items_for(self, config: Config) -> list[Item]:
        if self.item_selection is None:
            items = self.dataset.items
        else:
            chosen = self.item_selection.get(config.arm_id, frozenset())
            items = [item for item in self.dataset.items if item.item_id in chosen]
        if self.shard is None:
            return items
        return [item for item in items if self.shard.holds(config.config_id, item.item_id)]

    def case_keys(self, config: Config) -> list[tuple[Item, int]]:
        """The (item, repeat) pairs ``config`` runs; every design mode answers through here."""
        return [(item, repeat) for item in self.items_for(config) for repeat in range(self.repeat)]

    def cases_for(self, config: Config) -> int:
        return len(self.items_for(config)) * self.repeat

    def totals(self, config: Config) -> JSONObject:
        """What one config's run records as its plan."""
        return {"items": len(self.items_for(config)), "repeat": self.repeat, "cases": self.cases_for(config)}

    @property
    def total_cases(self) -> int:
        return sum(self.cases_for(config) for config in self.configs)


def make_config(arm: ArmSpec, combination: JSONObject | None = None, checkpoint: Checkpoint | None = None,
                trial: int | None = None) -> Config:
    """``arm`` with a sweep combination applied (model parameters replace the arm's own), from
    ``checkpoint`` when the manifest has a checkpoint axis; ``trial`` numbers a schedule's trials,
    so equal values on two trials stay two configs."""
    combination = combination or {}
    params = {**arm.params, **{k: v for k, v in combination.items() if k in MODEL_PARAMS}}
    prompt_variables = {k: v for k, v in combination.items() if k not in MODEL_PARAMS}
    resolved: dict[str, Any] = {
        "arm_id": arm.id,
        "target": arm.target,
        "params": params,
        "price": arm.price,
        "settings": arm.settings,
        "prompt_variables": prompt_variables,
    }
    if checkpoint is not None:
        resolved["checkpoint"] = checkpoint.resolved
    if trial is not None:
        resolved["trial"] = trial
    if arm.model_slot is not None:
        resolved["model_slot"] = arm.model_slot
    return Config(
        arm_id=arm.id,
        target=arm.target,
        params=params,
        price=arm.price,
        settings=arm.settings,
        resolved=resolved,
        config_id=short_hash(redact_secrets(resolved), 16),  # a rotated password is the same config
        prompt_variables=prompt_variables,
        sweep=dict(combination) if trial is None else {"trial": trial, **combination},
        checkpoint=None if checkpoint is None else checkpoint.request,
    )


def build_plan(
    project: Project,
    manifest: Manifest,
    *,
    arm_ids: tuple[str, ...] = (),
    repeat: int | None = None,
    item_ids: tuple[str, ...] = (),
) -> Plan:
    """Everything a run will do, checked: dataset (and its pin), arms, sweep, design, limits,
    target kinds, and that every case's input renders."""
    manifest = with_resolved_prompt(project.root, manifest)
    whole = manifest_dataset(project, manifest)
    part = selected_part(manifest, whole)
    arms = _chosen_arms(manifest, arm_ids)
    selection = design_selection(manifest, part)  # a design may name items --item leaves out
    dataset = _chosen_items(manifest, part, item_ids)
    if selection is not None:
        arms = [arm for arm in arms if arm.id in selection]
    limits = manifest.limits
    max_combinations = limits.get("max_combinations", DEFAULT_MAX_COMBINATIONS)
    checkpoints = resolve_checkpoints(project.root, manifest)
    if manifest.sweep and manifest.sweep.get("mode") == "schedule":
        trials = schedule_trials(project.root, manifest.path, manifest.sweep)
        _check_combinations(manifest, len(trials), max_combinations)
        configs = [make_config(arm, values, checkpoint, trial)
                   for arm in arms for trial, values in enumerate(trials) for checkpoint in checkpoints]
    else:
        combinations = sweep_combinations(manifest, max_combinations)
        configs = [make_config(arm, combination, checkpoint)
                   for arm in arms for combination in combinations for checkpoint in checkpoints]
    plan = Plan(manifest, dataset, configs, repeat or manifest.repeat, selection, whole.dataset_id,
                _reference_tier(manifest, whole))
    plan = _with_item_checkpoints(project, plan, checkpoints != [None])
    _check_not_empty(plan, whole)
    _check_distinct(plan)
    _check_max_cases(plan)
    _check_inputs(plan)
    return plan


def selected_part(manifest: Manifest, dataset: Dataset) -> Dataset:
    """The items the manifest's ``dataset.split`` and ``dataset.limit`` select."""
    spec = manifest.dataset or {}
    return replace(dataset, items=select_items(dataset.items, split=spec.get("split"), limit=spec.get("limit")))


def manifest_dataset(project: Project, manifest: Manifest) -> Dataset:
    """The whole dataset a manifest names (file or inline rows), refused if its pin no longer holds."""
    if manifest.rows is not None:
        return inline_dataset(manifest.rows, name=manifest.name, source=manifest.path)
    spec = manifest.dataset
    path = cwd_relative(project.inside(Path(spec["path"]), "dataset"))
    dataset = load_dataset(path, name=spec.get("name"), expected_field=spec.get("expected_field", "expected"))
    pin = spec.get("dataset_id")
    if pin is not None and pin != dataset.dataset_id:
        raise PlanError(f"{manifest.path}: dataset.dataset_id pins {pin} but {spec['path']} is now "
                        f"{dataset.dataset_id}{_lock_detail(dataset)}; refusing to run on a changed dataset")
    return dataset


def _reference_tier(manifest: Manifest, dataset: Dataset) -> str | None:
    if manifest.rows is not None:
        return None
    return declared_tier(dataset.path, manifest.dataset.get("reference_tier"), str(manifest.path))


def _lock_detail(dataset: Dataset) -> str:
    changes = changes_since_lock(dataset)
    if not changes:
        return ""
    shown = listed(changes, 5, "; ")
    return f" (since its lock: {shown})"


def _chosen_arms(manifest: Manifest, arm_ids: tuple[str, ...]) -> list[ArmSpec]:
    known = [arm.id for arm in manifest.arms]
    unknown = [arm_id for arm_id in arm_ids if arm_id not in known]
    if unknown:
        raise PlanError(
            f"{manifest.path}: unknown arm {unknown[0]!r}{did_you_mean(unknown[0], known)} (arms: {', '.join(known)})"
        )
    return [arm for arm in manifest.arms if not arm_ids or arm.id in arm_ids]


def _with_item_checkpoints(project: Project, plan: Plan, axis: bool) -> Plan:
    """The items' own ``inputs.checkpoint.load`` (checked to exist), unless an axis overrides them (warned)."""
    items = plan.dataset.items
    if axis:
        warning = overridden_warning([(item.item_id, item.row) for item in items], plan.manifest.checkpoints)
        return replace(plan, warnings=(*plan.warnings, warning)) if warning else plan
    own = {item.item_id: item_checkpoint(project.root, item.row, f"{plan.dataset.path}: item {item.item_id!r}")
           for item in items}
    return replace(plan, item_checkpoints={item_id: found for item_id, found in own.items() if found})


def _chosen_items(manifest: Manifest, dataset: Dataset, item_ids: tuple[str, ...]) -> Dataset:
    """``run --item``: only these items (of those ``dataset.split``/``limit`` selected), in dataset
    order; the run's dataset id is theirs, as for ``limit``."""
    if not item_ids:
        return dataset
    known = [item.item_id for item in dataset.items]
    unknown = [item_id for item_id in item_ids if item_id not in set(known)]
    if unknown:
        shown = ", ".join(known[:10]) + (f", … ({len(known)} items)" if len(known) > 10 else "")
        raise PlanError(f"{manifest.path}: --item {unknown[0]!r}: no such item{did_you_mean(unknown[0], known)} "
                        f"(items: {shown})")
    chosen = set(item_ids)
    return replace(dataset, items=[item for item in dataset.items if item.item_id in chosen])


def sweep_combinations(manifest: Manifest, max_combinations: int) -> list[JSONObject]:
    """Grid: every combination, last variable fastest. Random: ``trials`` distinct combinations
    drawn with ``seed`` (default 0), listed in grid order. Without a sweep: one empty combination."""
    sweep = manifest.sweep
    if not sweep:
        return [{}]
    # every variable is a list here: a curve is refused outside schedule mode (sweep_problems)
    variables = {name: values for name, values in sweep["variables"].items() if isinstance(values, list)}
    size = math.prod(len(values) for values in variables.values())
    random_mode = sweep.get("mode", "grid") == "random"
    wanted = sweep["trials"] if random_mode else size
    if random_mode and wanted > size:
        raise PlanError(f"{manifest.path}: sweep.trials = {wanted} but the variables make only {size} "
                        "combinations; use mode: grid")
    _check_combinations(manifest, wanted, max_combinations)
    indexes = _draw(size, wanted, sweep.get("seed", 0)) if random_mode else range(size)
    return [_combination(variables, index) for index in indexes]


def _check_combinations(manifest: Manifest, wanted: int, max_combinations: int) -> None:
    if wanted > max_combinations:
        raise PlanError(f"{manifest.path}: the sweep makes {wanted} combinations, more than "
                        f"limits.max_combinations = {max_combinations}; raise the limit or sweep fewer values")


def _draw(size: int, wanted: int, seed: int) -> list[int]:
    """``wanted`` distinct grid positions below ``size`` (which may be astronomically large)."""
    rng = random.Random(seed)
    chosen: set[int] = set()
    while len(chosen) < wanted:
        chosen.add(rng.randrange(size))
    return sorted(chosen)


def _combination(variables: dict[str, list[JSONValue]], index: int) -> JSONObject:
    chosen = {}
    for name, values in reversed(variables.items()):
        index, position = divmod(index, len(values))
        chosen[name] = values[position]
    return {name: chosen[name] for name in variables}


def design_selection(manifest: Manifest, dataset: Dataset) -> dict[str, frozenset[str]] | None:
    """Arm id → the item ids it runs, from the design mode; ``None`` for cartesian."""
    design = manifest.design
    if design["mode"] == "cartesian":
        return None
    if design["mode"] == "coupled":
        chosen: dict[str, set[str]] = {}
        for index, coupling in enumerate(design["couplings"]):
            ids = _known_items(manifest, dataset, coupling["items"], f"design.couplings[{index}].items")
            chosen.setdefault(coupling["arm"], set()).update(ids)
        return {arm: frozenset(ids) for arm, ids in chosen.items()}
    vary = design["vary"]
    if vary["axis"] == "item":
        ids = _known_items(manifest, dataset, vary["values"], "design.vary.values")
        return {arm: ids for arm in design["pin_arms"]}
    ids = _known_items(manifest, dataset, design["pin_items"], "design.pin_items")
    return {str(arm): ids for arm in vary["values"]}


def _known_items(manifest: Manifest, dataset: Dataset, values: list[ItemRef], where: str) -> frozenset[str]:
    known = {item.item_id for item in dataset.items}
    for value in map(str, values):
        if value not in known:
            raise PlanError(f"{manifest.path}: {where}: no item {value!r}{did_you_mean(value, sorted(known))} "
                            f"among the {len(known)} items selected from {dataset.path}")
    return frozenset(map(str, values))


def _check_not_empty(plan: Plan, whole: Dataset) -> None:
    if plan.total_cases:
        return
    if not whole.items:
        raise PlanError(f"Nothing to run: the dataset is empty ({whole.path} has no rows)")
    split = plan.manifest.dataset.get("split")
    if not plan.dataset.items and split is not None:
        found = sorted({s for s in map(item_split, whole.items) if s is not None})
        raise PlanError(f"Nothing to run: no item of {whole.path} has metadata.split {split!r} "
                        f"(splits found: {', '.join(found) or 'none'})")
    raise PlanError(f"Nothing to run: the design gives none of the chosen arms an item ({plan.manifest.path})")


def _check_distinct(plan: Plan) -> None:
    """Arms that differ only in what the sweep replaces would run the same config twice.

    Arms that are identical to begin with are allowed: an A/A pair measures noise."""
    arm_content = {
        arm.id: canonical_json([arm.target, arm.params, arm.price, arm.settings]) for arm in plan.manifest.arms
    }
    seen: dict[str, Config] = {}
    for config in plan.configs:
        first = seen.setdefault(canonical_json({**config.resolved, "arm_id": None}), config)
        if arm_content[first.arm_id] != arm_content[config.arm_id]:
            raise PlanError(
                f"{plan.manifest.path}: arms {first.arm_id!r} and {config.arm_id!r} become the same config once "
                f"the sweep sets {', '.join(config.sweep)}; drop one of them or that sweep variable"
            )


def _check_max_cases(plan: Plan) -> None:
    max_cases = plan.manifest.limits.get("max_cases", DEFAULT_MAX_CASES)
    if plan.total_cases > max_cases:
        raise PlanError(
            f"{plan.manifest.path}: the plan has {plan.total_cases} cases, more than "
            f"limits.max_cases = {max_cases}; raise the limit or narrow the plan"
        )


def rendered_inputs(plan: Plan, config: Config) -> Iterator[tuple[Item, Any]]:
    """``(item, rendered input)`` per item of ``config``; a ``turns`` row (replayed turn by turn)
    renders to ``None``. A template that cannot render is a :class:`PlanError` naming the item."""
    for item in plan.items_for(config):
        if "turns" in item.row:
            yield item, None
            continue
        try:
            yield item, render_input(plan.manifest.prompt, item.row, config.prompt_variables)
        except EvalsiteError as exc:
            raise PlanError(f"{plan.manifest.path}: item {item.item_id!r} of {plan.dataset.path}: {exc.message}") from None


def _check_inputs(plan: Plan) -> None:
    for config in plan.configs:
        for _ in rendered_inputs(plan, config):
            pass
