"""Manifest rules that protect the user from values a schema lets through.

Secrets: a param, setting or header (of an arm, an evaluator, a sweep variable or a hook step) whose name
looks like a secret (:func:`evalsite.runlog.secrets.looks_secret`) is refused, since its value
would be recorded with the run and published; only ``*_env`` keys, which name an environment
variable, may point at one. The check runs when the manifest loads, before anything is written.

JSON Schema's ``minimum``/``maximum`` compare with ``<``, which is false for NaN, so
``limits.max_cost_usd: .nan`` met every bound and then switched the cost ceiling off. No manifest
value has a use for NaN or infinity (neither can even be written to a run's JSON), so any
non-finite number anywhere is refused, naming its key.

Names that become paths (an experiment's, an arm's, an imported dataset's) are safe names
(:func:`is_safe_name`); this module is light, so ``evalsite import`` checks ``--dataset`` without
loading the manifest's reader (YAML, the JSON Schema validator).
"""

from __future__ import annotations

import math
import re
from typing import Any

from evalsite.jsonshape import JSONObject
from evalsite.runlog.secrets import looks_secret

MAX_CONCURRENCY = 1000  # the schema's maximum for `concurrency`, and --concurrency's
MAX_REPEAT = 10000  # the schema's maximum for `repeat`, and --repeat's
SAFE_NAME = re.compile(r"^(?!\.+$)(?!.*\.\.)[A-Za-z0-9_.-]{1,100}$")
SAFE_NAME_RULE = "letters, digits, '-', '_' and '.' only (at most 100), without '..'"


def is_safe_name(value: Any) -> bool:
    """A name that may become a path: letters, digits, ``-``, ``_``, ``.``; no ``..``."""
    return isinstance(value, str) and SAFE_NAME.match(value) is not None


def number_problems(value: Any, where: str = "") -> list[str]:
    """A problem for every NaN or infinite number inside ``value``, as ``key.path: …``."""
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{where or 'the manifest'}: must be a finite number, got {value!r}"]
    if isinstance(value, dict):
        return [p for key, inner in value.items() for p in number_problems(inner, f"{where}.{key}" if where else str(key))]
    if isinstance(value, list):
        return [p for index, inner in enumerate(value) for p in number_problems(inner, f"{where}[{index}]")]
    return []


def secret_problems(data: JSONObject) -> list[str]:
    """A problem for every secret-looking key in the arms, the evaluators, the sweep variables and the hooks."""
    found = [path for index, arm in enumerate(data.get("arms") or [])
             for section in ("settings", "params") for path in _secret_paths(_get(arm, section), f"arms[{index}].{section}")]
    found += [path for index, spec in enumerate(data.get("evaluators") or []) for path in _secret_paths(spec, f"evaluators[{index}]")]
    found += [f"sweep.variables.{name}" for name in (_get(data.get("sweep"), "variables") or {}) if looks_secret(name)]
    found += _secret_paths(data.get("hooks"), "hooks")  # a step's config is in the recorded manifest too
    return [f"{path}: looks like a secret written into the manifest; keep it in an environment "
            "variable and name that variable instead (e.g. api_key_env: OPENAI_API_KEY)"
            for path in found]


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _secret_paths(value: Any, where: str) -> list[str]:
    if isinstance(value, list):
        return [path for index, inner in enumerate(value) for path in _secret_paths(inner, f"{where}[{index}]")]
    if not isinstance(value, dict):
        return []
    found = []
    for key, inner in value.items():
        if looks_secret(key):
            found.append(f"{where}.{key}")
        elif not (isinstance(key, str) and key.endswith("_env")):  # headers_env: names of variables
            found += _secret_paths(inner, f"{where}.{key}")
    return found
