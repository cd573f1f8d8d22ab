"""What the HTTP targets share: secrets from the environment, one pooled client, error classes.

Secrets (the API key, headers named in ``headers_env``) are read from environment variables
whose *names* the manifest gives; their values are only ever put on outgoing requests and are
redacted from every error message, so they never reach a run log or the site. Credentials written
in ``base_url`` (``user:password@``, ``?api_key=``) are used as written and scrubbed the same way.

A reply is read a piece at a time and never held past ``max_reply_bytes`` (default
:data:`DEFAULT_MAX_REPLY_BYTES`), counted both as received and as decoded from its
``Content-Encoding`` (:mod:`evalsite.calls.decompress`): an endless or oversized reply, or a
gzip bomb, ends that call with the case's error and the run goes on.
"""

from __future__ import annotations

import json
import os
import ssl
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import Any

import httpx

from evalsite.calls.decompress import Budget, DecodeError, TooLarge, decoding
from evalsite.calls.targets.aiohttp_import import AiohttpTransport, aiohttp
from evalsite.calls.targets.base import TransientTargetError, refuse_secret_names
from evalsite.calls.targets.proxies import environment_proxy
from evalsite.errors import MissingSecretError, TargetError
from evalsite.jsonshape import JSONObject
from evalsite.runlog.jsonread import loads
from evalsite.runlog.secrets import MIN_PART, redact_urls, scrub, secret_pattern, url_secrets

HTTP_SETTINGS = {"model", "base_url", "api_key_env", "headers", "headers_env", "max_connections", "max_reply_bytes"}
ERROR_BODY_CHARS = 300
DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024


def env_value(name: object, key: str, kind: str) -> str:
    if not isinstance(name, str) or not name:
        raise TargetError(f"settings.{key}: needs the name of an environment variable for target {kind}")
    value = os.environ.get(name)
    if not value:
        raise MissingSecretError(f"settings.{key}: environment variable {name} is not set (target {kind})")
    return value


def api_key(settings: JSONObject, kind: str, default_env: str, default_base_url: str) -> str | None:
    """The key named by ``api_key_env``; by default ``default_env`` for the provider's own URL."""
    if "api_key_env" in settings:
        return env_value(settings["api_key_env"], "api_key_env", kind)
    if settings.get("base_url", default_base_url).rstrip("/") == default_base_url:
        return env_value(default_env, "api_key_env", kind)
    return None


def extra_headers(settings: JSONObject, kind: str) -> tuple[dict[str, str], list[str]]:
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


def model_name(rest: str, settings: JSONObject, kind: str) -> str:
    model = rest or settings.get("model")
    if not isinstance(model, str) or not model:
        raise TargetError(f"target {kind}: name the model as '{kind}:<model>' or in settings.model")
    return model


def positive_setting(settings: JSONObject, key: str, default: int, kind: str) -> int:
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TargetError(f"settings.{key}: needs a whole number >= 1, got {str(value)[:60]!r} (target {kind})")
    return value


def max_connections(settings: JSONObject, kind: str) -> int:
    return positive_setting(settings, "max_connections", 100, kind)


def client_from_settings(
    settings: JSONObject, kind: str, *, default_base_url: str, default_key_env: str, key_header: str, key_prefix: str = ""
) -> JsonClient:
    """The pooled client a provider target posts through, with its key and extra headers."""
    headers, secrets = extra_headers(settings, kind)
    key = api_key(settings, kind, default_key_env, default_base_url)
    if key:
        headers[key_header] = key_prefix + key
        secrets.append(key)
    base_url = settings.get("base_url", default_base_url)
    # credentials written in the URL are scrubbed like a key, but only when long enough not to mask
    # ordinary words of every reply (a short one is still cut out of every URL written: redact_urls)
    secrets += [value for value in url_secrets(str(base_url)) if len(value) >= MIN_PART]
    proxy = environment_proxy(base_url, kind)
    if proxy is not None and proxy.password:
        secrets.append(proxy.password)
    return JsonClient(base_url, headers, secrets, max_connections(settings, kind), proxy.proxy if proxy else None,
                      positive_setting(settings, "max_reply_bytes", DEFAULT_MAX_REPLY_BYTES, kind))


