"""The fake provider (tests/fakeserver.py) in its own process, for the benchmarks that make HTTP calls."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@contextmanager
def fake_provider(latency: float) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` of a fake provider answering every call after ``latency`` seconds;
    stopped on leaving the block."""
    server = subprocess.Popen([sys.executable, str(REPO / "tests" / "fakeserver.py"), "--delay", str(latency)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().split()[1])
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()
