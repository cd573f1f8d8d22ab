"""What the HTTP targets share: secrets from the environment, one pooled client, error classes.

Secrets (the API key, headers named in ``headers_env``) are read from environment variables
whose *names* the manifest gives; their values are only ever put on outgoing requests and are
redacted from every error message, so they never reach a run log or the site.
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import lru_cache

import aiohttp

from evalsite.errors import MissingSecretError, TargetError
from evalsite.execute.targets.base import TransientTargetError, refuse_secret_names
from evalsite.runlog.secrets import scrub, secret_pattern

HTTP_SETTINGS = {"model", "base_url", "api_key_env", "headers", "headers_env", "max_connections"}
ERROR_BODY_CHARS = 300


def env_value(name: object, key: str, kind: str) -> str:
    if not isinstance(name, str) or not name:
        raise TargetError(f"settings.{key}: needs the name of an environment variable for target {kind}")
    value = os.environ.get(name)
    if not value:
        raise MissingSecretError(f"settings.{key}: environment variable {name} is not set (target {kind})")
    return value


def api_key(settings: dict, kind: str, default_env: str, default_base_url: str) -> str | None:
    """The key named by ``api_key_env``; by default ``default_env`` for the provider's own URL."""
    if "api_key_env" in settings:
        return env_value(settings["api_key_env"], "api_key_env", kind)
    if settings.get("base_url", default_base_url).rstrip("/") == default_base_url:
        return env_value(default_env, "api_key_env", kind)
    return None


def extra_headers(settings: dict, kind: str) -> tuple[dict[str, str], list[str]]:
    """Literal ``headers`` (refusing secret-looking ones) plus ``headers_env``; returns (headers, secrets)."""
    literal = settings.get("headers") or {}
    from_env = settings.get("headers_env") or {}
    for key, value in (("headers", literal), ("headers_env", from_env)):
        if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise TargetError(f"settings.{key}: needs a mapping of header names to strings (target {kind})")
    refuse_secret_names(literal, "headers", "move it to settings.headers_env (header name → environment variable)")
    headers = dict(literal)
    secrets = []
    for name, variable in from_env.items():
        headers[name] = env_value(variable, f"headers_env.{name}", kind)
        secrets.append(headers[name])
    return headers, secrets


def model_name(rest: str, settings: dict, kind: str) -> str:
    model = rest or settings.get("model")
    if not isinstance(model, str) or not model:
        raise TargetError(f"target {kind}: name the model as '{kind}:<model>' or in settings.model")
    return model


def max_connections(settings: dict, kind: str) -> int:
    value = settings.get("max_connections", 100)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TargetError(f"settings.max_connections: needs a whole number >= 1, got {value!r} (target {kind})")
    return value


def client_from_settings(
    settings: dict, kind: str, *, default_base_url: str, default_key_env: str, key_header: str, key_prefix: str = ""
) -> JsonClient:
    """The pooled client a provider target posts through, with its key and extra headers."""
    headers, secrets = extra_headers(settings, kind)
    key = api_key(settings, kind, default_key_env, default_base_url)
    if key:
        headers[key_header] = key_prefix + key
        secrets.append(key)
    return JsonClient(settings.get("base_url", default_base_url), headers, secrets, max_connections(settings, kind))


