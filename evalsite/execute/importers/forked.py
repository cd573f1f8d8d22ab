"""Part of an import's work done by a second process, for the machine's second core.

:func:`forked` runs ``work()`` in a child made by ``os.fork``: the child starts with everything
the import has read so far (no state is copied or pickled on the way in; only ``work``'s small
result comes back, pickled, through a pipe), so the child runs exactly the code and data the
parent would. Linux only: elsewhere (no ``fork``, or macOS, where forking a process that may
hold system frameworks is unsafe) :func:`forked` returns None and the caller does the work
itself. The parent always either collects the child (:meth:`Forked.result`) or stops it
(:meth:`Forked.cancel`) before it goes on, so no child outlives the import or writes after it.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_OK, _RAISED = "ok", "raised"


class Forked(Generic[T]):
    """A child process computing one value; :meth:`result` waits for it."""

    def __init__(self, pid: int, reading: int):
        self.pid = pid
        self._reading = reading

    def result(self) -> T:
        """The child's value, or the exception it raised, raised again here."""
        with os.fdopen(self._reading, "rb") as pipe:
            payload = pipe.read()
        os.waitpid(self.pid, 0)
        if not payload:
            raise RuntimeError(f"import worker process {self.pid} ended without a result")
        outcome, value = pickle.loads(payload)
        if outcome == _RAISED:
            raise value
        return value  # type: ignore[no-any-return]

    def cancel(self) -> None:
        """Stop the child (if it still runs) and reap it."""
        os.close(self._reading)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:  # pragma: no cover - already gone (and reaped below)
            pass
        os.waitpid(self.pid, 0)


def forked(work: Callable[[], T]) -> Forked[T] | None:
    """``work()`` started in a child process, or None where this platform cannot fork safely."""
    if sys.platform != "linux":
        return None
    reading, writing = os.pipe()
    pid = os.fork()
    if pid:
        os.close(writing)
        return Forked(pid, reading)
    os.close(reading)
    _child(work, writing)  # never returns
    return None  # pragma: no cover


def _child(work: Callable[[], object], writing: int) -> None:
    """Run ``work`` and send its outcome; leave by ``os._exit``, so nothing of the parent's
    stack (its ``finally`` clauses, ``atexit``, unflushed output) runs a second time."""
    status = 0
    try:
        try:
            payload = pickle.dumps((_OK, work()))
        except BaseException as exc:  # every failure goes back to the parent, which raises it
            payload = _raised(exc)
        with os.fdopen(writing, "wb") as pipe:
            pipe.write(payload)
    except BaseException:  # the parent reads no payload and says so
        status = 1
    finally:
        os._exit(status)


def _raised(exc: BaseException) -> bytes:
    """The exception, pickled as it is when it can be (the evalsite errors can), else as text."""
    try:
        return pickle.dumps((_RAISED, exc))
    except Exception:  # an exception holding something unpicklable
        return pickle.dumps((_RAISED, RuntimeError(f"import worker: {type(exc).__name__}: {exc}")))
