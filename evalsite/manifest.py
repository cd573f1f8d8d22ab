"""Load and validate experiment manifests (``experiments/<name>.yaml`` or ``.json``).

Validation collects every problem before failing, and each message names the file and the key
path, so a user fixes a manifest in one pass.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalsite.errors import ManifestError

SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
TOP_LEVEL_KEYS = {
    "name", "description", "dataset", "rows", "prompt", "arms", "repeat", "evaluators",
    "concurrency", "limits", "schedule",
}
ARM_KEYS = {"id", "target", "params", "price", "settings"}


@dataclass(frozen=True)
class ArmSpec:
    id: str
    target: str
    params: dict = field(default_factory=dict)
    price: dict | None = None
    settings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    path: Path
    text: str
    name: str
    description: str
    dataset: dict
    prompt: Any
    arms: list[ArmSpec]
    evaluators: list[dict]
    repeat: int = 1
    concurrency: int = 8
    limits: dict = field(default_factory=dict)
    schedule: dict = field(default_factory=dict)


def load_manifest(path: str | Path) -> Manifest:
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"{path}: manifest not found")
    text = path.read_text(encoding="utf-8")
    data = _parse(path, text)
    problems = list(_problems(data))
    if problems:
        raise ManifestError(f"{path}: " + "; ".join(problems))
    return Manifest(
        path=path,
        text=text,
        name=data.get("name", path.stem),
        description=data.get("description", ""),
        dataset=data["dataset"],
        prompt=data.get("prompt"),
        arms=[_arm(arm) for arm in data["arms"]],
        evaluators=list(data.get("evaluators") or []),
        repeat=data.get("repeat", 1),
        concurrency=data.get("concurrency", 8),
        limits=data.get("limits") or {},
        schedule=data.get("schedule") or {},
    )


def _parse(path: Path, text: str) -> dict:
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(f"{path}: invalid JSON on line {exc.lineno}: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" on line {mark.line + 1}" if mark else ""
        raise ManifestError(f"{path}: invalid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{path}: a manifest must be a mapping at the top level")
    return data


def _problems(data: dict):
    for key in sorted(set(data) - TOP_LEVEL_KEYS):
        yield f"unknown key {key!r} (allowed: {', '.join(sorted(TOP_LEVEL_KEYS))})"
    name = data.get("name")
    if name is not None and not (isinstance(name, str) and SAFE_NAME.match(name) and ".." not in name):
        yield f"name: {name!r} may hold only letters, digits, '-', '_' and '.'"
    dataset = data.get("dataset")
    if not isinstance(dataset, dict) or not isinstance(dataset.get("path"), str):
        yield "dataset: needs a mapping with a 'path' string"
    arms = data.get("arms")
    if not isinstance(arms, list) or not arms:
        yield "arms: needs a non-empty list of arms"
    else:
        yield from _arm_problems(arms)
    if not isinstance(data.get("evaluators", []), list):
        yield "evaluators: needs a list"
    for key in ("repeat", "concurrency"):
        value = data.get(key, 1)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            yield f"{key}: needs a whole number of at least 1, got {value!r}"


def _arm_problems(arms: list):
    seen = set()
    for index, arm in enumerate(arms):
        where = f"arms[{index}]"
        if not isinstance(arm, dict):
            yield f"{where}: needs a mapping"
            continue
        for key in sorted(set(arm) - ARM_KEYS):
            yield f"{where}: unknown key {key!r} (allowed: {', '.join(sorted(ARM_KEYS))})"
        arm_id = arm.get("id")
        if not isinstance(arm_id, str) or not SAFE_NAME.match(arm_id) or ".." in arm_id:
            yield f"{where}.id: {arm_id!r} may hold only letters, digits, '-', '_' and '.'"
        elif arm_id in seen:
            yield f"{where}.id: duplicate arm id {arm_id!r}"
        seen.add(arm_id)
        if not isinstance(arm.get("target"), str):
            yield f"{where}.target: needs a string such as 'python:module:function'"


def _arm(data: dict) -> ArmSpec:
    return ArmSpec(
        id=data["id"],
        target=data["target"],
        params=dict(data.get("params") or {}),
        price=data.get("price"),
        settings=dict(data.get("settings") or {}),
    )
