"""The study pipeline's spec: hooks (steps before and after each level), artifacts, output checks.

Four levels, outermost first: ``experiment`` (one ``evalsite run``), ``arm`` (one run of one
config), ``item`` (one item within a run, all its repeats) and ``case`` (one item × repeat).
Each has ``pre`` and ``post`` step lists and declared artifacts. This module reads and checks
the manifest's ``hooks``/``artifacts``/``output_schema`` (step files named by ``ref`` are read
relative to the project root); executing the steps is ``evalsite.execute.hooks``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml

from evalsite.errors import ManifestError
from evalsite.experiment.bounded_yaml import DocumentUnreadable, document_text, load_yaml, yaml_problem
from evalsite.experiment.manifest import Manifest
from evalsite.experiment.manifest_shapes import ArtifactsSpec, Level, OutputSchemaSpec
from evalsite.experiment.schema_check import schema_problems
from evalsite.jsonshape import JSONObject

LEVELS: tuple[Level, ...] = ("experiment", "arm", "item", "case")
CHILD = {"experiment": "arm", "arm": "item", "item": "case", "case": None}
PHASES: tuple[Literal["pre", "post"], ...] = ("pre", "post")
ARTIFACT_TYPES = {"dataframe": (".csv", ".parquet"), "metrics": (".json",), "trace": (".jsonl",),
                  "plot": (".svg", ".png")}
PLACEHOLDERS = {
    "experiment": {"level_dir", "experiment", "batch_id"},
    "arm": {"level_dir", "run_dir", "experiment", "batch_id", "arm_id", "config_id"},
    "item": {"level_dir", "run_dir", "experiment", "batch_id", "arm_id", "config_id", "item_id"},
    "case": {"level_dir", "run_dir", "experiment", "batch_id", "arm_id", "config_id", "item_id", "repeat"},
}
STEP_KINDS = ("run", "command", "builtin")
_PLACEHOLDER = re.compile(r"{([^{}]*)}")


@dataclass(frozen=True)
class Artifact:
    """A declared output of a level: ``path`` is a template over :data:`PLACEHOLDERS`."""

    name: str
    level: str
    type: str
    path: str


@dataclass(frozen=True)
class Step:
    """One pre or post step; ``kind`` is run (``python:module:function``), command or builtin."""

    name: str
    level: str
    phase: str
    kind: str
    spec: Any  # the function spec (str), the argv (list[str]) or the builtin's name (str)
    inputs: str | None = None
    output: str | None = None
    depends_on: tuple[str, ...] = ()
    timeout_s: float | None = None
    config: JSONObject = field(default_factory=dict, hash=False)

    @property
    def where(self) -> str:
        return f"hooks.{self.level}.{self.phase}[{self.name}]"


#: Steps per (level, phase).
StepLists = dict[tuple[str, str], list[Step]]


@dataclass(frozen=True)
class Pipeline:
    """Steps per (level, phase) in execution order, artifacts per level, the output schema."""

    steps: StepLists
    artifacts: dict[str, dict[str, Artifact]]
    output_schema: OutputSchemaSpec | None = None

    def of(self, level: str, phase: str) -> list[Step]:
        return self.steps.get((level, phase), [])

    @cached_property
    def empty(self) -> bool:
        """No step at all (asked once a case by the runner; the steps never change)."""
        return not any(self.steps.values())


def default_path(level: str, name: str, kind: str) -> str:
    return f"{{level_dir}}/{name}{ARTIFACT_TYPES[kind][0]}"


def load_pipeline(manifest: Manifest, project_root: Path) -> Pipeline:
    """The manifest's pipeline with ``ref`` files read, checked; a :class:`ManifestError` lists
    every problem, one line each."""
    problems: list[str] = []
    artifacts = _artifacts(manifest.artifacts, problems)
    steps: StepLists = {
        (level, phase): _step_list(manifest.hooks.get(level, {}).get(phase), level, phase, project_root, problems)
        for level in LEVELS for phase in PHASES
    }
    problems += _reference_problems(steps, artifacts)
    problems += _dependency_problems(steps)
    if problems:
        raise ManifestError("\n".join(f"{manifest.path}: {problem}" for problem in problems))
    ordered = {key: _ordered(found) for key, found in steps.items()}
    return Pipeline(ordered, artifacts, manifest.output_schema)


def _artifacts(spec: ArtifactsSpec, problems: list[str]) -> dict[str, dict[str, Artifact]]:
    found: dict[str, dict[str, Artifact]] = {}
    for level in LEVELS:
        for name, value in (spec.get(level) or {}).items():
            kind = value if isinstance(value, str) else value["type"]
            path = default_path(level, name, kind) if isinstance(value, str) else value.get("path")
            path = path or default_path(level, name, kind)
            unknown = sorted(set(_PLACEHOLDER.findall(path)) - PLACEHOLDERS[level])
            if unknown:
                problems.append(f"artifacts.{level}.{name}.path: unknown placeholder {{{unknown[0]}}} at the "
                                f"{level} level (known: {', '.join(sorted(PLACEHOLDERS[level]))})")
            found.setdefault(level, {})[name] = Artifact(name, level, kind, path)
    return found


def _step_list(spec: JSONObject | list[JSONObject] | None, level: str, phase: str, root: Path, problems: list[str]) -> list[Step]:
    """A step list: inline steps, ``{ref: file}`` entries (a YAML list of steps) or a ``{ref}`` alone."""
    where = f"hooks.{level}.{phase}"
    entries = [spec] if isinstance(spec, dict) else list(spec or [])
    steps: list[Step] = []
    for index, entry in enumerate(entries):
        if "ref" in entry and len(entry) > 1:
            problems.append(f"{where}[{index}]: a {{ref: FILE}} entry takes no other key (got "
                            f"{', '.join(sorted(set(entry) - {'ref'}))})")
        elif "ref" in entry:
            for inner in _read_ref(entry["ref"], root, f"{where}[{index}].ref", problems):
                steps.append(_step(inner, level, phase, f"{where}[{index}]", problems))
        else:
            steps.append(_step(entry, level, phase, f"{where}[{index}]", problems))
    names = [step.name for step in steps]
    problems += [f"{where}: duplicate step name {n!r}" for n in sorted({n for n in names if names.count(n) > 1})]
    return steps


def _read_ref(ref: str, root: Path, where: str, problems: list[str]) -> list[JSONObject]:
    path = (root / ref).resolve()
    if not path.is_file():
        problems.append(f"{where}: step file {ref!r} not found (relative to the project root)")
        return []
    try:
        data = load_yaml(document_text(path))
    except yaml.YAMLError as exc:
        problems.append(f"{where}: {ref}: {yaml_problem(exc)}")
        return []
    except DocumentUnreadable as exc:
        problems.append(f"{where}: {ref}: cannot read the step file: {exc}")
        return []
    data = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(data, list) or not all(isinstance(step, dict) and "ref" not in step for step in data):
        problems.append(f"{where}: {ref} must hold a list of steps (or {{steps: [...]}}), without nested refs")
        return []
    for problem in schema_problems(data, "step_list"):  # the same schema as inline steps
        problems.append(f"{where}: {ref}: {problem}")
    return [] if any(p.startswith(f"{where}: {ref}:") for p in problems) else data


def _step(entry: JSONObject, level: str, phase: str, where: str, problems: list[str]) -> Step:
    kinds = [kind for kind in STEP_KINDS if kind in entry]
    if len(kinds) != 1:
        problems.append(f"{where}: a step needs exactly one of run, command, builtin (got "
                        f"{', '.join(kinds) or 'none'})")
    kind = kinds[0] if kinds else "builtin"
    name = entry.get("name") or (entry.get(kind) if kind == "builtin" else None) or where
    return Step(
        name=str(name), level=level, phase=phase, kind=kind, spec=entry.get(kind), inputs=entry.get("in"),
        output=entry.get("out"), depends_on=tuple(entry.get("depends_on") or ()), timeout_s=entry.get("timeout_s"),
        config=dict(entry.get("config") or {}),
    )


def _reference_problems(steps: StepLists, artifacts: dict[str, dict[str, Artifact]]) -> list[str]:
    """``in`` names an artifact of the level below, ``out`` one of the step's own level."""
    problems = []
    for (level, _), found in steps.items():
        for step in found:
            child = CHILD[level]
            if step.inputs is not None:
                known = sorted(artifacts.get(child or "", {}))
                if child is None:
                    problems.append(f"{step.where}.in: the case level has no level below to read from")
                elif step.inputs not in known:
                    problems.append(f"{step.where}.in: no {child} artifact {step.inputs!r} "
                                    f"(declared at artifacts.{child}: {', '.join(known) or 'none'})")
            if step.output is not None and step.output not in artifacts.get(level, {}):
                known = sorted(artifacts.get(level, {}))
                problems.append(f"{step.where}.out: no {level} artifact {step.output!r} "
                                f"(declared at artifacts.{level}: {', '.join(known) or 'none'})")
    return problems


