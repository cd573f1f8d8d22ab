"""Secrets: which names look like one, and scrubbing known secret values out of what is written.

A manifest may name a secret only through the environment (``api_key_env``, ``headers_env``,
any ``*_env`` key): a param, setting or header whose *name* looks like a secret is refused before
anything runs, because its value would be recorded with the run and published by the site.

The values a run did read from the environment (API keys, ``headers_env`` headers) are scrubbed
from every record before it is written: not only the exact value but any part of it of
:data:`MIN_PART` characters or more, in any letter case, so an error echoing the key minus its
last character, or upper-cased, does not leak it either.

Credentials written *in* a URL (``https://user:PASSWORD@host``, ``?api_key=…``, ``&sig=…``) are
redacted wherever a URL is recorded (:func:`redact_urls`): the run header's config and submitted
manifest, fingerprints, the git remote, error messages. The request itself uses the real URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote

#: A name part that marks a secret (``openai_api_key``, ``client_secret``, ``auth_token``, ``X-Api-Key``).
SECRET_PARTS = frozenset({
    "key", "apikey", "token", "secret", "password", "passwd", "pwd", "cookie", "auth", "authorization",
    "credential", "credentials", "bearer",
})
#: A last name part saying the value is *about* a secret, not the secret: ``api_key_env`` (the
#: variable holding it), ``pad_token_id``, ``max_token_count``, ``key_file``, ``secret_name``.
NOT_A_SECRET_LAST = frozenset({"env", "id", "ids", "count", "limit", "budget", "length", "len", "size", "file",
                               "path", "name", "type"})
#: Query parameter name parts that carry a credential beyond :data:`SECRET_PARTS`: the signature of a
#: signed URL (Azure SAS ``sig``, AWS ``X-Amz-Signature``).
SECRET_QUERY_PARTS = frozenset({"sig", "signature"})
MIN_PART = 8
MASK = "***"
REDACTED = "<redacted>"
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


def redact_secrets(value: Any, *, names: bool = True) -> Any:
    """A copy of a JSON-like ``value`` with the credentials in every URL it holds redacted
    (:func:`redact_urls`) and, with ``names``, secret-named keys' values replaced by ``<redacted>``.

    Keys ending in ``_env`` name an environment variable rather than hold a secret, so they stay.
    """
    if isinstance(value, dict):
        return {k: REDACTED if names and looks_secret(str(k)) and v is not None else redact_secrets(v, names=names)
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact_secrets(v, names=names) for v in value]
    if isinstance(value, str) and "://" in value:
        return redact_urls(value)
    return value


def redact_header(header: dict[str, Any]) -> dict[str, Any]:
    """A run header as it may be written: the URLs of its resolved ``config`` and of the manifest
    texts it quotes (``submitted_manifest``, ``rescore_manifest.text``) without credentials
    (:func:`redact_urls`). Secret-named keys never reach a header's config (a manifest holding one is
    refused; an importer redacts its source's in the source's own way), and the fingerprint is
    redacted where it is built (its hash is over that)."""
    redacted = dict(header)
    if "config" in redacted:
        redacted["config"] = redact_secrets(redacted["config"], names=False)
    if isinstance(redacted.get("submitted_manifest"), str):
        redacted["submitted_manifest"] = redact_urls(redacted["submitted_manifest"])
    rescore = redacted.get("rescore_manifest")
    if isinstance(rescore, dict) and isinstance(rescore.get("text"), str):
        redacted["rescore_manifest"] = {**rescore, "text": redact_urls(rescore["text"])}
    return redacted


# scheme://authority path ?query #fragment; a URL ends at whitespace, a quote or an angle bracket
_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<authority>[^/?#\s'\"<>`]*)(?P<path>[^?#\s'\"<>`]*)"
                  r"(?:\?(?P<query>[^#\s'\"<>`]*))?(?:#(?P<fragment>[^\s'\"<>`]*))?")
_TRAILING = ",;)]}"  # punctuation after a URL in prose or a YAML flow mapping, not part of it
_REDACTED_VALUE = quote(REDACTED)


def redact_urls(text: str) -> str:
    """``text`` with every ``scheme://`` URL's credentials redacted, everything else kept byte for byte:
    the user information (``user:password@``, or a lone ``TOKEN@``) is cut out and the value of every
    query or fragment parameter whose name looks like a secret (:func:`secret_query_name`) becomes
    ``%3Credacted%3E``. The host, port, path and other parameters stay, so a changed host still
    reads as one. ``git@github.com:a/b`` (no scheme) is left as it is."""
    if "://" not in text:
        return text
    return _URL.sub(_redacted_url, text)


def url_secrets(url: str) -> list[str]:
    """The credentials a URL carries (its user information's password, or a lone user name, and the
    values of secret-named parameters), decoded: what :func:`redact_urls` takes out of it."""
    found = []
    for match in map(_without_trailing, _URL.finditer(url)):
        userinfo = match["authority"].rpartition("@")[0]
        if userinfo:
            user, _, password = userinfo.partition(":")
            found.append(unquote(password or user))
        for part in (match["query"], match["fragment"]):
            found += [unquote(value) for name, value in _parameters(part) if value and secret_query_name(name)]
    return [value for value in found if value]


def secret_query_name(name: str) -> bool:
    """Whether a URL parameter called ``name`` (percent-decoded) holds a credential."""
    decoded = unquote(name)
    return looks_secret(decoded) or any(part in SECRET_QUERY_PARTS for part in name_parts(decoded))


def _without_trailing(match: re.Match[str]) -> re.Match[str]:
    """The URL of ``match`` without the punctuation that ends the sentence or mapping around it."""
    return _URL.match(match[0].rstrip(_TRAILING)) or match


def _redacted_url(match: re.Match[str]) -> str:
    trailing = match[0][len(match[0].rstrip(_TRAILING)):]
    match = _without_trailing(match)
    host = match["authority"].rpartition("@")[2]
    out = match["scheme"] + host + match["path"]
    if match["query"] is not None:
        out += "?" + _redacted_parameters(match["query"])
    if match["fragment"] is not None:
        out += "#" + _redacted_parameters(match["fragment"])
    return out + trailing


def _parameters(part: str | None) -> list[tuple[str, str]]:
    return [(piece.partition("=")[0], piece.partition("=")[2]) for piece in (part or "").split("&") if "=" in piece]


def _redacted_parameters(part: str) -> str:
    pieces = []
    for piece in part.split("&"):
        name, equals, value = piece.partition("=")
        pieces.append(f"{name}={_REDACTED_VALUE}" if equals and value and secret_query_name(name) else piece)
    return "&".join(pieces)
