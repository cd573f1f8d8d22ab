"""HTTP clients side by side: evalsite's own (aiohttp directly), httpx over aiohttp, httpx over
sharded httpcore pools, and bare aiohttp.

Each client makes N POSTs of a chat-completions body to the fake server (tests/fakeserver.py,
in its own process, answering after a fixed latency) with at most C in flight, in a fresh
process so its CPU and peak memory are its own. The figures decided what
evalsite.execute.targets.http posts through (issue 17): httpx's request and response models
cost about as much CPU per call as the whole aiohttp client, so the targets use aiohttp
directly. The httpx clients need the extra ``pip install 'evalsite[bench]'``:

    python bench/transports.py [--calls 6000] [--latency 0.02] [--concurrency 32]

Prints one line per client: wall seconds, CPU seconds (user + system), peak RSS, and the
ratio of wall and CPU to the bare aiohttp client's. Run it a few times; quote medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evalsite.execute.targets.http import JsonClient, shared_ssl_context  # noqa: E402

CLIENTS = ("evalsite", "httpx-aiohttp", "sharded", "bare-aiohttp")
CONNECTIONS_PER_SHARD = 4
BODY = {"model": "bench", "messages": [{"role": "user", "content": "question"}]}


async def with_evalsite(url: str, calls: int, concurrency: int) -> None:
    base, path = url.rsplit("/chat/completions", 1)[0], "/chat/completions"
    client = JsonClient(base, {}, [], concurrency)
    try:
        async def one() -> None:
            await client.post(path, BODY)

        await bounded(one, calls, concurrency)
    finally:
        await client.aclose()


async def with_httpx(url: str, calls: int, concurrency: int, transport) -> None:
    import httpx

    async with httpx.AsyncClient(timeout=None, transport=transport) as client:
        async def one() -> None:
            response = await client.post(url, json=BODY)
            response.json()

        await bounded(one, calls, concurrency)


async def with_aiohttp(url: str, calls: int, concurrency: int) -> None:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def one() -> None:
            async with session.post(url, json=BODY) as response:
                await response.json()

        await bounded(one, calls, concurrency)


async def bounded(one, calls: int, concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def guarded() -> None:
        async with gate:
            await one()

    await asyncio.gather(*(guarded() for _ in range(calls)))


def run_client(name: str, url: str, calls: int, concurrency: int) -> dict:
    started = time.perf_counter()
    if name == "bare-aiohttp":
        asyncio.run(with_aiohttp(url, calls, concurrency))
    elif name == "evalsite":
        asyncio.run(with_evalsite(url, calls, concurrency))
    elif name == "httpx-aiohttp":
        asyncio.run(with_httpx(url, calls, concurrency, httpx_aiohttp_transport(concurrency)))
    else:
        asyncio.run(with_httpx(url, calls, concurrency, sharded_transport(concurrency)))
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"client": name, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}


# The transports evalsite used before, kept to measure against ----------------------------------


def httpx_aiohttp_transport(max_connections: int):
    """httpx over aiohttp's pool (the targets' transport before they used aiohttp directly)."""
    import httpx
    from httpx_aiohttp import AiohttpTransport

    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return AiohttpTransport(verify=shared_ssl_context(), limits=limits)


def sharded_transport(max_connections: int):
    """One client's connections spread over small httpcore pools, each request to the least busy.

    httpcore re-checks every connection of a pool whenever it assigns a request, so one pool of
    32 connections under load spends more time on bookkeeping than on calls (encode/httpx#3215:
    157 requests/s at concurrency 32 on a 20 ms server, against 384 with pools of four). Pools
    are added as the number of requests in flight grows, up to ``max_connections`` in total.
    """
    import httpx

    class Once:
        def __init__(self, action):
            self.action = action

        def __call__(self) -> None:
            action, self.action = self.action, None
            if action is not None:
                action()

    class ReleasingStream(httpx.AsyncByteStream):
        """A response body that frees its pool's slot when closed (read to the end or abandoned)."""

        def __init__(self, stream, release: Once):
            self.stream = stream
            self.release = release

        async def __aiter__(self):
            async for chunk in self.stream:
                yield chunk

        async def aclose(self) -> None:
            try:
                await self.stream.aclose()
            finally:
                self.release()

    class ShardedTransport(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.max_shards = max(1, -(-max_connections // CONNECTIONS_PER_SHARD))
            self.shards: list[httpx.AsyncHTTPTransport] = []
            self.busy: list[int] = []

        def _least_busy(self) -> int:
            index = min(range(len(self.busy)), key=self.busy.__getitem__) if self.busy else None
            if index is None or (self.busy[index] >= CONNECTIONS_PER_SHARD and len(self.shards) < self.max_shards):
                limits = httpx.Limits(max_connections=CONNECTIONS_PER_SHARD,
                                      max_keepalive_connections=CONNECTIONS_PER_SHARD)
                self.shards.append(httpx.AsyncHTTPTransport(limits=limits, verify=shared_ssl_context()))
                self.busy.append(0)
                index = len(self.shards) - 1
            return index

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            index = self._least_busy()
            self.busy[index] += 1
            release = Once(lambda: self.busy.__setitem__(index, self.busy[index] - 1))
            try:
                response = await self.shards[index].handle_async_request(request)
            except BaseException:
                release()
                raise
            return httpx.Response(response.status_code, headers=response.headers,
                                  stream=ReleasingStream(response.stream, release), extensions=response.extensions)

        async def aclose(self) -> None:
            for shard in self.shards:
                await shard.aclose()

    return ShardedTransport()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=6000)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.only:
        print(json.dumps(run_client(options.only, options.url, options.calls, options.concurrency)))
        return
    server = subprocess.Popen([sys.executable, str(REPO / "tests" / "fakeserver.py"), "--delay", str(options.latency)],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        figures: dict[str, list[dict]] = {name: [] for name in CLIENTS}
        for _ in range(options.rounds):  # interleaved, so drift in the machine's speed hits every client
            for name in CLIENTS:
                child = subprocess.run([sys.executable, __file__, "--only", name, "--url", url, "--calls", str(options.calls),
                                        "--concurrency", str(options.concurrency)], capture_output=True, text=True, check=True)
                figures[name].append(json.loads(child.stdout.splitlines()[-1]))
    finally:
        server.terminate()
        server.wait()
    report(figures, options)


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def report(figures: dict[str, list[dict]], options) -> None:
    bare = {key: median([f[key] for f in figures["bare-aiohttp"]]) for key in ("wall", "cpu")}
    ideal = options.calls * options.latency / options.concurrency
    print(f"{options.calls} calls × {options.latency * 1000:g} ms at concurrency {options.concurrency} "
          f"(ideal {ideal:.2f} s); medians of {options.rounds} interleaved rounds")
    for name, runs in figures.items():
        wall, cpu, peak = (median([f[key] for f in runs]) for key in ("wall", "cpu", "peak_mb"))
        print(f"{name:<14} wall {wall:6.2f} s ({wall / bare['wall']:.2f}× bare)  cpu {cpu:6.2f} s "
              f"({cpu / bare['cpu']:.2f}× bare)  peak {peak:5.0f} MB")


if __name__ == "__main__":
    main()
