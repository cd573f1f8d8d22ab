"""HTTP transports side by side: the sharded httpcore pools, httpx-aiohttp, evalsite's client, bare aiohttp.

Clients: ``sharded`` (httpx over httpcore split into pools of four, the transport before),
``httpx-aiohttp`` (``AsyncClient.post`` over httpx-aiohttp), ``evalsite`` (the HTTP targets'
``JsonClient``: an ``httpx.Request`` handed straight to the same transport) and
``bare-aiohttp`` (bench/bare_aiohttp.py, which imports neither httpx nor evalsite).

Each client makes N POSTs of a chat-completions body to the fake server (tests/fakeserver.py,
in its own process, answering after a fixed latency) with at most C in flight, in a fresh
process so its CPU and peak memory are its own. The figures decide which transport
evalsite.calls.targets.http puts under httpx (issue 17):

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

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.fake_provider import fake_provider  # noqa: E402
from evalsite.calls.targets.http import JsonClient, aiohttp_transport, shared_ssl_context  # noqa: E402

CLIENTS = ("sharded", "httpx-aiohttp", "evalsite", "bare-aiohttp")
CONNECTIONS_PER_SHARD = 4
BODY = {"model": "bench", "messages": [{"role": "user", "content": "question"}]}


async def with_httpx(url: str, calls: int, concurrency: int, transport) -> None:
    async with httpx.AsyncClient(timeout=None, transport=transport) as client:
        async def one() -> None:
            response = await client.post(url, json=BODY)
            response.json()

        await bounded(one, calls, concurrency)


async def with_evalsite(base_url: str, calls: int, concurrency: int) -> None:
    client = JsonClient(base_url, {}, [], concurrency)

    async def one() -> None:
        reply = await client.post("/chat/completions", BODY)
        assert not isinstance(reply, str), reply

    try:
        await bounded(one, calls, concurrency)
    finally:
        await client.aclose()


async def bounded(one, calls: int, concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def guarded() -> None:
        async with gate:
            await one()

    await asyncio.gather(*(guarded() for _ in range(calls)))


def run_client(name: str, url: str, calls: int, concurrency: int) -> dict:
    started = time.perf_counter()
    if name == "httpx-aiohttp":
        asyncio.run(with_httpx(url, calls, concurrency, aiohttp_transport(concurrency)))
    elif name == "evalsite":
        asyncio.run(with_evalsite(url.removesuffix("/chat/completions"), calls, concurrency))
    else:
        asyncio.run(with_httpx(url, calls, concurrency, ShardedTransport(concurrency)))
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"client": name, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}


def client_command(name: str, url: str, calls: int, concurrency: int) -> list[str]:
    """The command line of one client's process."""
    script = REPO / "bench" / ("bare_aiohttp.py" if name == "bare-aiohttp" else "transports.py")
    return [sys.executable, str(script), *(["--only", name] if name != "bare-aiohttp" else []), "--url", url,
            "--calls", str(calls), "--concurrency", str(concurrency)]


# The transport evalsite used before httpx-aiohttp, kept to measure against -------------------


class ShardedTransport(httpx.AsyncBaseTransport):
    """One client's connections spread over small httpcore pools, each request to the least busy.

    httpcore re-checks every connection of a pool whenever it assigns a request, so one pool of
    32 connections under load spends more time on bookkeeping than on calls (encode/httpx#3215:
    157 requests/s at concurrency 32 on a 20 ms server, against 384 with pools of four). Pools
    are added as the number of requests in flight grows, up to ``max_connections`` in total.
    """

    def __init__(self, max_connections: int):
        self.max_shards = max(1, -(-max_connections // CONNECTIONS_PER_SHARD))
        self.shards: list[httpx.AsyncHTTPTransport] = []
        self.busy: list[int] = []

    def _least_busy(self) -> int:
        index = min(range(len(self.busy)), key=self.busy.__getitem__) if self.busy else None
        if index is None or (self.busy[index] >= CONNECTIONS_PER_SHARD and len(self.shards) < self.max_shards):
            limits = httpx.Limits(max_connections=CONNECTIONS_PER_SHARD, max_keepalive_connections=CONNECTIONS_PER_SHARD)
            self.shards.append(httpx.AsyncHTTPTransport(limits=limits, verify=shared_ssl_context()))
            self.busy.append(0)
            index = len(self.shards) - 1
        return index

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = self._least_busy()
        self.busy[index] += 1
        release = _Once(lambda: self.busy.__setitem__(index, self.busy[index] - 1))
        try:
            response = await self.shards[index].handle_async_request(request)
        except BaseException:
            release()
            raise
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_ReleasingStream(response.stream, release),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        for shard in self.shards:
            await shard.aclose()


class _Once:
    def __init__(self, action):
        self.action = action

    def __call__(self) -> None:
        action, self.action = self.action, None
        if action is not None:
            action()


class _ReleasingStream(httpx.AsyncByteStream):
    """A response body that frees its pool's slot when closed (read to the end or abandoned)."""

    def __init__(self, stream, release: _Once):
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=6000)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=CLIENTS[:-1], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.only:
        print(json.dumps(run_client(options.only, options.url, options.calls, options.concurrency)))
        return
    with fake_provider(options.latency) as provider:
        url = f"{provider}/v1/chat/completions"
        figures: dict[str, list[dict]] = {name: [] for name in CLIENTS}
        for _ in range(options.rounds):  # interleaved, so drift in the machine's speed hits every client
            for name in CLIENTS:
                child = subprocess.run(client_command(name, url, options.calls, options.concurrency),
                                       capture_output=True, text=True, check=True)
                figures[name].append(json.loads(child.stdout.splitlines()[-1]))
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
