"""Which proxy an HTTP target's calls go through: the one the environment names, as urllib reads it.

``HTTPS_PROXY`` for an ``https://`` base URL, ``HTTP_PROXY`` for ``http://``, ``ALL_PROXY`` for
either (lower-case names too, which win), unless ``NO_PROXY`` names the host (a host or domain
suffix, ``*`` for every host). httpx's own client reads the same variables per request; the
targets hand requests straight to the transport (:class:`~evalsite.calls.targets.http.JsonClient`),
so the choice is made once per client, whose base URL never changes. aiohttp, under httpx,
speaks to HTTP proxies (an ``https://`` URL goes through them by ``CONNECT``); a SOCKS proxy is
refused with the variable's name rather than silently bypassed.
"""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass

import httpx

from evalsite.errors import TargetError

PROXY_SCHEMES = ("http", "https")


@dataclass(frozen=True)
class EnvironmentProxy:
    """The proxy for one base URL, and its password (a secret: redacted wherever text is written)."""

    proxy: httpx.Proxy
    password: str | None


def environment_proxy(base_url: str, kind: str) -> EnvironmentProxy | None:
    """The proxy the environment names for ``base_url``, or None (none set, or ``NO_PROXY`` matches)."""
    url = httpx.URL(base_url)
    proxies = urllib.request.getproxies_environment()  # the *_PROXY variables; no_proxy is "no"
    key = url.scheme if url.scheme in proxies else "all"
    value = proxies.get(key)
    if not value or _bypassed(url, proxies):
        return None
    variable = f"{key.upper()}_PROXY"
    if "://" not in value:  # "proxy.corp:3128", as curl and httpx read it
        value = f"http://{value}"
    try:
        proxy_url = httpx.URL(value)
    except httpx.InvalidURL as exc:
        raise TargetError(f"{variable}: not a proxy URL ({exc}) (target {kind})") from None
    if not proxy_url.host:
        raise TargetError(f"{variable}: names no proxy host (target {kind})")
    if proxy_url.scheme not in PROXY_SCHEMES:
        shown = proxy_url.copy_with(username=None, password=None)
        raise TargetError(f"{variable}={shown}: only http:// and https:// proxies are supported (target {kind})")
    return EnvironmentProxy(httpx.Proxy(proxy_url), proxy_url.password or None)


def _bypassed(url: httpx.URL, proxies: dict[str, str]) -> bool:
    """``NO_PROXY`` names the host (urllib's reading; typeshed omits the function)."""
    host = f"{url.host}:{url.port}" if url.port else url.host
    return bool(urllib.request.proxy_bypass_environment(host, proxies))  # type: ignore[attr-defined]
