"""Secrets: which names look like one, and scrubbing known secret values out of what is written.

A manifest may name a secret only through the environment (``api_key_env``, ``headers_env``,
any ``*_env`` key): a param, setting or header whose *name* looks like a secret is refused before
anything runs, because its value would be recorded with the run and published by the site.

The values a run did read from the environment (API keys, ``headers_env`` headers) are scrubbed
from every record before it is written: not only the exact value but any part of it of
:data:`MIN_PART` characters or more, in any letter case, so an error echoing the key minus its
last character, or upper-cased, does not leak it either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: A name part that marks a secret (``openai_api_key``, ``client_secret``, ``auth_token``, ``X-Api-Key``).
SECRET_PARTS = frozenset({
    "key", "apikey", "token", "secret", "password", "passwd", "pwd", "cookie", "auth", "authorization",
    "credential", "credentials", "bearer",
})
#: A last name part saying the value is *about* a secret, not the secret: ``api_key_env`` (the
#: variable holding it), ``pad_token_id``, ``max_token_count``, ``key_file``, ``secret_name``.
NOT_A_SECRET_LAST = frozenset({"env", "id", "ids", "count", "limit", "budget", "length", "len", "size", "file",
                               "path", "name", "type"})
MIN_PART = 8
MASK = "***"
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")


def name_parts(name: str) -> list[str]:
    """``openaiApiKey`` / ``X-Api-Key`` / ``client_secret`` → lower-case parts."""
    return [part.lower() for part in _SEPARATORS.split(_CAMEL.sub("_", name)) if part]


def looks_secret(name: Any) -> bool:
    """Whether a param, setting or header called ``name`` would hold a secret: one of its parts is
    in :data:`SECRET_PARTS` and its last part is not in :data:`NOT_A_SECRET_LAST`."""
    if not isinstance(name, str):
        return False
    parts = name_parts(name)
    return bool(parts) and parts[-1] not in NOT_A_SECRET_LAST and any(part in SECRET_PARTS for part in parts)


def secret_pattern(secrets: Iterable[str]) -> re.Pattern[str] | None:
    """One case-insensitive pattern finding every run of ``MIN_PART`` characters taken from a
    secret (each secret shorter than that: the whole of it); ``None`` when there is nothing to hide."""
    pieces = set()
    for secret in secrets:
        if not secret:
            continue
        if len(secret) < MIN_PART:
            pieces.add(secret)
        else:
            pieces.update(secret[i:i + MIN_PART] for i in range(len(secret) - MIN_PART + 1))
    if not pieces:
        return None
    alternatives = "|".join(re.escape(piece) for piece in sorted(pieces, key=lambda p: (-len(p), p)))
    return re.compile(f"(?=({alternatives}))", re.IGNORECASE)


def scrub(text: str, pattern: re.Pattern[str] | None) -> str:
    """``text`` with every stretch covered by a piece of a secret replaced by ``***``."""
    if pattern is None or not text:
        return text
    spans: list[list[int]] = []
    for match in pattern.finditer(text):
        start, end = match.start(1), match.end(1)
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out += [text[last:start], MASK]
        last = end
    out.append(text[last:])
    return "".join(out)


def scrub_all(value: Any, pattern: re.Pattern[str] | None) -> Any:
    """A copy of a JSON-like value with :func:`scrub` applied to every string, keys included."""
    if pattern is None:
        return value
    if isinstance(value, str):
        return scrub(value, pattern)
    if isinstance(value, dict):
        return {scrub_all(k, pattern): scrub_all(v, pattern) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_all(v, pattern) for v in value]
    return value
