"""The shapes of a validated manifest's blocks (``evalsite/experiment/schema/manifest.schema.json``).

They are ``TypedDict``s, not dataclasses: a :class:`~evalsite.experiment.manifest.Manifest`
keeps each block as the mapping the file gave (``--set`` and the schema work on mappings, and
run headers record them as given), and the type says which keys the schema lets it hold. Keys
the schema does not require are ``NotRequired``: read them with ``.get``. (No ``from __future__
import annotations`` here: Python 3.11 sees ``NotRequired`` only in evaluated annotations, and
``tests/test_manifest_shapes.py`` reads the required keys at run time to compare with the schema.)
"""

from typing import Literal, NotRequired, TypeAlias, TypedDict

from evalsite.jsonshape import JSONObject, JSONValue

Level = Literal["experiment", "arm", "item", "case"]
ItemRef: TypeAlias = "str | int"  # an item id as a manifest may write it


class DatasetSpec(TypedDict, total=False):
    """``dataset``: the file and which of its items run (``path`` is required by the schema,
    but a manifest with inline ``rows`` has an empty block)."""

    path: str
    name: str
    dataset_id: str
    limit: int
    reference_tier: Literal["gold", "silver", "model"]
    split: str | list[str]
    expected_field: str


class MessageSpec(TypedDict):
    """One message of a ``prompt`` list; ``content`` is a Jinja template."""

    role: Literal["system", "user", "assistant"]
    content: str


#: ``prompt`` as a template: one string, a list of messages, or none (the row's input as is).
PromptSpec: TypeAlias = "str | list[MessageSpec] | None"


class PromptRef(TypedDict):
    """``prompt: {name, version}``: a versioned template in ``prompts/<name>.yaml``, and how it resolved."""

    name: str
    version: NotRequired[int | str]
    # once resolved (experiment.prompt_versions): the version asked for, the template's hash and file
    submitted: NotRequired[int | str]
    hash: NotRequired[str]
    path: NotRequired[str]
    resolved: NotRequired[bool]


class PriceSpec(TypedDict):
    """An arm's ``price``: US dollars per million tokens."""

    input: float
    output: float
    cache_read: NotRequired[float]
    cache_write: NotRequired[float]


class CurveSpec(TypedDict):
    """A schedule-mode sweep variable given as a curve over the trials (or a ``curves/`` file's name)."""

    curve: str
    start: NotRequired[float]
    end: NotRequired[float]
    steps: NotRequired[int]
    integer: NotRequired[bool]


class SweepSpec(TypedDict):
    """``sweep``: every arm expanded over combinations of ``variables``."""

    variables: dict[str, list[JSONValue] | CurveSpec]
    mode: NotRequired[Literal["grid", "random", "schedule"]]
    trials: NotRequired[int]
    seed: NotRequired[int]


class Coupling(TypedDict):
    """``design.couplings[i]``: one arm and the items it runs."""

    arm: str
    items: list[ItemRef]


class Vary(TypedDict):
    """``design.vary``: the axis a one-factor design varies and its values."""

    axis: Literal["arm", "item"]
    values: list[ItemRef]


class DesignSpec(TypedDict):
    """``design``: which (arm, item) cells run."""

    mode: Literal["cartesian", "coupled", "one_factor"]
    couplings: NotRequired[list[Coupling]]
    vary: NotRequired[Vary]
    pin_arms: NotRequired[list[str]]
    pin_items: NotRequired[list[ItemRef]]


class LimitsSpec(TypedDict, total=False):
    """``limits``: ceilings checked before anything is spent."""

    max_cases: int
    max_cost_usd: float
    timeout_s: float
    max_combinations: int


class ScheduleSpec(TypedDict, total=False):
    """``schedule``: how cases are executed (never what a result means)."""

    timeout_s: float
    max_attempts: int
    backoff_s: float
    max_backoff_s: float
    ordering: Literal["depth", "coverage"]
    parallel_arms: int
    pause_between_s: float
    runner: Literal["local", "ray"]
    reset_state: bool


class InfraSpec(TypedDict, total=False):
    """``emulation.infra``: how model calls are made, study-wide."""

    llm: Literal["live", "mock"]
    response: str


class EmulationSpec(TypedDict, total=False):
    """``emulation``: live or recorded calls."""

    cache: Literal["off", "record", "replay", "auto"]
    infra: InfraSpec


class LevelHooks(TypedDict, total=False):
    """``hooks.<level>``: its ``pre`` and ``post`` step lists (each a ``{ref}`` or a list of steps,
    read by :mod:`evalsite.experiment.pipeline`)."""

    pre: JSONObject | list[JSONObject]
    post: JSONObject | list[JSONObject]


class HooksSpec(TypedDict, total=False):
    """``hooks``: steps before and after each level."""

    experiment: LevelHooks
    arm: LevelHooks
    item: LevelHooks
    case: LevelHooks


ArtifactType = Literal["dataframe", "metrics", "trace", "plot"]


class ArtifactSpec(TypedDict):
    """An artifact given as ``{type, path}`` (a bare type takes the default path)."""

    type: ArtifactType
    path: NotRequired[str]


#: ``artifacts``: per level, each artifact's name and its type (or ``{type, path}``).
ArtifactsSpec: TypeAlias = "dict[str, dict[str, ArtifactType | ArtifactSpec]]"


class OutputSchemaSpec(TypedDict, total=False):
    """``output_schema``: the files (and their columns) the experiment's folder must hold."""

    required_files: list[str]
    required_columns: dict[str, list[str]]


class CheckpointSpec(TypedDict):
    """``checkpoints[i]``: a starting state (``none`` is a fresh start and has no path)."""

    id: str
    path: NotRequired[str]


#: ``models``: model slots (``main``, ``judge``, any other name) and the model each names.
ModelSlots: TypeAlias = dict[str, str]

#: ``evaluators[i]``: a registered evaluator's ``type`` and its parameters (each family reads its own).
EvaluatorSpec: TypeAlias = JSONObject
