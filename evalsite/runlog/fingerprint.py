"""Everything a number depends on, recorded with every run; its hash; and the diff of two.

A fingerprint names the dataset (and its questions without the expected answers), the resolved
config, the prompt, the evaluators, the target, the code (git commit, dirty flag, remote and a
hash of every project file the run imports), the harness and environment, and the seed. Nothing
secret is in it: settings whose key names a secret are redacted and credentials are cut out of
URLs (:func:`evalsite.runlog.secrets.redact_secrets`).
"""

from __future__ import annotations

import ast
import hashlib
import platform
import re
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from evalsite import __version__
from evalsite.runlog.hashing import canonical_json, sha256_json, sha256_of_plain, sha256_text, short_hash
from evalsite.runlog.rows import is_critical
from evalsite.runlog.secrets import redact_secrets, redact_urls

KEY_PACKAGES = ("duckdb", "httpx", "jinja2", "numpy", "pyarrow", "pyyaml", "scipy")
HARNESS_PACKAGE = "evalsite"


@dataclass(frozen=True)
class FieldDiff:
    """One fingerprint field that differs between two runs: its dotted path, old and new value."""

    path: str
    old: Any
    new: Any


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_identity(root: Path) -> dict[str, Any]:
    """The project's git commit, dirty flag and remote URL (credentials cut out); ``None`` outside a checkout."""
    commit = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no") if commit else None
    remote = _git(root, "remote", "get-url", "origin") if commit else None
    return {
        "commit": commit,
        "dirty": None if status is None else bool(status),
        "remote": redact_urls(remote) if remote else None,
    }


def git_user(root: Path) -> str | None:
    """``Name <email>`` from the project's git config, or whichever half is set, else ``None``."""
    name, email = _git(root, "config", "user.name"), _git(root, "config", "user.email")
    if name and email:
        return f"{name} <{email}>"
    return name or email or None


def environment() -> dict[str, Any]:
    return {
        "evalsite": __version__,
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "os": platform.system(),
        "arch": platform.machine(),
        "packages": {name: _package_version(name) for name in KEY_PACKAGES},
    }


def _package_version(name: str) -> str | None:
    """``metadata.version(name)``, or None when the package is not installed."""
    try:
        found = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    return _stated_version(found.read_text("METADATA") or "") or found.version


#: A line the email parser reads as a field (``email.feedparser.headerRE`` without its ``From `` line).
_FIELD_LINE = re.compile(r"[\041-\071\073-\176]*:")


def _stated_version(text: str) -> str | None:
    """The ``Version`` field of a METADATA ``text`` as the email parser behind ``metadata.version``
    reads it (the first field of that name, in any case; its value after the colon and the spaces
    and tabs that follow), found in the lines before the first blank one without parsing the whole
    file (scipy's holds its licences: ~8 ms of a run's start-up); None when a line up to it is not a
    plain one-line field (the parser decides then)."""
    lines = text.partition("\n\n")[0].split("\n")
    for index, line in enumerate(lines):
        if "\r" in line or not _FIELD_LINE.match(line):
            return None
        field, _, value = line.partition(":")
        if field.lower() == "version":
            folded = index + 1 < len(lines) and lines[index + 1].startswith((" ", "\t"))
            return None if folded else value.lstrip(" \t")
    return None


def dataset_identity(path: str | None, dataset: Any) -> dict[str, Any]:
    """The dataset block: ``inputs_id`` is like ``dataset_id`` but ignores every item's expected side,
    so a ground-truth edit keeps it while any change to the questions changes it."""
    inputs = "".join(_id_and_input_sha(item.item_id, item.input_sha) for item in dataset.items)
    return {
        "path": path,
        "name": dataset.name,
        "dataset_id": dataset.dataset_id,
        "inputs_id": f"{dataset.name}@{sha256_text(inputs)[:12]}",
        "items": len(dataset.items),
        "critical": [item.item_id for item in dataset.items if is_critical(item.row)],
    }


def evaluator_identity(evaluator: Any) -> dict[str, Any]:
    """What decides an evaluator's scores: its header entry (type, version, weight, judge) plus
    threshold, scope and params, secrets redacted."""
    identity = {
        **evaluator.describe(),
        "threshold": evaluator.threshold,
        "scope": getattr(evaluator, "scope", None),
        "params": redact_secrets(evaluator.params),
    }
    judge = identity.get("judge") or {}
    if judge.get("model") is not None:
        identity["judge_model"] = judge["model"]
    return identity


MODEL_SPEC_KINDS = ("openai", "anthropic")  # built-in kinds whose spec names the model: openai:gpt-4o


def target_identity(config: Any) -> dict[str, Any]:
    """The target's kind and model: ``openai:gpt-4o`` names it in the spec, others in params or settings."""
    kind, _, rest = config.target.partition(":")
    model = config.params.get("model") or config.settings.get("model")
    if kind in MODEL_SPEC_KINDS and rest:
        model = rest
    return {"kind": kind, "model": model}


