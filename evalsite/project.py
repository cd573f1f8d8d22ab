"""Find the project root and its folders.

A project is a folder holding any of ``evalsite.toml``, ``experiments/`` or ``data/``. Commands
run from anywhere inside it; the root is the nearest ancestor that looks like a project, else the
current folder.
"""

from __future__ import annotations

import base64
import importlib
import logging
import os
import re
import sys
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsite.errors import ProjectError, TargetError, did_you_mean

PROJECT_MARKERS = ("evalsite.toml", "experiments", "data")
DEFAULT_MAX_ERROR_RATE = 0.5
RUNS_ENV = "EVALSITE_RUNS"
#: The installed ``evalsite`` package's folder.
PACKAGE_DIR = Path(__file__).resolve().parent


def shipped_folder(installed: str, checkout: str) -> Path:
    """A folder that ships with evalsite: ``installed`` under the package (where the wheel puts it,
    pyproject's force-include), else ``checkout`` beside the package (a source checkout)."""
    inside = PACKAGE_DIR / installed
    return inside if inside.is_dir() else PACKAGE_DIR.parent / checkout

#: Every table of evalsite.toml and its keys (None: the table's own reader checks its keys —
#: ``[site]`` is evalsite.site.settings.SiteSettings, read by ``build`` and ``validate``).
SETTINGS_KEYS: dict[str, frozenset[str] | None] = {
    "analysis": frozenset({"cluster_key", "direction"}),
    "ci": frozenset({"experiments", "max_cost_usd", "max_error_rate"}),
    "site": None,
    "store": frozenset({"runs"}),
}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Project:
    root: Path
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def experiments_dir(self) -> Path:
        return self.root / "experiments"

    @property
    def runs_location(self) -> str | None:
        """Where runs are read from when not ``runs/``: ``--runs``/``EVALSITE_RUNS``, else
        ``[store] runs`` of evalsite.toml (a folder, or a URI such as ``s3://bucket/prefix``)."""
        return os.environ.get(RUNS_ENV) or self.settings.get("store", {}).get("runs") or None

    @property
    def runs_dir(self) -> Path:
        """The runs folder; for a URI location, the local mirror of its headers
        (evalsite.analysis.remote), whose folder name encodes the URI."""
        location = self.runs_location
        if location is None:
            return self.root / "runs"
        if "://" in location:
            encoded = base64.urlsafe_b64encode(location.encode()).decode().rstrip("=")
            return self.root / ".evalsite" / "store" / encoded
        return self.root / location

    @property
    def local_runs_dir(self) -> Path:
        """Where runs are written and compacted from: ``runs_dir``, or ``runs/`` when the runs
        location is a URI (object storage is written only by ``evalsite compact --to URI``)."""
        location = self.runs_location
        return self.root / "runs" if location and "://" in location else self.runs_dir

    @property
    def templates_dir(self) -> Path:
        return self.root / "templates"

    @property
    def static_dir(self) -> Path:
        return self.root / "static"

    def relative(self, path: Path) -> str:
        """A path as the user should see it: relative to the root when inside it."""
        path = Path(path).resolve()
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def inside(self, path: Path, what: str) -> Path:
        """Resolve ``path`` against the root and refuse anything that escapes the project."""
        resolved = (self.root / path).resolve()
        if not self.contains(resolved):
            raise ProjectError(f"{what} {path} is outside the project {self.root}")
        return resolved

    def contains(self, path: Path) -> bool:
        """``path``, symlinks resolved, is the root or inside it: a symlink from a project folder to
        ``/proc/self/environ`` or ``/etc/passwd`` is not part of the project (docs/security.md)."""
        root, resolved = self.root.resolve(), (self.root / path).resolve()
        return resolved == root or root in resolved.parents


