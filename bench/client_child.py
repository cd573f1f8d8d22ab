"""What the client children of the runner benchmarks share (standard library only, so the bare
client's start-up stays a bare client's): their command line, and the one JSON line they print."""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from collections.abc import Callable, Coroutine
from typing import Any


def run_client(name: str, doc: str, url_help: str, post_all: Callable[[str, int, int], Coroutine[Any, Any, None]]) -> None:
    """Parse ``--url --calls --concurrency``, run ``post_all(url, calls, concurrency)`` and print
    one JSON line: the client's name, wall and CPU seconds, peak RSS (MB)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--url", required=True, help=url_help)
    parser.add_argument("--calls", type=int, default=6000)
    parser.add_argument("--concurrency", type=int, default=32)
    options = parser.parse_args()
    started = time.perf_counter()
    asyncio.run(post_all(options.url, options.calls, options.concurrency))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"client": name, "wall": time.perf_counter() - started,
                      "cpu": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}))