def endpoint(base_url: str, path: str) -> httpx.URL:
    """``path`` under ``base_url``, the base's query kept after it: Azure OpenAI's
    ``…/deployments/gpt-4o?api-version=2024-06-01`` posts to
    ``…/deployments/gpt-4o/chat/completions?api-version=2024-06-01``, not into the query."""
    base = httpx.URL(base_url)
    return base.copy_with(path=base.path.rstrip("/") + path)


class JsonClient:
    """One pooled ``httpx.AsyncClient`` per target (per run), created inside the run's event loop.

    The runner bounds each call with its own timeout, so the client has none. A request is an
    ``httpx.Request`` handed straight to the client's transport (httpx-aiohttp), built from its
    JSON bytes (encoded as httpx encodes ``json=``), a parsed URL and the headers ``json=`` would
    give it (:class:`RequestHeaders`), both kept per path: the client's per-request machinery
    (merging URL, headers and cookies, auth and redirect generators, event hooks) cost about as
    much CPU as aiohttp's whole request, and the targets use none of it beyond cookies, which are
    still sent and kept. A reply is read from the response's stream into a :class:`Reply`. The
    proxy the environment names (``HTTPS_PROXY``…, :mod:`~evalsite.calls.targets.proxies`) is
    given to the transport; a client with no TLS connection never loads the CA bundle.
    """

    def __init__(self, base_url: str, headers: dict[str, str], secrets: list[str], connections: int,
                 proxy: httpx.Proxy | None = None, max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES):
        self.base_url = base_url.rstrip("/")
        self.headers = headers
        self.secrets = [s for s in secrets if s]
        self._secret_pattern = secret_pattern(self.secrets)
        self.connections = connections
        self.proxy = proxy
        self.max_reply_bytes = max_reply_bytes
        self._client: httpx.AsyncClient | None = None
        self._transport: httpx.AsyncBaseTransport | None = None
        self._urls: dict[str, httpx.URL] = {}
        self._templates: dict[str, RequestHeaders] = {}  # per path, for requests without headers of their own

    @property
    def needs_tls(self) -> bool:
        """Whether any connection of this client is TLS: an ``https://`` base URL or proxy."""
        schemes = [self.base_url, str(self.proxy.url) if self.proxy is not None else ""]
        return any(scheme.lower().startswith("https:") for scheme in schemes)

    def redact(self, text: str) -> str:
        """Any part of a secret of 8+ characters, in any case (:func:`evalsite.runlog.secrets.scrub`),
        and the credentials of any URL quoted (:func:`evalsite.runlog.secrets.redact_urls`)."""
        return scrub(redact_urls(text), self._secret_pattern)

    async def post(
        self, path: str, body: JSONObject, headers: dict[str, str] | None = None
    ) -> tuple[dict[str, Any], httpx.Headers] | str:
        """POST JSON (with this request's extra ``headers``); returns ``(data, headers)``, or the
        error message of a final failure.

        Raises :class:`TransientTargetError` for what is worth retrying.
        """
        try:
            response = await self._send(path, body, headers)
        except httpx.TimeoutException as exc:
            raise TransientTargetError(self.redact(f"timed out: {type(exc).__name__}")) from None
        except httpx.TransportError as exc:
            raise TransientTargetError(self.redact(f"connection error: {type(exc).__name__}: {exc}")) from None
        except TooLarge as exc:
            return (f"the reply is larger than {exc.limit:,} bytes (settings.max_reply_bytes); "
                    "it was not read past that")
        except DecodeError as exc:
            return self.redact(f"the reply's Content-Encoding cannot be decoded: {exc}")
        status = response.status_code
        if status == 429 or status >= 500:
            raise TransientTargetError(self._status_error(response), retry_after(response.headers.get("retry-after")),
                                       response.headers.get("x-request-id") or response.headers.get("request-id"))
        if status >= 400:
            return self._status_error(response)
        if 300 <= status < 400:  # never followed: a POST redirected may lose its body, or its key to another host
            where = response.headers.get("location") or "nowhere given"
            return self.redact(f"HTTP {status}: a redirect to {where[:ERROR_BODY_CHARS]}; redirects are not followed "
                               "(set base_url to where it leads)")
        try:
            data = response.json()
        except ValueError:
            snippet = response.text[:ERROR_BODY_CHARS]
            return self.redact(f"HTTP {status}: the response is not JSON: {snippet!r}")
        except RecursionError:  # json.loads past Python's recursion limit (orjson stops at 1,024 levels)
            return f"HTTP {status}: the response's JSON is nested too deeply to read"
        if not isinstance(data, dict):
            return f"HTTP {status}: expected a JSON object, got {type(data).__name__}"
        return data, response.headers

    async def _send(self, path: str, body: JSONObject, headers: dict[str, str] | None) -> Reply:
        """The reply, read to its end within :attr:`max_reply_bytes` (see :meth:`_read_body`)."""
        client, transport = self._client, self._transport
        if client is None or transport is None:
            transport = self._transport = aiohttp_transport(self.connections, self.proxy, tls=self.needs_tls)
            client = self._client = httpx.AsyncClient(headers=self.headers, timeout=None, transport=transport)
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = endpoint(self.base_url, path)
        if headers:
            merged = client.headers.copy()
            merged.update(headers)
            template = RequestHeaders.of(url, merged)
        else:
            kept = self._templates.get(path)
            template = kept if kept is not None else self._templates.setdefault(path, RequestHeaders.of(url, client.headers))
        content = _request_bytes(body)
        request = httpx.Request("POST", url, headers=template.with_length(len(content)),
                                stream=httpx.ByteStream(content))
        request.read()
        if client.cookies:
            client.cookies.set_cookie_header(request)
        response = await transport.handle_async_request(request)
        try:
            if "set-cookie" in response.headers:
                client.cookies.extract_cookies(response)
            return Reply(response, await self._read_body(response))
        finally:
            await response.aclose()

    async def _read_body(self, response: httpx.Response) -> bytes:
        """The response's body decoded, read a piece at a time from its stream: past
        ``max_reply_bytes`` received or decoded, :class:`TooLarge` is raised and the rest is never read.

        An error reply (status 400 or above) is cut at the limit instead: only its first words are
        shown (:meth:`_status_error`), and a 429 or 5xx must stay worth retrying however long its body."""
        budget = Budget(self.max_reply_bytes)
        encodings = [e.strip().lower() for e in (header(response.headers, "content-encoding") or "").split(",")]
        sink = decoding(encodings, budget)
        received = 0
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        try:
            async for piece in stream:
                received += len(piece)
                if received > self.max_reply_bytes:
                    raise TooLarge(self.max_reply_bytes)
                sink.write(piece)
        except TooLarge:
            if response.status_code < 400:
                raise
        return bytes(budget.data)

    def _status_error(self, response: Reply) -> str:
        body = " ".join(response.text.split())[:ERROR_BODY_CHARS]
        return self.redact(f"HTTP {response.status_code} {response.reason_phrase}: {body}".rstrip(": "))

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()  # closes the transport too
            self._client = self._transport = None


