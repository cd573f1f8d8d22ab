"""aiohttp and its httpx transport (httpx-aiohttp), imported without loading the CA bundle into a
context that verifies nothing.

aiohttp makes two default SSL contexts when it is imported (``aiohttp.connector``): one that
verifies (for ``ssl=True``) and one that does not (for ``ssl=False``: ``CERT_NONE``, no host name
check). Both load the system's CA bundle (``set_default_verify_paths``), ~0.23 G instructions
(~50 ms of CPU) each: a tenth of ``evalsite run``'s start-up. A context with ``CERT_NONE``
never consults its trust store, so that second load changes nothing a connection does; it is
skipped here (while aiohttp is imported, a context whose ``verify_mode`` is ``CERT_NONE`` loads
no CA paths). The verifying context is made as aiohttp makes it. evalsite's own clients pass
their own context (:func:`~evalsite.calls.targets.http.aiohttp_transport`) and use neither.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["AiohttpTransport", "aiohttp"]


@contextmanager
def _unverifying_contexts_load_no_ca_paths() -> Iterator[None]:
    load = ssl.SSLContext.set_default_verify_paths

    def load_unless_unverifying(context: ssl.SSLContext) -> None:
        if context.verify_mode != ssl.CERT_NONE:
            load(context)

    ssl.SSLContext.set_default_verify_paths = load_unless_unverifying  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        ssl.SSLContext.set_default_verify_paths = load  # type: ignore[method-assign]


with _unverifying_contexts_load_no_ca_paths():  # (nothing to skip if aiohttp is loaded already)
    import aiohttp
    from httpx_aiohttp import AiohttpTransport
