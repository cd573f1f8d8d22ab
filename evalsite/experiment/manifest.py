"""Load and validate experiment manifests (``experiments/<name>.yaml`` or ``.json``).

A manifest is read (a duplicated key is an error, not a silent overwrite), patched by
``--set KEY=VALUE`` overrides, checked against the shipped JSON Schema
(``evalsite/experiment/schema/manifest.schema.json``, the same file editors use for autocompletion) and
then against the rules a schema cannot express: arm references, ``extends`` cycles, names that
become paths, secrets written inline, template syntax. Every problem is collected before
failing; each names the file and the key path, and a misspelt key gets the closest known one.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from evalsite.errors import ManifestError, did_you_mean
from evalsite.experiment.bounded import MAX_VALUES, shape_problem
from evalsite.experiment.bounded_yaml import (
    BoundedLoader,
    DocumentTooLarge,
    DocumentUnreadable,
    YAMLBoundError,
    document_text,
    load_yaml,
    parse_document,
    yaml_problem,
)
from evalsite.experiment.checkpoints import checkpoint_problems
from evalsite.experiment.manifest_shapes import (
    ArtifactsSpec,
    CheckpointSpec,
    DatasetSpec,
    DesignSpec,
    EmulationSpec,
    EvaluatorSpec,
    HooksSpec,
    LimitsSpec,
    ModelSlots,
    OutputSchemaSpec,
    PriceSpec,
    PromptRef,
    PromptSpec,
    ScheduleSpec,
    SweepSpec,
)
from evalsite.experiment.models import fill_arms, fill_judges, slot_problems
from evalsite.experiment.overlays import apply_overlays
from evalsite.experiment.prompts import template_problems
from evalsite.experiment.safety import SAFE_NAME_RULE, is_safe_name, number_problems, secret_problems
from evalsite.experiment.schema_check import schema_problems, value_phrase
from evalsite.experiment.sweeps import sweep_problems
from evalsite.jsonshape import JSONObject

DEFAULT_CONCURRENCY = 8


@dataclass(frozen=True)
class ArmSpec:
    """An arm with ``extends`` already applied (``extends`` is kept to show where it came from)."""

    id: str
    target: str
    params: JSONObject = field(default_factory=dict)
    price: PriceSpec | None = None
    settings: JSONObject = field(default_factory=dict)
    description: str = ""
    extends: str | None = None
    model_slot: str | None = None  # the models slot the arm's model came from


@dataclass(frozen=True)
class StopRule:
    """``stop_when``: stop the batch when every pair of arms is decided (docs/reference/manifest.md#stop_when).

    Items are drawn in the order ``seed`` gives, every arm runs the same block of ``check_every``
    items, and after each block every pair's anytime-valid confidence sequence is looked at."""

    alpha: float = 0.05
    margin: float | None = 0.02
    min_items: int = 30
    max_items: int | None = None
    max_cost_usd: float | None = None
    check_every: int = 20
    seed: int = 0

    @classmethod
    def of(cls, data: JSONObject) -> StopRule:
        """The rule a validated ``stop_when`` mapping declares (its defaults filled in)."""
        return cls(**{key: value for key, value in data.items() if key != "decided"})

    def record(self) -> dict[str, Any]:
        """The rule as a run header and footer record it."""
        return {"decided": True, **vars(self)}


@dataclass(frozen=True)
class Manifest:
    """A validated manifest. ``text`` is the file as submitted; ``effective`` is the mapping
    after ``overrides`` (the ``--set`` assignments, in order) were applied."""

    path: Path
    text: str
    name: str
    description: str
    dataset: DatasetSpec
    prompt: PromptSpec
    arms: list[ArmSpec]
    evaluators: list[EvaluatorSpec]
    repeat: int = 1
    concurrency: int = DEFAULT_CONCURRENCY
    limits: LimitsSpec = field(default_factory=lambda: LimitsSpec())
    schedule: ScheduleSpec = field(default_factory=lambda: ScheduleSpec())
    rows: list[JSONObject] | None = None
    sweep: SweepSpec | None = None
    design: DesignSpec = field(default_factory=lambda: DesignSpec(mode="cartesian"))
    overrides: tuple[str, ...] = ()
    effective: JSONObject = field(default_factory=dict)
    # the study pipeline (hooks, artifacts, output checks, checkpoints, model slots, the cache)
    emulation: EmulationSpec = field(default_factory=lambda: EmulationSpec())
    hooks: HooksSpec = field(default_factory=lambda: HooksSpec())
    artifacts: ArtifactsSpec = field(default_factory=dict)
    output_schema: OutputSchemaSpec | None = None
    checkpoints: list[CheckpointSpec] | None = None
    models: ModelSlots = field(default_factory=dict)
    prompt_ref: PromptRef | None = None  # prompt: {name, version}; resolved by experiment.prompt_versions
    stop_when: StopRule | None = None  # adaptive: stop when every pair of arms is decided


# A manifest with neither ``dataset`` nor ``rows`` runs one empty row per config: a pure sweep
# over a fixed prompt. Its dataset id is that of inline rows, named after the experiment.
NO_DATASET_ROWS: list[JSONObject] = [{}]


def load_manifest(path: str | Path, overrides: Sequence[str] = ()) -> Manifest:
    """Read, patch, validate and resolve a manifest; raises one error listing every problem."""
    path = Path(path)
    text, data = read_manifest(path, overrides)
    problems = manifest_problems(data, default_name=path.stem)
    if problems:
        raise ManifestError("\n".join(f"{path}: {problem}" for problem in problems))
    return Manifest(
        path=path,
        text=text,
        name=data.get("name", path.stem),
        description=data.get("description", ""),
        # the schema checked every block's shape: each is typed as the schema describes it
        dataset=cast(DatasetSpec, _block(data, "dataset")),
        prompt=None if isinstance(data.get("prompt"), dict) else data.get("prompt"),
        prompt_ref=data["prompt"] if isinstance(data.get("prompt"), dict) else None,
        arms=fill_arms(resolve_arms(data["arms"]), data.get("models") or {}),
        evaluators=fill_judges(list(data.get("evaluators") or []), data.get("models") or {}),
        repeat=data.get("repeat", 1),
        concurrency=data.get("concurrency", DEFAULT_CONCURRENCY),
        limits=cast(LimitsSpec, _block(data, "limits")),
        schedule=cast(ScheduleSpec, _block(data, "schedule")),
        rows=data.get("rows", NO_DATASET_ROWS if "dataset" not in data else None),
        sweep=data.get("sweep"),
        design=data.get("design") or {"mode": "cartesian"},
        overrides=tuple(overrides),
        effective=data,
        emulation=cast(EmulationSpec, _block(data, "emulation")),
        hooks=cast(HooksSpec, _block(data, "hooks")),
        artifacts=_block(data, "artifacts"),
        models=_block(data, "models"),
        output_schema=data.get("output_schema"),
        checkpoints=data.get("checkpoints"),
        stop_when=StopRule.of(data["stop_when"]) if (data.get("stop_when") or {}).get("decided") else None,
    )


def _block(data: JSONObject, key: str) -> JSONObject:
    """A copy of the block ``data[key]``, empty when it is missing or null."""
    return dict(data.get(key) or {})


def read_manifest(path: Path, overrides: Sequence[str] = ()) -> tuple[str, JSONObject]:
    """The manifest's text and its mapping with ``overrides`` applied (not yet validated)."""
    text, data = read_document(path, "manifest")
    apply_overlays(data, path, read_overlay)  # the overlay files' groups, then --set
    for assignment in overrides:
        apply_override(data, assignment)
    return text, data


def read_document(path: Path, what: str) -> tuple[str, JSONObject]:
    """A manifest's (or an overlay's) text and mapping, read as untrusted input: a regular file of at
    most :data:`~bounded_yaml.MAX_DOCUMENT_BYTES`, UTF-8, strict YAML or JSON (no repeated key, bounded nesting and
    alias expansion); anything else is one :class:`ManifestError` naming ``path``."""
    if not path.is_file():
        raise ManifestError(f"{path}: not a regular file" if path.exists() else f"{path}: {what} not found")
    try:
        text = document_text(path)
    except DocumentTooLarge as exc:
        raise ManifestError(f"{path}: {exc} (put rows in a dataset file)") from None
    except DocumentUnreadable as exc:
        raise ManifestError(f"{path}: {exc}") from None
    return text, _parse(path, text, what)


def read_overlay(path: Path) -> JSONObject:
    """An overlay file's mapping, read as strictly as a manifest (:func:`read_document`)."""
    return read_document(path, "overlay")[1]


# ---- parsing -------------------------------------------------------------------------------

class _StrictLoader(BoundedLoader):
    """The bounded YAML loader, refusing a key given twice in one mapping too."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
    """The mapping as PyYAML builds it: its keys are any hashable YAML value (``1: x`` gives an
    int key, which a free-form block such as an arm's ``params`` may hold, e.g. a ``logit_bias``)."""
    first_line: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *anchor`: keys written beside it override the merged ones, as YAML intends
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, Hashable):
            break  # construct_mapping reports the unhashable key
        if key in first_line:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {first_line[key]})", key_node.start_mark
            )
        first_line[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _parse(path: Path, text: str, what: str) -> JSONObject:
    data, problem = parse_document(text, is_json=path.suffix.lower() == ".json", loader=_StrictLoader)
    if problem is None:
        problem = shape_problem(data, max_values=MAX_VALUES)  # a lone surrogate, in YAML too
    if problem is not None:
        raise ManifestError(f"{path}: {problem}")
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: a {what} must be a mapping at the top level")
    not_names = [key for key in data if not isinstance(key, str)]  # YAML allows `1: x`; a JSONObject's keys are str
    if not_names:
        listed = ", ".join(value_phrase(key) for key in not_names)
        raise ManifestError(f"{path}: each top-level key must be a name (a string), got {listed}")
    return data


# ---- --set overrides -----------------------------------------------------------------------

def apply_override(data: JSONObject, assignment: str) -> None:
    """Apply ``KEY=VALUE`` in place: ``KEY`` is a dotted path (a list step is an index or an
    element's ``id``), ``VALUE`` a YAML scalar or flow list; missing mappings are created."""
    key, equals, raw = assignment.partition("=")
    parts = key.strip().split(".")
    if not equals or not all(parts):
        raise ManifestError(f"--set {assignment!r}: expected KEY=VALUE with a dotted KEY, e.g. arms.base.params.temperature=0")
    value = _yaml_value(raw, assignment)
    if value is None:
        _remove(data, parts, assignment)
        return
    node: Any = data
    for depth in range(len(parts) - 1):
        node = _step_into(node, parts[: depth + 1], assignment)
    if isinstance(node, list):
        node[_list_index(node, parts[:-1], parts[-1], assignment)] = value
    else:
        node[parts[-1]] = value


def _remove(data: JSONObject, parts: list[str], assignment: str) -> None:
    """``KEY=null``: remove the key (a pin such as ``dataset.dataset_id`` is lifted, a limit falls
    back to its default); a key that is not there is nothing to remove, and nothing is created."""
    node: Any = data
    for depth, part in enumerate(parts[:-1]):
        if isinstance(node, dict) and part not in node:
            return
        node = _step_into(node, parts[: depth + 1], assignment)
    if isinstance(node, list):
        raise ManifestError(f"--set {assignment!r}: null removes a key; {'.'.join(parts[:-1])} is a list, "
                            "whose entries cannot be removed this way")
    node.pop(parts[-1], None)


def _step_into(node: Any, path: list[str], assignment: str) -> Any:
    """The child at the last step of ``path``, created as a mapping when missing."""
    if isinstance(node, dict):
        child = node.setdefault(path[-1], {})
    else:
        child = node[_list_index(node, path[:-1], path[-1], assignment)]
    if not isinstance(child, (dict, list)):
        raise ManifestError(f"--set {assignment!r}: {'.'.join(path)} is {value_phrase(child)}, not a mapping or a list")
    return child


def _list_index(items: list[Any], list_path: list[str], part: str, assignment: str) -> int:
    """A list step: an index, or the ``id`` of one of the list's mappings."""
    if part.isdigit() and int(part) < len(items):
        return int(part)
    ids = [str(element["id"]) if isinstance(element, dict) and "id" in element else None for element in items]
    if part in ids:
        return ids.index(part)
    known = [found for found in ids if found is not None]
    choices = f"ids: {', '.join(known)}" if known else f"indexes 0 to {len(items) - 1}"
    raise ManifestError(
        f"--set {assignment!r}: {'.'.join(list_path)} has no entry {part!r}{did_you_mean(part, known)} ({choices})"
    )


def _yaml_value(raw: str, assignment: str) -> Any:
    """``3`` → 3, ``true`` → True, ``[0, 0.5]`` → a list; anything else (``a: b``) stays text,
    except a value past the YAML loader's bounds (a list nested deeper than a manifest may be)."""
    try:
        value = load_yaml(raw)
    except YAMLBoundError as exc:
        raise ManifestError(f"--set {assignment!r}: {yaml_problem(exc)}") from None
    except yaml.YAMLError:
        return raw
    return value if value is None or isinstance(value, (str, int, float, bool, list)) else raw


# ---- validation ----------------------------------------------------------------------------

def manifest_problems(data: JSONObject, *, default_name: str) -> list[str]:
    """Every problem, as ``key.path: what is wrong``: non-finite numbers (which pass any schema
    bound) and the schema's first, then the rules'."""
    problems = number_problems(data) + schema_problems(data)
    return problems or rule_problems(data, default_name)


def rule_problems(data: JSONObject, default_name: str) -> list[str]:
    """What the schema cannot say: names, dataset xor rows, arm references, modes, secrets, templates."""
    problems = []
    if "name" not in data and not is_safe_name(default_name):
        problems.append(f"name: the file name {default_name!r} is not a safe name ({SAFE_NAME_RULE}); add a 'name'")
    if "dataset" in data and "rows" in data:
        problems.append("dataset: give either 'dataset' (a file) or 'rows' (inline), not both")
    arm_ids = [arm["id"] for arm in data["arms"]]
    problems += _arm_problems(data["arms"])
    problems += secret_problems(data)
    problems += sweep_problems(data.get("sweep"))
    problems += _design_problems(data.get("design"), arm_ids)
    if not isinstance(data.get("prompt"), dict):  # a versioned prompt is checked when it resolves
        problems += template_problems(data.get("prompt"))
    problems += checkpoint_problems(data.get("checkpoints"))
    problems += slot_problems(data)
    problems += _stop_problems(data.get("stop_when"), data.get("design"))
    return problems


def _stop_problems(rule: JSONObject | None, design: JSONObject | None) -> list[str]:
    """``stop_when``: a block no larger than the items it may use, every arm on the same items."""
    if rule is None or not rule.get("decided"):
        return []
    problems = []
    max_items = rule.get("max_items")
    if max_items is not None and max_items < rule.get("min_items", StopRule.min_items):
        problems.append(f"stop_when.max_items: {max_items} is below stop_when.min_items "
                        f"({rule.get('min_items', StopRule.min_items)}); raise max_items or lower min_items")
    mode = (design or {}).get("mode", "cartesian")
    if mode != "cartesian":
        problems.append(f"stop_when: needs every arm on the same items (design.mode: cartesian), not {mode}")
    return problems


def _arm_problems(arms: list[JSONObject]) -> list[str]:
    problems = []
    first_index: dict[str, int] = {}
    for index, arm in enumerate(arms):
        if arm["id"] in first_index:
            problems.append(f"arms[{index}].id: duplicate arm id {arm['id']!r} (also arms[{first_index[arm['id']]}])")
        first_index.setdefault(arm["id"], index)
    by_id = {arm["id"]: arm for arm in arms}
    for index, arm in enumerate(arms):
        base = arm.get("extends")
        if base is not None and base not in by_id:
            problems.append(f"arms[{index}].extends: no arm {base!r}{did_you_mean(base, list(by_id))}")
        elif base is not None and (cycle := _extends_cycle(arm["id"], by_id)):
            problems.append(f"arms[{index}].extends: a cycle {' → '.join(cycle)}")
    return problems


def _extends_cycle(arm_id: str, by_id: dict[str, JSONObject]) -> list[str] | None:
    chain = [arm_id]
    while (base := by_id.get(chain[-1], {}).get("extends")) is not None:
        if base in chain:
            return [*chain, base]
        chain.append(base)
    return None




DESIGN_KEYS = {
    "cartesian": set(),
    "coupled": {"couplings"},
    "one_factor": {"vary", "pin_arms", "pin_items"},
}


def _design_problems(design: JSONObject | None, arm_ids: list[str]) -> list[str]:
    if not design:
        return []
    mode = design["mode"]
    problems = [
        f"design.{key}: not used with mode: {mode}"
        for key in design if key != "mode" and key not in DESIGN_KEYS[mode]
    ]
    axis = design.get("vary", {}).get("axis")
    if mode == "one_factor":
        unused = "pin_arms" if axis == "arm" else "pin_items"
        if unused in design:
            problems.append(f"design.{unused}: not used when vary.axis is {axis}")
    references = [(f"design.couplings[{i}].arm", c["arm"]) for i, c in enumerate(design.get("couplings", []))]
    references += [(f"design.pin_arms[{i}]", arm) for i, arm in enumerate(design.get("pin_arms", []))]
    if axis == "arm":
        references += [(f"design.vary.values[{i}]", str(arm)) for i, arm in enumerate(design["vary"]["values"])]
    problems += [
        f"{where}: no arm {arm!r}{did_you_mean(arm, arm_ids)} (arms: {', '.join(arm_ids)})"
        for where, arm in references if arm not in arm_ids
    ]
    return problems


# ---- resolution ----------------------------------------------------------------------------

def deep_merge(base: Any, patch: Any) -> Any:
    """``patch`` over ``base``: mappings merge key by key, anything else replaces."""
    if not (isinstance(base, dict) and isinstance(patch, dict)):
        return copy.deepcopy(patch)
    merged = copy.deepcopy(base)
    for key, value in patch.items():
        merged[key] = deep_merge(merged.get(key), value)
    return merged


def resolve_arms(arms: list[JSONObject]) -> list[ArmSpec]:
    """Apply every ``extends`` (chains included); the manifest is already validated."""
    by_id = {arm["id"]: arm for arm in arms}

    def resolved(arm: JSONObject) -> JSONObject:
        if "extends" not in arm:
            return arm
        patch = {key: value for key, value in arm.items() if key not in ("id", "extends")}
        merged: JSONObject = deep_merge(resolved(by_id[arm["extends"]]), patch)
        return merged

    specs = []
    for arm in arms:
        full = resolved(arm)
        specs.append(ArmSpec(
            id=arm["id"],
            target=full["target"],
            params=copy.deepcopy(full.get("params") or {}),
            price=copy.deepcopy(full.get("price")),
            settings=copy.deepcopy(full.get("settings") or {}),
            description=full.get("description", ""),
            extends=arm.get("extends"),
        ))
    return specs