#: how httpx encodes ``json=``: compact UTF-8, no NaN or infinity (one encoder, built once)
_REQUEST_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_REQUEST_ASCII = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def _request_bytes(body: Any) -> bytes:
    """``body`` as httpx's ``json=`` writes it; text UTF-8 cannot hold (a lone surrogate, such as an
    earlier reply of the conversation held) goes as its escape, which JSON allows."""
    text = _REQUEST_JSON.encode(body)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _REQUEST_ASCII.encode(body).encode("ascii")


class RequestHeaders:
    """A JSON POST's headers as ``httpx.Request(json=...)`` sets them (``Host`` first, the client's
    and the request's, then ``Content-Length`` and ``Content-Type`` unless given), kept per path
    with the length left to fill: the request is then built from its bytes without httpx encoding
    the body and merging default headers again on every call."""

    def __init__(self, items: list[tuple[bytes, bytes]], length_at: int | None) -> None:
        self.items = items
        self.length_at = length_at

    @classmethod
    def of(cls, url: httpx.URL, headers: httpx.Headers) -> RequestHeaders:
        raw = headers.raw
        names = {key.lower() for key, _ in raw}
        items = [] if b"host" in names or not url.host else [(b"Host", url.netloc)]
        items += raw
        length_at = None
        if b"content-length" not in names:
            length_at = len(items)
            items.append((b"Content-Length", b""))
        if b"content-type" not in names:
            items.append((b"Content-Type", b"application/json"))
        return cls(items, length_at)

    def with_length(self, length: int) -> list[tuple[bytes, bytes]]:
        items = list(self.items)
        if self.length_at is not None:
            items[self.length_at] = (b"Content-Length", str(length).encode("ascii"))
        return items


