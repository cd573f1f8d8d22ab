"""Secrets: which names look like one, and scrubbing known secret values out of what is written.

A manifest may name a secret only through the environment (``api_key_env``, ``headers_env``,
any ``*_env`` key): a param, setting or header whose *name* looks like a secret is refused before
anything runs, because its value would be recorded with the run and published by the site.

The values a run did read from the environment (API keys, ``headers_env`` headers) are scrubbed
from every record before it is written: not only the exact value but any part of it of
:data:`MIN_PART` characters or more, in any letter case, so an error echoing the key minus its
last character, or upper-cased, does not leak it either; nor its base64 or percent-encoded forms
(:func:`encoded_forms`). A reversed, spaced-out, hashed or shorter echo is not found (docs/security.md).

Credentials written *in* a URL (``https://user:PASSWORD@host``, ``?api_key=…``, ``&sig=…``) are
redacted wherever a URL is recorded (:func:`redact_urls`): the run header's config and submitted
manifest, fingerprints, the git remote, error messages. The request itself uses the real URL.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus, unquote

#: A name part that marks a secret (``openai_api_key``, ``client_secret``, ``auth_token``, ``X-Api-Key``).
SECRET_PARTS = frozenset({
    "key", "apikey", "token", "secret", "password", "passwd", "pwd", "cookie", "auth", "authorization",
    "credential", "credentials", "bearer", "cookies", "jwt", "passphrase",
})
#: Words found inside a name's parts joined together (``api_keys`` → ``apikeys``, ``clientSecrets``
#: → ``clientsecrets``): a secret however the name is cut or pluralised. ``tokens`` and ``keys``
#: alone are not among them (``max_tokens``, ``required_keys`` are ordinary params).
SECRET_WORDS = ("apikey", "secret", "passw", "passphrase", "jwt", "credential", "bearer", "accesskey",
                "privatekey", "accesstoken", "authtoken", "refreshtoken", "sessiontoken")
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
    in :data:`SECRET_PARTS` or its joined parts hold one of :data:`SECRET_WORDS`, and its last part
    is not in :data:`NOT_A_SECRET_LAST`."""
    if not isinstance(name, str):
        return False
    parts = name_parts(name)
    if not parts or parts[-1] in NOT_A_SECRET_LAST:
        return False
    joined = "".join(parts)
    return any(part in SECRET_PARTS for part in parts) or any(word in joined for word in SECRET_WORDS)


@dataclass(frozen=True)
class SecretPattern:
    """Every piece of the secrets to hide, letter case folded, by length.

    A set lookup of every window of a text: one regular expression alternating hundreds of pieces
    (a key's 8-character runs in each of its encoded forms) took ten times as long on a long reply."""

    pieces: dict[int, frozenset[str]]

    def spans(self, text: str) -> list[list[int]]:
        """``[start, end]`` of every stretch of ``text`` covered by pieces, merged, in order."""
        folded = _fold(text)
        found = sorted((start, start + length) for length, pieces in self.pieces.items()
                       for start in range(len(folded) - length + 1) if folded[start:start + length] in pieces)
        spans: list[list[int]] = []
        for start, end in found:
            if spans and start <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        return spans


def _fold(text: str) -> str:
    """``text`` with each character in one letter case, keeping its length (so positions still
    match): ``ı``, ``I`` and ``i`` read the same, ``İ`` reads as ``i``."""
    if text.isascii():
        return text.lower()
    return "".join(map(_fold_character, text))


@lru_cache(maxsize=4096)
def _fold_character(char: str) -> str:
    return char.upper().lower()[0]


def secret_pattern(secrets: Iterable[str]) -> SecretPattern | None:
    """What finds, in any letter case, every run of ``MIN_PART`` characters taken from a secret or
    from one of its encoded forms (:func:`encoded_forms`; a secret shorter than that: the whole of
    it); ``None`` when there is nothing to hide."""
    pieces: dict[int, set[str]] = {}
    for secret in secrets:
        if not secret:
            continue
        if len(secret) < MIN_PART:
            pieces.setdefault(len(secret), set()).add(_fold(secret))
            continue
        for form in (secret, *encoded_forms(secret)):
            pieces.setdefault(MIN_PART, set()).update(_fold(form[i:i + MIN_PART]) for i in range(len(form) - MIN_PART + 1))
    return SecretPattern({length: frozenset(found) for length, found in pieces.items()}) if pieces else None


def encoded_forms(secret: str) -> list[str]:
    """How a secret is commonly echoed encoded: percent-encoded (``quote`` and ``quote_plus``), and
    base64, standard and URL-safe, with and without padding, at each of the three alignments it can
    have inside a longer encoded text (an ``Authorization: Basic`` header, a JWT, a data URL): there
    only the characters that depend on the secret's bytes alone, with the last one when the secret
    ends the text and without it when more follows (it then mixes in the next byte)."""
    data = secret.encode()
    standard = {base64.b64encode(data).decode()}  # alone, padded
    for offset in range(3):  # 0, 1 or 2 bytes before the secret share its first group of three
        encoded = base64.b64encode(bytes(offset) + data).decode().rstrip("=")[(0, 2, 3)[offset]:]
        standard.add(encoded)
        if (offset + len(data)) % 3:
            standard.add(encoded[:-1])
    url_safe = {form.replace("+", "-").replace("/", "_") for form in standard}
    forms = standard | url_safe | {quote(secret, safe=""), quote_plus(secret, safe="")}
    return sorted(form for form in forms - {secret} if len(form) >= MIN_PART)


def scrub(text: str, pattern: SecretPattern | None) -> str:
    """``text`` with every stretch covered by a piece of a secret replaced by ``***``."""
    if pattern is None or not text:
        return text
    spans = pattern.spans(text)
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out += [text[last:start], MASK]
        last = end
    out.append(text[last:])
    return "".join(out)


def scrub_all(value: Any, pattern: SecretPattern | None) -> Any:
    """A copy of a JSON-like value with :func:`scrub` applied to every string, keys included."""
    if pattern is None:
        return value
    if isinstance(value, str):
        return scrub(value, pattern)
    if isinstance(value, dict):
        return {scrub_all(k, pattern): scrub_all(v, pattern) for k, v in value.items()}
    if isinstance(value, (list, tuple)):  # a tuple a python target returned is written as a list anyway
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