def build_fingerprint(*, project: Any, dataset: Any, config: Any, prompt: Any, evaluators: list[Any], code: dict[str, Any],
                      seed: int | None = None) -> dict[str, Any]:
    """The fingerprint of one run of ``config`` (a :class:`evalsite.experiment.plan.Config`) over ``dataset``.

    ``code`` is :func:`git_identity` of the project (computed once per batch); the hash of the
    project files this config and these evaluators import is added here. ``seed`` defaults to
    the config's ``params.seed``.
    """
    files = project_code_files(project.root, entry_modules(config, evaluators), command_paths(project.root, config))
    return {
        "dataset": dataset_identity(project.relative(dataset.path), dataset),
        "config": redact_secrets(config.resolved),
        "config_id": config.config_id,
        "prompt_hash": short_hash(prompt),
        "evaluators": {e.name: evaluator_identity(e) for e in evaluators},
        "target": target_identity(config),
        "code": {**code, "files": files, "files_hash": short_hash(files)},
        "environment": environment(),
        "seed": seed if seed is not None else config.params.get("seed"),
    }


def _id_and_input_sha(item_id: Any, input_sha: Any) -> str:
    """``sha256_json([item_id, input_sha])``; for two strings (every item) without its walk of the
    value: two strings are plain, so it is :func:`~evalsite.runlog.hashing.sha256_of_plain`'s."""
    if type(item_id) is str and type(input_sha) is str:
        return sha256_of_plain([item_id, input_sha])
    return sha256_json([item_id, input_sha])


def fingerprint_hash(fingerprint: dict[str, Any]) -> str:
    return sha256_json(fingerprint)[:16]


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as ``{dotted.path: leaf}``; lists and empty mappings are leaves."""
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            flat.update(flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def diff_fingerprints(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[FieldDiff]:
    """Every leaf field that differs, by dotted path (sorted); a missing field reads as ``None``."""
    before, after = flatten(old or {}), flatten(new or {})
    return [
        FieldDiff(path, before.get(path), after.get(path))
        for path in sorted(before.keys() | after.keys())
        if canonical_json(before.get(path)) != canonical_json(after.get(path))
    ]


def entry_modules(config: Any, evaluators: Iterable[Any]) -> set[str]:
    """Modules a run of ``config`` imports first: a python target's module, and each evaluator's
    class module and the modules of any functions it holds. The harness's own modules are left out
    (the evalsite version and the commit identify them)."""
    modules = set()
    kind, _, rest = config.target.partition(":")
    if kind == "python":
        modules.add(rest.partition(":")[0])
    for evaluator in evaluators:
        modules.add(type(evaluator).__module__)
        modules.update(v.__module__ for v in vars(evaluator).values() if callable(v) and getattr(v, "__module__", None))
    return {m for m in modules if m and m.split(".")[0] != HARNESS_PACKAGE}


def command_paths(root: Path, config: Any) -> list[Path]:
    """Files inside the project named by a command target (its spec or its ``command`` setting)."""
    command = config.settings.get("command")
    words = config.target.partition(":")[2].split()
    words += command.split() if isinstance(command, str) else [str(w) for w in command or []]
    paths = []
    for word in words:
        path = (root / word).resolve()
        if path.is_file() and root.resolve() in path.parents:
            paths.append(path)
    return paths


def project_code_files(root: Path, modules: Iterable[str], paths: Iterable[Path] = ()) -> dict[str, str]:
    """``{relative path: sha256[:16]}`` of every project file that importing ``modules`` (and running
    ``paths``) executes, following imports statically through project files only."""
    root = root.resolve()
    found: dict[Path, None] = {}
    pending = [path for name in modules for path in module_files(root, name)] + [Path(p).resolve() for p in paths]
    while pending:
        path = pending.pop()
        if path in found:
            continue
        found[path] = None
        if path.suffix == ".py":
            pending.extend(p for name in imported_modules(root, path) for p in module_files(root, name))
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        for path in sorted(found)
    }


def module_files(root: Path, name: str) -> list[Path]:
    """The project files importing module ``name`` executes: each package ``__init__`` and the module."""
    if not name or name.split(".")[0] == HARNESS_PACKAGE:
        return []
    files = []
    parts = name.split(".")
    for depth in range(1, len(parts) + 1):
        base = root.joinpath(*parts[:depth])
        for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
            if candidate.is_file():
                files.append(candidate)
    return files


def imported_modules(root: Path, path: Path) -> set[str]:
    """Module names a Python file imports anywhere in its body, relative imports resolved."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return set()
    package = _package_of(root, path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(package, node.module, node.level)
            if base is None:
                continue
            if base:
                names.add(base)
            names.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names if alias.name != "*")
    return names


def _package_of(root: Path, path: Path) -> list[str]:
    """The package a file's relative imports start from (``pkg/__init__.py`` and ``pkg/mod.py`` → pkg)."""
    return list(path.relative_to(root).with_suffix("").parts[:-1])


def _absolute(package: list[str], module: str | None, level: int) -> str | None:
    if level == 0:
        return module
    if level - 1 > len(package):
        return None
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))
