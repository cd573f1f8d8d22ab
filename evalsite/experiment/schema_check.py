"""The manifest's JSON Schema, and how a value that breaks it reads to a user.

One schema (``evalsite/experiment/schema/manifest.schema.json``, the file editors use for
completion) checks manifests and step files; each violation becomes ``key.path: what is wrong``
in plain words (``must be a whole number, got the string '3'``), an unknown key gets the closest
known one (:func:`evalsite.errors.did_you_mean`, also used for arms, items, settings and target kinds).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema._utils import Unset  # an error field nothing set (jsonschema has no public name for it)
from jsonschema.exceptions import ValidationError, best_match

from evalsite.errors import did_you_mean
from evalsite.jsonshape import JSONObject

SCHEMA_PATH = Path(__file__).parent / "schema" / "manifest.schema.json"
TYPE_PHRASES = {
    "string": "a string", "integer": "a whole number", "number": "a number", "object": "a mapping",
    "array": "a list", "boolean": "true or false", "null": "null",
}


@lru_cache(maxsize=1)
def manifest_schema() -> JSONObject:
    schema: JSONObject = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def schema_problems(data: Any, definition: str | None = None) -> list[str]:
    """``data`` checked against the schema, or against one of its ``$defs`` (a step file: ``step_list``)."""
    schema = manifest_schema() if definition is None else {"$ref": f"#/$defs/{definition}", "$defs": manifest_schema()["$defs"]}
    errors = sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: _sortable(e.absolute_path))
    problems: list[str] = []
    for error in errors:
        problems += [p for p in _describe(error) if p not in problems]
    return problems


def _sortable(path: Iterable[str | int]) -> list[tuple[int, Any]]:
    return [(0, part) if isinstance(part, int) else (1, str(part)) for part in path]


def key_path(parts: Iterable[str | int]) -> str:
    """``("arms", 0, "params")`` → ``arms[0].params``."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _join(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)


def _describe(error: ValidationError) -> list[str]:
    where, kind, expected, value = key_path(error.absolute_path), error.validator, error.validator_value, error.instance
    if isinstance(kind, Unset) or isinstance(expected, Unset) or isinstance(value, Unset) or isinstance(error.schema, Unset):
        return [f"{where or 'the manifest'}: {error.message}"]  # only an error built by hand lacks these; iter_errors' never do
    schema = error.schema if isinstance(error.schema, Mapping) else {}  # a `false` subschema: the error has no keyword
    if kind == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        return [
            f"{_join(where, key)}: unknown key{did_you_mean(key, allowed)} (allowed: {', '.join(allowed)})"
            for key in value if key not in allowed
        ]
    if kind == "required":
        return [f"{_join(where, key)}: required key is missing" for key in expected if key not in value]
    if kind in ("anyOf", "oneOf"):
        deeper = [e for e in error.context if len(e.absolute_path) > len(error.absolute_path)]
        if deeper:
            return _describe(best_match(deeper))
        phrases = [type_phrase(option.get("type")) for option in expected if "type" in option]
        return [f"{where}: must be {' or '.join(phrases)}, got {value_phrase(value)}"]
    message = _describe_value(kind, expected, value, schema)
    return [f"{where or 'the manifest'}: {message or error.message}"]


def _describe_value(kind: str, expected: Any, value: Any, schema: Mapping[str, Any]) -> str | None:
    if kind == "type":
        return f"must be {type_phrase(expected)}, got {value_phrase(value)}"
    if kind in ("enum", "const"):
        options = [str(o) for o in (expected if kind == "enum" else [expected])]
        return f"must be {'one of ' if len(options) > 1 else ''}{', '.join(options)}, got {value!r}{did_you_mean(value, options)}"
    if kind == "minimum":
        return f"must be at least {expected}, got {value!r}"
    if kind == "maximum":
        return f"must be at most {expected}, got {value!r}"
    if kind == "exclusiveMinimum":
        return f"must be more than {expected}, got {value!r}"
    if kind == "exclusiveMaximum":
        return f"must be less than {expected}, got {value!r}"
    if kind in ("minItems", "minProperties"):
        return f"needs at least {expected} entr{'y' if expected == 1 else 'ies'}"
    if kind == "minLength":
        return "must not be empty"
    if kind == "pattern":
        return f"{value!r} is not allowed: {schema.get('description') or 'must match ' + expected}"
    return None


def type_phrase(type_name: str | list[str] | None) -> str:
    names = type_name if isinstance(type_name, list) else [type_name]
    return " or ".join(TYPE_PHRASES.get(str(name), str(name)) for name in names)


def value_phrase(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    return f"{type(value).__name__} {value!r}"