def _dependency_problems(steps: StepLists) -> list[str]:
    """Every ``depends_on`` names a step of the same list (levels already run in order); no cycles."""
    problems = []
    for (level, phase), found in steps.items():
        names = {step.name for step in found}
        everywhere = {s.name for listed in steps.values() for s in listed}
        for step in found:
            for dependency in step.depends_on:
                if dependency not in everywhere:
                    problems.append(f"{step.where}.depends_on: no step {dependency!r}")
        cycle = _cycle({s.name: [d for d in s.depends_on if d in names] for s in found})
        if cycle:
            problems.append(f"hooks.{level}.{phase}: depends_on cycle {' -> '.join(cycle)}")
    return problems


def _cycle(graph: dict[str, list[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [node, nxt] if nxt in path else [node, nxt]
            if state.get(nxt) is None:
                found = visit(nxt, path + [node])
                if found:
                    return found
        state[node] = 2
        return None

    for node in graph:
        if state.get(node) is None:
            found = visit(node, [])
            if found:
                return found
    return None


def _ordered(steps: list[Step]) -> list[Step]:
    """Listed order, except that a step comes after every step of the list it depends on."""
    done: list[Step] = []
    names = {step.name for step in steps}
    pending = list(steps)
    while pending:
        ready = next(s for s in pending if all(d in {x.name for x in done} or d not in names for d in s.depends_on))
        done.append(ready)
        pending.remove(ready)
    return done
