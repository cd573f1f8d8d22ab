"""Run a coroutine from synchronous code, whether or not an event loop is already running.

The Python API is used from scripts (no loop) and from notebooks (Jupyter runs one): there,
``asyncio.run`` refuses, so the coroutine runs on a fresh loop in a worker thread and the
caller waits for it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    values: list[T] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            values.append(asyncio.run(coroutine))
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    thread = threading.Thread(target=worker, name="evalsite-run-sync")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return values[0]
