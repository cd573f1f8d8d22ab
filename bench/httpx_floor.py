"""The floor under ``evalsite run`` while httpx is the HTTP API: the modules ``evalsite run``
imports (as its entry imports them: without httpx's command-line client), then N POSTs through
the HTTP targets' own client (``JsonClient``: an ``httpx.Request`` handed to the httpx-aiohttp
transport), at most C in flight, each response read as JSON — and
nothing else: no dataset, no plan, no case records, no run folder.

``bench/runner.py --whole`` runs it beside ``evalsite run`` and the bare aiohttp client
(``bench/bare_aiohttp.py``), so the runner's own work (``evalsite run`` minus this) and the cost
of httpx and of the imports (this minus the bare client) are told apart:

    python bench/httpx_floor.py --url http://127.0.0.1:PORT/v1 [--calls 6000] [--concurrency 32]

prints one JSON line: wall and CPU seconds, peak RSS (MB).
"""

from __future__ import annotations

import asyncio

from client_child import run_client  # bench/, beside this script

from evalsite.cli.lean import httpx_without_its_command_line

httpx_without_its_command_line()  # as the `evalsite` entry does, before anything loads httpx

import evalsite.cli.run  # noqa: E402, F401  (what `evalsite run` imports: the command, the runner, the targets)
from evalsite.calls.targets.http import JsonClient  # noqa: E402

BODY = {"model": "bench", "messages": [{"role": "user", "content": "question"}]}


async def post_all(base_url: str, calls: int, concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)
    client = JsonClient(base_url, {}, [], concurrency)

    async def one() -> None:
        async with gate:
            await client.post("/chat/completions", BODY)

    try:
        await asyncio.gather(*(one() for _ in range(calls)))
    finally:
        await client.aclose()


if __name__ == "__main__":
    run_client("httpx-floor", __doc__, "the base URL, e.g. http://127.0.0.1:PORT/v1", post_all)
