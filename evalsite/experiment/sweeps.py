"""``sweep.mode: schedule``: variables follow their values trial by trial, zipped, not crossed.

A variable is a list (one value per trial) or a curve: ``{curve: linear|cosine|step|log, start,
end}`` runs from ``start`` at the first trial to ``end`` at the last (``step`` in ``steps``
levels, default 2; ``integer: true`` rounds), and ``{curve: <name>}`` reads ``curves/<name>.yaml``
(or ``.yml``, ``.json``) holding such a mapping or ``values: [...]``. With trial t of n and
progress p = t / (n - 1) (0 for a single trial):

- linear: start + (end - start) · p
- cosine: end + (start - end) · (1 + cos πp) / 2
- step:   start + (end - start) · k / (steps - 1), with level k = min(⌊p · steps⌋, steps - 1)
- log:    start · (end / start)^p (both positive: even steps on a log scale)

Nothing here draws a random number: only ``mode: random`` reads the seed. :func:`sweep_problems`
holds the manifest rules of every sweep mode beyond its schema.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalsite.errors import PlanError
from evalsite.experiment.bounded_yaml import DocumentUnreadable, document_text, parse_document
from evalsite.experiment.manifest_shapes import SweepSpec
from evalsite.experiment.safety import SAFE_NAME_RULE, is_safe_name, number_problems
from evalsite.jsonshape import JSONObject

CURVES = ("linear", "cosine", "step", "log")
CURVE_KEYS = {"curve", "start", "end", "steps", "integer"}
CURVES_DIR = "curves"
CURVE_SUFFIXES = (".yaml", ".yml", ".json")


def sweep_problems(sweep: SweepSpec | None) -> list[str]:
    """The manifest rules of a sweep beyond its schema: ``trials`` belongs to random and schedule
    mode, ``seed`` to random mode only (nothing else draws), curves to schedule mode (they follow
    the trials), and a curve file's name is a safe name (it becomes a path under ``curves/``)."""
    if not sweep:
        return []
    mode = sweep.get("mode", "grid")
    used_by = {"trials": ("random", "schedule"), "seed": ("random",)}
    problems = [f"sweep.{key}: only used with mode: {' or '.join(modes)}"
                for key, modes in used_by.items() if key in sweep and mode not in modes]
    curves = {name: values for name, values in (sweep.get("variables") or {}).items() if isinstance(values, dict)}
    if mode != "schedule":
        problems += [f"sweep.variables.{name}: a curve follows the trials; use mode: schedule" for name in curves]
    problems += [f"sweep.variables.{name}.curve: {spec['curve']!r} names neither a built-in curve ({', '.join(CURVES)}) "
                 f"nor a file {CURVES_DIR}/<name>.yaml: a name holds {SAFE_NAME_RULE}"
                 for name, spec in curves.items() if spec.get("curve") not in CURVES and not is_safe_name(spec.get("curve"))]
    return problems


def schedule_trials(root: Path, manifest_path: Path, sweep: SweepSpec) -> list[JSONObject]:
    """One combination per trial: the listed values zipped, the curves evaluated at each trial."""
    where = f"{manifest_path}: sweep.variables"
    variables = {
        name: {"values": values} if isinstance(values, list) else resolve_curve(root, values, f"{where}.{name}")
        for name, values in sweep["variables"].items()
    }
    listed = {name: len(spec["values"]) for name, spec in variables.items() if "values" in spec}
    trials = sweep.get("trials") or next(iter(listed.values()), None)
    if trials is None:
        raise PlanError(f"{manifest_path}: sweep.trials: needed when a schedule has only curves "
                        "(the number of trials they run over)")
    if uneven := {name: count for name, count in listed.items() if count != trials}:
        shown = ", ".join(f"{name} has {count}" for name, count in uneven.items())
        raise PlanError(f"{where}: in schedule mode every listed variable gives one value per trial "
                        f"({trials} trials; {shown})")
    columns = {name: curve_values(spec, trials, f"{where}.{name}") for name, spec in variables.items()}
    return [{name: columns[name][trial] for name in variables} for trial in range(trials)]


def resolve_curve(root: Path, spec: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """A built-in curve's spec as given, or the spec a ``curves/`` file holds."""
    name = spec.get("curve")
    if name in CURVES or set(spec) != {"curve"}:
        return spec
    folder = root / CURVES_DIR
    path = next((folder / f"{name}{suffix}" for suffix in CURVE_SUFFIXES if (folder / f"{name}{suffix}").is_file()), None)
    if path is None:
        raise PlanError(f"{where}: curve {name!r} is neither built in ({', '.join(CURVES)}) nor a file "
                        f"{CURVES_DIR}/{name}.yaml")
    try:
        data, problem = parse_document(document_text(path), is_json=path.suffix == ".json")
    except DocumentUnreadable as exc:
        data, problem = None, str(exc)
    if problem is None and (not_finite := number_problems(data)):
        problem = not_finite[0]  # YAML's .nan and .inf, which a config's params must never hold
    if problem is not None:
        raise PlanError(f"{path}: cannot read the curve: {problem}")
    if isinstance(data, dict) and set(data) == {"values"} and isinstance(data["values"], list):
        return data
    if not isinstance(data, dict) or data.get("curve") not in CURVES:
        raise PlanError(f"{path}: a curve file holds {{curve: {'|'.join(CURVES)}, start, end}} or {{values: [...]}}")
    return data


def curve_values(spec: Mapping[str, Any], trials: int, where: str) -> list[Any]:
    """The curve's value at each of ``trials`` trials."""
    if "values" in spec:  # listed values (checked against the number of trials by the caller)
        return list(spec["values"])
    _check(spec, where)
    start, end, kind = float(spec["start"]), float(spec["end"]), spec["curve"]
    steps = spec.get("steps", 2)
    values = []
    for trial in range(trials):
        progress = trial / (trials - 1) if trials > 1 else 0.0
        if kind == "linear":
            value = start + (end - start) * progress
        elif kind == "cosine":
            value = end + (start - end) * (1 + math.cos(math.pi * progress)) / 2
        elif kind == "step":
            value = start + (end - start) * min(math.floor(progress * steps), steps - 1) / (steps - 1)
        else:
            value = start * (end / start) ** progress
        if not math.isfinite(value):  # start and end so far apart that their difference overflows
            raise PlanError(f"{where}: a {kind} curve from {start:g} to {end:g} gives {value} at trial {trial}; "
                            "use a start and end nearer each other")
        values.append(round(value) if spec.get("integer") else value)
    return values


def _check(spec: Mapping[str, Any], where: str) -> None:
    if unknown := sorted(set(spec) - CURVE_KEYS):
        raise PlanError(f"{where}: unknown curve key {unknown[0]!r} (allowed: {', '.join(sorted(CURVE_KEYS))})")
    for key in ("start", "end"):
        value = spec.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise PlanError(f"{where}.{key}: a {spec['curve']} curve needs a number, got {value!r}")
    steps = spec.get("steps", 2)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 2:
        raise PlanError(f"{where}.steps: needs a whole number of at least 2, got {steps!r}")
    if spec["curve"] == "log" and not (spec["start"] > 0 and spec["end"] > 0):
        raise PlanError(f"{where}: a log curve needs start and end > 0, got {spec['start']!r} and {spec['end']!r}")
