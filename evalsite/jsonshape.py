"""Reading JSON whose shape nobody promised (provider replies, other tools' logs), and its text
that is not Unicode: a lone surrogate, found (:func:`lone_surrogate_in`) or replaced (:func:`as_unicode`)."""

from __future__ import annotations

import re
from typing import Any, TypeAlias

#: What :func:`field_at` returns where the path leads nowhere (``None`` is a value JSON can hold).
MISSING = object()
_SURROGATE = re.compile("[\ud800-\udfff]")


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one: a missing or malformed block reads
    as having no keys."""
    return value if isinstance(value, dict) else {}


def as_text(value: Any) -> str:
    """A value JSON has no type for (bytes, a set, a project's object), written as its ``str``: the
    ``default`` of every encoder of a run's records. An object whose ``__str__`` raises (a project's
    class whose ``__init__`` skipped what ``__str__`` reads) is written as a placeholder naming its
    type and the exception, so one bad value never stops a run mid-way."""
    try:
        return str(value)
    except Exception as exc:  # a project's own __str__ may raise anything
        return f"<{type(value).__name__} object: str() raised {type(exc).__name__}>"


def described(exc: BaseException) -> str:
    """``Type: message`` of an exception a project's code raised, for a case's or a score's error;
    one whose ``__str__`` raises is described by :func:`as_text` (``Type: <Type object: str()
    raised …>``), never left to escape the ``except`` that caught it."""
    return f"{type(exc).__name__}: {as_text(exc)}"


def field_at(value: Any, dotted: str) -> Any:
    """The value at a dotted path through objects and lists (``choices.0.text``), or :data:`MISSING`."""
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


#: Any value JSON can hold, as :func:`json.loads` returns it.
JSONValue: TypeAlias = "str | int | float | bool | None | list[JSONValue] | dict[str, JSONValue]"

#: A JSON object whose values are read where they are used, not when it is typed: a dataset row,
#: an arm's params, a manifest mapping before it is validated, an evaluator's parameters. Its
#: values are ``Any`` rather than :data:`JSONValue` because a caller builds such objects from
#: values of narrower types (``dict`` is invariant) and each reader checks the field it needs.
JSONObject: TypeAlias = dict[str, Any]


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in ``text`` as its JSON escape (``\\ud83d``), else None: half a
    surrogate pair, which an escape in JSON text can decode to and UTF-8 cannot encode."""
    found = _SURROGATE.search(text)
    return None if found is None else f"\\u{ord(found.group(0)):04x}"


def lone_surrogate_in(value: Any) -> str | None:
    """:func:`lone_surrogate` of the first text in a decoded JSON value (keys too) that holds one."""
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, str):
            if (found := lone_surrogate(node)) is not None:
                return found
        elif isinstance(node, dict):
            pending += [*node.keys(), *node.values()]
        elif isinstance(node, list):
            pending += node
    return None


def escaped_lone_surrogate(text: str, value: Any) -> str | None:
    """:func:`lone_surrogate_in` of ``value``, the decoding of JSON ``text``, looked for only when the
    text holds an escape that may be half a pair (``\\udXXX``): a substring test on every other text."""
    return lone_surrogate_in(value) if "\\ud" in text or "\\uD" in text else None


def as_unicode(value: Any) -> Any:
    """``value`` with every text (keys too) made valid Unicode: a surrogate pair held as two code
    points joined into its character, a lone surrogate (half a pair; what ``surrogateescape``
    decoding makes of an invalid byte) replaced by U+FFFD. UTF-8 cannot encode either as it is."""
    if isinstance(value, str):
        return value if _SURROGATE.search(value) is None else value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {as_unicode(key): as_unicode(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [as_unicode(inner) for inner in value]
    return value
