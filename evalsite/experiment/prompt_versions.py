"""Versioned prompts: ``prompt: {name, version}`` names a template in ``prompts/<name>.yaml``.

The file holds ``versions:``, a mapping of version → template (a string, or a list of messages
as an inline ``prompt``). ``version: latest`` (the default) resolves when the plan is built, to
the highest numbered version (the last listed when the versions are not all numbers). The run
header pins what was submitted and what it resolved to, with the template's hash, so a new
version never silently changes what an old run means.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from evalsite.errors import PlanError
from evalsite.experiment.bounded_yaml import DocumentUnreadable, document_text, load_yaml, yaml_problem
from evalsite.experiment.manifest import Manifest
from evalsite.experiment.manifest_shapes import PromptRef
from evalsite.experiment.prompts import template_problems
from evalsite.jsonshape import JSONObject
from evalsite.runlog.hashing import short_hash

PROMPTS_DIR = "prompts"
LATEST = "latest"


def with_resolved_prompt(root: Path, manifest: Manifest) -> Manifest:
    """``manifest`` with its ``prompt: {name, version}`` replaced by the template it names and
    ``prompt_ref`` recording the resolution; unchanged when the prompt is written inline."""
    reference = manifest.prompt_ref
    if reference is None or reference.get("resolved"):  # inline, or resolved already
        return manifest
    name, submitted = reference["name"], reference.get("version", LATEST)
    path = root / PROMPTS_DIR / f"{name}.yaml"
    versions = _versions(path, manifest.path)
    version = _pick(versions, submitted, path, manifest.path)
    template = versions[version]
    where = f"{path.relative_to(root).as_posix()}: versions.{version}"
    if not isinstance(template, (str, list)) or (problems := _template_problems(template)):
        problems = problems if isinstance(template, (str, list)) else ["needs a template or a list of messages"]
        raise PlanError(f"{where}: {'; '.join(problems)}")
    resolved: PromptRef = {"name": name, "submitted": submitted, "version": version, "hash": short_hash(template),
                "path": path.relative_to(root).as_posix(), "resolved": True}
    return replace(manifest, prompt=template, prompt_ref=resolved)


def _template_problems(template: Any) -> list[str]:
    if isinstance(template, list) and not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in template):
        return ["a list of messages needs {role, content} entries"]
    return [p.removeprefix("prompt: ").removeprefix("prompt") for p in template_problems(template)]


def _versions(path: Path, manifest_path: Path) -> dict[Any, Any]:
    if not path.is_file():
        raise PlanError(f"{manifest_path}: prompt.name: no file {PROMPTS_DIR}/{path.name} in the project")
    try:
        data = load_yaml(document_text(path))
    except yaml.YAMLError as exc:
        raise PlanError(f"{path}: cannot read the prompt: {yaml_problem(exc)}") from None
    except DocumentUnreadable as exc:
        raise PlanError(f"{path}: cannot read the prompt: {exc}") from None
    versions = data.get("versions") if isinstance(data, dict) else None
    if not isinstance(versions, dict) or not versions:
        raise PlanError(f"{path}: needs 'versions:', a mapping of version → template")
    return versions


def _pick(versions: JSONObject, submitted: Any, path: Path, manifest_path: Path) -> Any:
    if submitted == LATEST:
        numbered = all(isinstance(v, int) and not isinstance(v, bool) for v in versions)
        return max(versions) if numbered else list(versions)[-1]
    chosen = next((v for v in versions if str(v) == str(submitted)), None)
    if chosen is None:
        known = ", ".join(map(str, versions))
        raise PlanError(f"{manifest_path}: prompt.version: {path.name} has no version {submitted!r} (versions: {known})")
    return chosen