class Reply:
    """A response read to its end: its status, headers and (decoded) body."""

    __slots__ = ("response", "content")

    def __init__(self, response: httpx.Response, content: bytes) -> None:
        self.response = response
        self.content = content

    @property
    def status_code(self) -> int:
        return self.response.status_code

    @property
    def reason_phrase(self) -> str:
        return self.response.reason_phrase

    @property
    def headers(self) -> httpx.Headers:
        return self.response.headers

    def json(self) -> Any:
        """The body as ``json.loads`` parses it, by orjson where it surely reads the same
        (:func:`evalsite.runlog.jsonread.loads`)."""
        return loads(self.content)

    @property
    def text(self) -> str:
        """The body as text, as ``httpx.Response.text`` decodes it (its charset, else UTF-8)."""
        return self.content.decode(self.response.encoding or "utf-8", errors="replace")


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
    milliseconds and memory per context, and nothing in it differs between pools."""
    return httpx.create_ssl_context()


@lru_cache(maxsize=1)
def no_tls_context() -> ssl.SSLContext:
    """The context of a client that makes no TLS connection (``http://`` base URL and proxy): it
    verifies as any client context does but trusts no certificate, so it costs nothing to make
    (loading the CA bundle is ~0.1 s of CPU) and a TLS connection through it could never go
    unverified: it fails."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def aiohttp_transport(max_connections: int, proxy: httpx.Proxy | None = None, *,
                      tls: bool = True) -> httpx.AsyncBaseTransport:
    """httpx as the API, aiohttp's connection pool and parser on the wire (httpx-aiohttp);
    ``tls``: whether any connection is TLS (else the CA bundle is never loaded: :func:`no_tls_context`).

    On 6,000 calls × 20 ms at concurrency 32 it beat httpcore split over pools of four (the
    previous transport, kept in bench/transports.py) on wall time and on CPU; see that script.
    """
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    context = shared_ssl_context() if tls else no_tls_context()
    return _AiohttpTransport(verify=context, limits=limits, proxy=proxy)


class _AiohttpTransport(AiohttpTransport):
    """httpx-aiohttp 0.2 reports a refused connection as ``ConnectTimeout``; it is a ConnectError.
    A reply that is not HTTP (a bad status line, a header past aiohttp's limits, a bad
    ``Content-Length``) reaches it as aiohttp's ``ClientResponseError`` (status 400, the URL with
    its query): it is httpx's ``RemoteProtocolError``, as httpx's own transport words it, so it is a
    connection error like any other (retried, the URL's credentials redacted)."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await super().handle_async_request(request)
        except httpx.ConnectTimeout as exc:
            cause = exc.__cause__
            if isinstance(cause, aiohttp.ClientConnectorError) and not isinstance(cause, TimeoutError):
                raise httpx.ConnectError(str(exc), request=request) from cause
            raise
        except aiohttp.ClientResponseError as exc:
            message = " ".join(exc.message.split())
            raise httpx.RemoteProtocolError(f"the reply is not valid HTTP: {message}", request=request) from exc


def header(headers: httpx.Headers, name: str) -> str | None:
    """``headers.get(name)`` for a lower-case ASCII ``name``, the raw names looked at first: httpx's
    own lookup works out the text encoding of every header of the reply before it looks (~2 µs a
    reply, more than the rest of the lookup), for headers that most replies do not have."""
    wanted = name.encode("ascii")
    if any(key.lower() == wanted for key, _ in headers.raw):
        return headers[name]
    return None


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


def chat_messages(rendered: Any) -> list[Any]:
    """A rendered input as chat messages: a string becomes one user message."""
    if isinstance(rendered, str):
        return [{"role": "user", "content": rendered}]
    if isinstance(rendered, list):
        return rendered
    return [{"role": "user", "content": str(rendered)}]
