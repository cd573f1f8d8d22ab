"""Overlay manifests: reusable patches a manifest applies to itself before validation.

A manifest's ``overlays: [FILE, ...]`` names overlay files (relative to the manifest's folder).
Each holds ``kind: Overlay`` and ``spec.overrides``, a list of groups ``{target, patch}``:
``target`` is a selector (or a list of them) in ``--set``'s dotted notation where any step may be
a wildcard — ``*``, or an ``fnmatch`` pattern such as ``gpt-*`` matched against a mapping's keys
or a list entry's ``id`` (or index) — and ``patch`` is a mapping deep-merged into every node the
selector reaches (the last step is created as a mapping when missing). Precedence: the manifest,
then each overlay in the order listed, each group in order, then ``--set``. Every problem of every
overlay is collected (a selector that reaches nothing is one) before any is reported.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalsite.errors import ManifestError
from evalsite.experiment.schema_check import value_phrase
from evalsite.jsonshape import JSONObject

KIND = "Overlay"
GROUP_KEYS = {"target", "patch"}


def apply_overlays(data: JSONObject, manifest_path: Path, read: Callable[[Path], JSONObject]) -> None:
    """Apply the overlays ``data`` names, in place; raises one error listing every problem. ``read``
    reads one overlay file as strictly as the manifest itself (its size, its YAML), raising
    :class:`ManifestError`."""
    names = data.get("overlays")
    if names is None:
        return
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ManifestError(f"{manifest_path}: overlays: needs a list of overlay file paths, got {value_phrase(names)}")
    problems: list[str] = []
    for name in names:
        path = manifest_path.parent / name
        problems += [f"{name}: {problem}" for problem in _apply_file(data, path, read)]
    if problems:
        raise ManifestError("\n".join(f"{manifest_path}: overlay {problem}" for problem in problems))


def _apply_file(data: JSONObject, path: Path, read: Callable[[Path], JSONObject]) -> list[str]:
    if not path.exists():
        return ["does not exist"]
    try:
        document = read(path)
    except ManifestError as exc:
        return [exc.message.removeprefix(f"{path}: ")]
    if document.get("kind") != KIND:
        return [f"needs kind: {KIND}"]
    unknown = sorted(set(document) - {"kind", "spec", "description"})
    groups = (document.get("spec") or {}).get("overrides") if isinstance(document.get("spec"), dict) else None
    if unknown or not isinstance(groups, list):
        return [f"unknown key {unknown[0]!r}" if unknown else "spec.overrides: needs a list of {target, patch} groups"]
    problems = []
    for index, group in enumerate(groups):
        problems += [f"spec.overrides[{index}].{problem}" for problem in _apply_group(data, group)]
    return problems


def _apply_group(data: JSONObject, group: Any) -> list[str]:
    if not isinstance(group, dict) or set(group) != GROUP_KEYS:
        return [f"{', '.join(sorted(set(group) ^ GROUP_KEYS)) if isinstance(group, dict) else 'entry'}: "
                "a group has exactly the keys target and patch"]
    targets = group["target"] if isinstance(group["target"], list) else [group["target"]]
    if not isinstance(group["patch"], dict):
        return [f"patch: needs a mapping, got {value_phrase(group['patch'])}"]
    if not targets or not all(isinstance(target, str) and target for target in targets):
        return ["target: needs a selector (arms.*.params) or a list of them"]
    problems = []
    for target in targets:
        parents = _select(data, target.split(".")[:-1])
        last = target.split(".")[-1]
        reached = [(parent, key) for parent in parents for key in _keys(parent, last, create=True)]
        if not reached:
            problems.append(f"target: {target!r} reaches nothing")
        for parent, key in reached:
            problems += _merge_into(parent, key, group["patch"], target)
    return problems


def _select(node: Any, steps: list[str]) -> list[Any]:
    """Every node the steps reach (wildcards fan out; a missing step reaches nothing)."""
    found = [node]
    for step in steps:
        found = [child[key] for child in found for key in _keys(child, step, create=False)
                 if isinstance(child[key], (dict, list))]
    return found


def _keys(node: Any, step: str, *, create: bool) -> list[Any]:
    """The keys (mapping) or indexes (list) of ``node`` that ``step`` matches; for the last step of a
    selector (``create``), a plain key missing from a mapping is created."""
    if isinstance(node, dict):
        matched = [key for key in node if fnmatch.fnmatchcase(str(key), step)]
        return matched or ([step] if create and not _wild(step) else [])
    if isinstance(node, list):
        return [index for index, entry in enumerate(node)
                if fnmatch.fnmatchcase(str(entry["id"]) if isinstance(entry, dict) and "id" in entry else str(index), step)
                or step == str(index)]
    return []


def _wild(step: str) -> bool:
    return any(sign in step for sign in "*?[")


def _merge_into(parent: Any, key: Any, patch: JSONObject, target: str) -> list[str]:
    from evalsite.experiment.manifest import deep_merge  # the one merge (arms' extends use it too)

    current = parent[key] if not isinstance(parent, dict) or key in parent else {}
    if not isinstance(current, dict):
        return [f"target: {target!r} reaches {value_phrase(current)}, not a mapping to patch"]
    parent[key] = deep_merge(current, patch)
    return []
