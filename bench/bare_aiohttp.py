"""The reference client of the runner benchmarks: N POSTs of a chat-completions body with a bare
aiohttp client, at most C in flight, each response read as JSON.

It imports aiohttp and the standard library only (no httpx, no evalsite), so its start-up is a
bare client's. bench/transports.py and bench/runner.py --whole run it in a fresh process:

    python bench/bare_aiohttp.py --url http://127.0.0.1:PORT/v1/chat/completions [--calls 6000] [--concurrency 32]

prints one JSON line: wall and CPU seconds, peak RSS (MB).
"""

from __future__ import annotations

import asyncio

import aiohttp
from client_child import run_client  # bench/, beside this script

BODY = {"model": "bench", "messages": [{"role": "user", "content": "question"}]}


async def post_all(url: str, calls: int, concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def one() -> None:
            async with gate, session.post(url, json=BODY) as response:
                await response.json()

        await asyncio.gather(*(one() for _ in range(calls)))


if __name__ == "__main__":
    run_client("bare-aiohttp", __doc__, "the chat completions URL", post_all)
