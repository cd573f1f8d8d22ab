"""Typed access to the fields of a JSON object read from a file evalsite did not just write.

The first field of the wrong type raises :class:`~evalsite.errors.RunLogError` with one line naming
the file (``where``) and the field's dotted path, e.g. ``r/run.json: dataset.items must be an
integer >= 0, not a string 'x'``.
"""

from __future__ import annotations

import math
from typing import Any

from evalsite.errors import RunLogError

_MISSING = object()


def shown(value: Any) -> str:
    """``value`` as a message quotes it: at most 40 characters (an integer too long for Python to
    write out, past 4,300 digits, by its size)."""
    try:
        text = repr(value)
    except ValueError:
        return f"of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    return text if len(text) <= 40 else text[:37] + "..."


def json_kind(value: Any) -> str:
    """What a message calls a JSON value's type: ``an object``, ``a list``, ``null``, ``a number``…"""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _non_finite(value: int | float) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


class FieldReader:
    """Typed access to one JSON object's fields; the first bad one raises naming ``where`` and its key."""

    def __init__(self, data: Any, where: str, what: str, prefix: str = ""):
        if not isinstance(data, dict):
            raise RunLogError(f"{where}: {what} must be a JSON object, not {json_kind(data)}")
        self.data, self.where, self.prefix = data, where, prefix

    def bad(self, key: str, expected: str, value: Any) -> RunLogError:
        return RunLogError(f"{self.where}: {self.prefix}{key} must be {expected}, not {json_kind(value)} {shown(value)}")

    def _get(self, key: str, required: bool) -> Any:
        value = self.data.get(key, _MISSING)
        if value is _MISSING and required:
            raise RunLogError(f"{self.where}: {self.prefix}{key} is missing")
        return None if value is _MISSING else value

    def text(self, key: str, *, required: bool = False) -> str | None:
        value = self._get(key, required)
        if value is None and not required:
            return None
        if not isinstance(value, str):
            raise self.bad(key, "a string", value)
        return value

    def integer(self, key: str, *, required: bool = False, minimum: int | None = None,
                maximum: int | None = None) -> int | None:
        value = self._get(key, required)
        if value is None and not required:
            return None
        if (isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum)
                or (maximum is not None and value > maximum)):
            bounds = (f" from {minimum} to {maximum}" if minimum is not None and maximum is not None
                      else f" >= {minimum}" if minimum is not None else f" <= {maximum}" if maximum is not None else "")
            raise self.bad(key, "an integer" + bounds, value)
        return value

    def number(self, key: str, within: tuple[float, float] | None = None) -> float | None:
        """A number, from ``within``'s low to its high when given (``NaN`` and infinities are kept:
        summaries treat them as unknown)."""
        value = self._get(key, False)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.bad(key, "a number", value)
        if within is not None and not within[0] <= value <= within[1] and not _non_finite(value):
            raise self.bad(key, f"a number from {within[0]:g} to {within[1]:g}", value)
        return float(value)

    def flag(self, key: str) -> bool | None:
        value = self._get(key, False)
        if value is not None and not isinstance(value, bool):
            raise self.bad(key, "true, false or null", value)
        return value

    def mapping(self, key: str) -> dict[str, Any] | None:
        value = self._get(key, False)
        if value is not None and not isinstance(value, dict):
            raise self.bad(key, "an object", value)
        return value

    def objects(self, key: str) -> dict[str, dict[str, Any]]:
        """An object whose every value is an object (``evaluators``); a name that would not print
        as one line (``"a\\nb"``) is quoted in the message: ``evaluators['a\\nb']``."""
        value = self.mapping(key) or {}
        for name, spec in value.items():
            if not isinstance(spec, dict):
                raise self.bad(f"{key}.{name}" if name.isprintable() else f"{key}[{shown(name)}]", "an object", spec)
        return value

    def texts(self, key: str) -> list[str] | None:
        """A list of strings (``critical`` item ids)."""
        value = self._get(key, False)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise self.bad(key, "a list of strings", value)
        return value

    def inner(self, key: str) -> FieldReader:
        """The fields of the object under ``key`` (an absent key reads as an empty object)."""
        value = self.mapping(key)
        return FieldReader({} if value is None else value, self.where, "", prefix=f"{self.prefix}{key}.")
