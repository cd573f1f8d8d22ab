"""Bounded, strict reading of JSON and YAML from outside (datasets, manifests).

``json.loads`` and PyYAML recurse once per nesting level, so a 100k-deep array or a 20k-deep YAML
list ends in ``RecursionError``; a ``\\ud800`` escape decodes to a lone surrogate that no UTF-8
writer accepts; a key given twice silently keeps the last value; YAML aliases can expand a small
file into billions of values when it is later copied or hashed. These helpers turn each of those
into a one-line problem that the caller prefixes with the file and line.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from evalsite.jsonshape import JSONObject, lone_surrogate

MAX_DEPTH = 100  # nesting levels in one row or manifest; real data stays far below
MAX_VALUES = 1_000_000  # values in one manifest, each use of a YAML alias counted again
#: what a JSON text needs to decode to a lone surrogate: one of its own, or an escape of one (\\udXXX)
_SURROGATE_SOURCE = re.compile(r"[\ud800-\udfff]|\\u[dD][89a-fA-F]")


class DuplicateKey(ValueError):
    """An object names ``key`` twice."""

    def __init__(self, key: str):
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def unique_object(pairs: list[tuple[str, Any]]) -> JSONObject:
    """``object_pairs_hook`` for ``json.loads``: a key given twice is :class:`DuplicateKey`."""
    data: JSONObject = dict(pairs)
    if len(data) == len(pairs):
        return data
    data = {}  # a key repeats: find the first one repeated, as the pairs come
    for key, value in pairs:
        if key in data:
            raise DuplicateKey(key)
        data[key] = value
    return data


class NotFinite(ValueError):
    """``NaN``, ``Infinity`` or a number too large for a float (``1e999``): not JSON numbers."""


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotFinite(f"{text} is too large for a number")
    return value


def _no_constant(text: str) -> Any:
    raise NotFinite(f"{text} is not a JSON value")


_STRICT = json.JSONDecoder(object_pairs_hook=unique_object, parse_float=_finite_float, parse_constant=_no_constant)


def json_problem(text: str, line: int | None = None) -> tuple[Any, str | None]:
    """``(value, None)``, or ``(None, problem)`` for text that is not strict, bounded JSON.
    ``line``: the text is that one line of a file, named in every problem."""
    try:
        value = _strict_loads(text)
        problem = None if _plainly_shaped(text) else shape_problem(value)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON on line {(line or 1) + exc.lineno - 1}: {exc.msg}"
    except DuplicateKey as exc:
        problem = f"invalid JSON: {exc} (each key may appear once in an object)"
    except RecursionError:
        problem = too_deep()
    except ValueError as exc:  # NotFinite, or an integer of more than 4300 digits
        problem = f"invalid JSON: {exc}"
    if problem is None:
        return value, None
    return None, problem if line is None else f"line {line}: {problem}"


def _strict_loads(text: str) -> Any:
    """``json.loads(text, object_pairs_hook=unique_object, parse_float=..., parse_constant=...)``
    with its decoder built once (json.loads builds one a call: ~3 us of a dataset row's ~10)."""
    if text.startswith("\ufeff"):  # what json.loads refuses before decoding
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _STRICT.decode(text)


def _plainly_shaped(text: str) -> bool:
    """Whether no value decoded from the JSON ``text`` can have a :func:`shape_problem`, judged from
    the text in C instead of walking the value: too deep needs more than :data:`MAX_DEPTH` opening
    brackets, a lone surrogate a surrogate or a surrogate's escape in the text."""
    return text.count("{") + text.count("[") <= MAX_DEPTH and _SURROGATE_SOURCE.search(text) is None


def too_deep() -> str:
    return f"nested deeper than {MAX_DEPTH} levels"


def too_many(max_values: int) -> str:
    return f"holds more than {max_values} values (YAML aliases repeating a large part?)"


def shape_problem(value: Any, *, max_values: int | None = None) -> str | None:
    """Why a parsed value cannot be used: nested deeper than :data:`MAX_DEPTH`, holding a lone
    surrogate, or (with ``max_values``) expanding to more values than that. Walks iteratively."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    seen = 0
    while pending:
        node, depth = pending.pop()
        seen += 1
        if max_values is not None and seen > max_values:
            return too_many(max_values)
        if isinstance(node, str):
            if (surrogate := lone_surrogate(node)) is not None:
                return f"holds a lone surrogate {surrogate} (not valid Unicode text)"
        elif isinstance(node, (dict, list)):
            if depth >= MAX_DEPTH:
                return too_deep()
            children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
            pending.extend((child, depth + 1) for child in children)
    return None