def find_project(start: Path | None = None) -> Project:
    """The project containing ``start`` (default: the current folder)."""
    start = (start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return Project(folder, _read_settings(folder))
    return Project(start, {})


def require_project(start: Path | None = None) -> Project:
    """:func:`find_project`, refusing a folder that is in no project: a command run in the wrong
    folder would otherwise print an empty listing, check nothing, or build an empty site there.
    A folder holding only ``runs/`` (what ``evalsite import`` makes) is a project; so is any with a
    runs location set (``--runs``, ``EVALSITE_RUNS``)."""
    project = find_project(start)
    if os.environ.get(RUNS_ENV) or any((project.root / marker).exists() for marker in (*PROJECT_MARKERS, "runs")):
        return project
    raise ProjectError(
        f"no evalsite project in {project.root} or any folder above it (none holds evalsite.toml, experiments/, "
        "data/ or runs/): cd into one, or run `evalsite init` to make one here")


def _read_settings(root: Path) -> dict[str, Any]:
    path = root / "evalsite.toml"
    if not path.exists():
        return {}
    try:
        settings = _bounded_toml(path.read_text(encoding="utf-8"))
    except ValueError as exc:  # TOMLDecodeError and UnicodeDecodeError among them
        raise ProjectError(f"{path}: invalid TOML: {exc}") from None
    for problem in settings_problems(settings):  # the CLI shows each distinct warning once
        log.warning("%s (ignored)", problem)
    log.debug("project %s: settings from %s", root, path)
    return settings


#: The most parts of one dotted key (``a.b.c``) evalsite.toml may hold: tomllib's memory grows with
#: the square of a key's parts (20,000 parts, a 40 KB file: 1.6 GB), and a real key has two or three.
MAX_KEY_PARTS = 100
#: More than ``MAX_KEY_PARTS`` parts joined by dots, bare or quoted, where a key starts (a line's
#: start, a table header's ``[``, an inline table's ``{`` or ``,``; possessive, so the search is
#: linear in the text).
_LONG_DOTTED_KEY = re.compile(
    rf"""(?:^|[\[{{,])[ \t]*+(?:(?:[A-Za-z0-9_-]++|"[^"\n]*+"|'[^'\n]*+')[ \t]*+\.[ \t]*+){{{MAX_KEY_PARTS}}}""",
    re.MULTILINE)


def _bounded_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)``, refusing first what would take it unbounded memory or recursion, as
    a ValueError: a dotted key of more than :data:`MAX_KEY_PARTS` parts, arrays or inline tables
    nested about a thousand deep (tomllib recurses per level), an integer longer than Python reads."""
    if _LONG_DOTTED_KEY.search(text):
        raise ValueError(f"a dotted key of more than {MAX_KEY_PARTS} parts")
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ValueError("arrays or tables nested too deeply") from None
    except ValueError as exc:
        if isinstance(exc, tomllib.TOMLDecodeError):
            raise
        raise ValueError(f"an integer of more than {sys.get_int_max_str_digits():,} digits") from None


def settings_problems(settings: dict[str, Any]) -> list[str]:
    """Every table or key of evalsite.toml that nothing reads (a typo would otherwise leave the
    default in force silently), each with the closest known name."""
    problems = []
    for table in sorted(settings):
        if table not in SETTINGS_KEYS:
            problems.append(f"evalsite.toml: unknown table [{table}]{_did_you_mean(table, SETTINGS_KEYS)} "
                            f"(known: {', '.join(f'[{name}]' for name in SETTINGS_KEYS)})")
            continue
        known, values = SETTINGS_KEYS[table], settings[table]
        if known is None or not isinstance(values, dict):
            continue
        problems += [f"evalsite.toml: [{table}] unknown key {key!r}{_did_you_mean(key, known)} (known: {', '.join(sorted(known))})"
                     for key in sorted(set(values) - known)]
    return problems


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    return did_you_mean(name, sorted(known))


def max_error_rate(project: Project) -> float:
    """``[ci] max_error_rate`` of ``evalsite.toml`` (default 0.5): the largest share of failed
    generations a run may have and still pass a gate (read it only here; :func:`error_rate_problem` applies it)."""
    value = (project.settings.get("ci") or {}).get("max_error_rate", DEFAULT_MAX_ERROR_RATE)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ProjectError(f"evalsite.toml: [ci] max_error_rate: needs a number from 0 to 1, got {value!r}")
    return float(value)


def error_rate_problem(errors: int, cases: int, limit: float) -> str | None:
    """The one error-rate rule, read by ``run`` (its exit code) and ``promote`` (a baseline): None when
    a run's failed generations pass ``[ci] max_error_rate`` = ``limit``, else why not.

    A run with no successful case (every case failed, or none recorded) never passes, whatever the
    limit says, ``max_error_rate = 1`` included: it measured nothing, so it can be neither green nor a
    baseline. Otherwise a share of failed cases up to ``limit`` passes."""
    if errors >= cases:
        if not cases and not errors:
            return "no case was recorded: a run with no successful case measured nothing"
        return (f"{errors} of {max(cases, errors)} cases failed to generate (100%): a run with no successful case "
                "measured nothing, whatever [ci] max_error_rate says")
    rate = errors / cases
    if rate <= limit:
        return None
    return f"{errors} of {cases} cases failed to generate ({rate:.0%}, above [ci] max_error_rate {limit:g})"


@dataclass(frozen=True)
class CiPlan:
    """``[ci] experiments`` and ``[ci] max_cost_usd``: the manifests the scaffolded workflow runs
    (project-relative paths) and the most each run may spend (None: no ceiling)."""

    experiments: tuple[str, ...]
    max_cost_usd: float | None


def ci_plan(project: Project) -> CiPlan:
    """Read ``[ci] experiments`` and ``[ci] max_cost_usd`` (both optional), refusing a value that
    is not a list of manifests inside the project, or not a finite number of dollars ≥ 0."""
    table = project.settings.get("ci") or {}
    experiments = table.get("experiments", [])
    if not isinstance(experiments, list) or not all(isinstance(entry, str) and entry for entry in experiments):
        raise ProjectError(f"evalsite.toml: [ci] experiments: needs a list of manifest paths, got {experiments!r}")
    for entry in experiments:
        if not project.inside(Path(entry), "evalsite.toml: [ci] experiments:").is_file():
            raise ProjectError(f"evalsite.toml: [ci] experiments: no manifest {entry}")
    cost = table.get("max_cost_usd")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 <= cost < float("inf")):
        raise ProjectError(f"evalsite.toml: [ci] max_cost_usd: needs a number of dollars ≥ 0, got {cost!r}")
    return CiPlan(tuple(experiments), None if cost is None else float(cost))


def cwd_relative(path: Path) -> Path:
    """``path`` relative to the current folder when it is inside it: it still opens, and reads short
    in messages (``data/qa.jsonl`` rather than an absolute path)."""
    path = Path(path)
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def load_callable(spec: str, project_root: Path, what: str) -> Callable[..., Any]:
    """Import ``module:function`` relative to the project root."""
    module_name, _, function_name = spec.partition(":")
    if not module_name or not function_name:
        raise TargetError(f"{what} {spec!r}: expected 'module:function'")
    root = str(project_root)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetError(f"{what} {spec!r}: cannot import module {module_name!r}: {exc}") from None
    except Exception as exc:  # the user's module failed while importing (syntax error, raise at top level)
        raise TargetError(f"{what} {spec!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    function: object = getattr(module, function_name, None)
    if not callable(function):
        raise TargetError(f"{what} {spec!r}: module {module_name!r} has no function {function_name!r}")
    return function