class JsonClient:
    """One pooled aiohttp session per target (per run), created inside the run's event loop.

    The runner bounds each call with its own timeout, so the session has none. aiohttp directly,
    not httpx over it: httpx's request and response models cost about as much CPU per call as
    the whole aiohttp client (bench/transports.py), which is what the runner has to spend.
    """

    def __init__(self, base_url: str, headers: dict[str, str], secrets: list[str], connections: int):
        self.base_url = base_url.rstrip("/")
        self.headers = headers
        self.secrets = [s for s in secrets if s]
        self._secret_pattern = secret_pattern(self.secrets)
        self.connections = connections
        self._session: aiohttp.ClientSession | None = None

    def redact(self, text: str) -> str:
        """Any part of a secret of 8+ characters, in any case (:func:`evalsite.runlog.secrets.scrub`)."""
        return scrub(text, self._secret_pattern)

    async def post(
        self, path: str, body: dict, headers: dict[str, str] | None = None
    ) -> tuple[dict | None, Mapping[str, str] | None, str | None]:
        """POST JSON (with this request's extra ``headers``); returns ``(data, headers, None)`` or
        ``(None, None, error)`` for a final failure.

        Raises :class:`TransientTargetError` for what is worth retrying.
        """
        if self._session is None:
            self._session = pooled_session(self.headers, self.connections, tls=self.base_url.startswith("https:"))
        try:
            async with self._session.post(self.base_url + path, json=body, headers=headers) as response:
                status, reason, raw = response.status, response.reason, await response.read()
                response_headers = response.headers
        except aiohttp.InvalidURL as exc:
            return None, None, self.redact(f"invalid URL: {exc}")
        except (aiohttp.ServerTimeoutError, TimeoutError) as exc:
            raise TransientTargetError(self.redact(f"timed out: {type(exc).__name__}")) from None
        except aiohttp.ClientError as exc:
            raise TransientTargetError(self.redact(f"connection error: {type(exc).__name__}: {exc}")) from None
        if status == 429 or status >= 500:
            raise TransientTargetError(self._status_error(status, reason, raw),
                                       retry_after(response_headers.get("retry-after")),
                                       response_headers.get("x-request-id") or response_headers.get("request-id"))
        if status >= 400:
            return None, None, self._status_error(status, reason, raw)
        try:
            data = json.loads(raw)
        except ValueError:
            snippet = raw.decode("utf-8", "replace")[:ERROR_BODY_CHARS]
            return None, None, self.redact(f"HTTP {status}: the response is not JSON: {snippet!r}")
        if not isinstance(data, dict):
            return None, None, f"HTTP {status}: expected a JSON object, got {type(data).__name__}"
        return data, response_headers, None

    def _status_error(self, status: int, reason: str | None, raw: bytes) -> str:
        body = " ".join(raw.decode("utf-8", "replace").split())[:ERROR_BODY_CHARS]
        return self.redact(f"HTTP {status} {reason or ''}: {body}".rstrip(": ").replace("  ", " "))

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class ModelOverHttp:
    """What the provider targets share: a model name and one pooled client, closed with the run."""

    def __init__(self, model: str, client: JsonClient):
        self.model = model
        self.client = client

    @property
    def secrets(self) -> list[str]:
        return self.client.secrets

    async def aclose(self) -> None:
        await self.client.aclose()


@lru_cache(maxsize=1)
def shared_ssl_context() -> ssl.SSLContext:
    """One verifying SSL context for every pool of every client: loading the CA bundle costs
    milliseconds and memory per context, and nothing in it differs between pools (certifi's CA
    bundle when installed, as httpx used, else the system's)."""
    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


def pooled_session(headers: dict[str, str], max_connections: int, tls: bool = True) -> aiohttp.ClientSession:
    """An aiohttp session keeping up to ``max_connections`` connections alive, verifying TLS with
    the one shared SSL context, without a cookie jar (a provider API sets none worth keeping).
    ``tls`` false (a plain ``http://`` base URL): the CA bundle is not loaded; aiohttp's own
    verifying context still covers a redirect to ``https://``."""
    connector = aiohttp.TCPConnector(limit=max_connections, ssl=shared_ssl_context() if tls else True)
    return aiohttp.ClientSession(headers=headers, connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                 timeout=aiohttp.ClientTimeout(total=None))


def retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta seconds or an HTTP date); None if absent or bad."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def chat_messages(rendered) -> list[dict]:
    """A rendered input as chat messages: a string becomes one user message."""
    if isinstance(rendered, str):
        return [{"role": "user", "content": rendered}]
    if isinstance(rendered, list):
        return rendered
    return [{"role": "user", "content": str(rendered)}]


def number_or_none(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
