"""Part of a command's work done by a second process, for the machine's second core (an import's
second share of runs, a site build's new run page and compare page).

:func:`fork_child` runs ``body(writing)`` in a child made by ``os.fork``, ``writing`` the end of a
pipe whose other end the parent reads: the child starts with everything the parent has read so
far (nothing is copied or pickled on the way in), so it runs exactly the code and data the
parent would. :func:`forked` is the common case: one value computed by the child, sent back
pickled (the runs it wrote, the files it rendered, or the exception it raised); :func:`halving`
maps a list half in a child while the parent goes on. Linux only: elsewhere (no ``fork``, or
macOS, where forking a process that may hold system frameworks is unsafe), or when no core is
spare (:func:`spare_core`), :func:`forked` returns None and the caller does the work itself
(:func:`halving` maps all of it here). The parent
always either collects the child (:meth:`Forked.result`) or stops it (:meth:`Forked.cancel`) before
it goes on, so no child outlives the command or writes after it.

A child can hang where the parent would not: it inherits, at the fork, every lock another thread of
the parent held at that moment (a library's, or the interpreter's own), and nothing in the child
will ever release it. So the parent never waits on a child that has stopped working:
:func:`wait_readable` takes a child that has used no CPU for :data:`STALL_SECONDS` while the parent
waits on it as stuck, stops it and raises :class:`WorkerLost`, which every caller already answers by
doing the child's work itself.
"""

from __future__ import annotations

import logging
import os
import pickle
import select
import signal
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Generic, TypeVar

T = TypeVar("T")
V = TypeVar("V")
R = TypeVar("R")

_OK, _RAISED = "ok", "raised"
#: a child that used no CPU for this long while the parent waited on it is stuck (a lock it inherited
#: at the fork, held by a thread that did not come along); a working child uses CPU every few ms
STALL_SECONDS = 30.0
_LENGTH = struct.Struct("<Q")  # a message's length, before it (_send_each)
_POLL_SECONDS = 1.0
_CHUNK = 1 << 20
log = logging.getLogger(__name__)


class WorkerLost(RuntimeError):
    """The child ended without sending a result (killed, e.g. by the kernel's out-of-memory killer)."""


@dataclass(frozen=True)
class Child:
    """A child process and the end of its pipe this process reads."""

    pid: int
    reading: int

    def stop(self) -> None:
        """Stop the child (if it still runs) and reap it; the caller closes ``reading``."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:  # pragma: no cover - already gone (and reaped below)
            pass
        os.waitpid(self.pid, 0)

    def cpu_ticks(self) -> int | None:
        """The CPU the child has used so far (user + system, in clock ticks), None once it is gone."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()  # after "(name)", which may hold spaces
        except OSError:  # pragma: no cover - no /proc: the child is taken as working
            return None
        return int(fields[11]) + int(fields[12])  # utime, stime: the stat file's 14th and 15th fields

    def wait_readable(self) -> None:
        """Wait until the child's pipe has something to read (or has closed); if the child uses no CPU
        for :data:`STALL_SECONDS` meanwhile, close its pipe, stop it and raise :class:`WorkerLost`."""
        poller = select.poll()
        poller.register(self.reading, select.POLLIN)
        if poller.poll(0):  # the common case, a child ahead of its reader: no /proc read (~5 µs a call)
            return
        ticks, since = self.cpu_ticks(), 0.0
        while not poller.poll(_POLL_SECONDS * 1000):
            now = self.cpu_ticks()
            since = since + _POLL_SECONDS if now is not None and now == ticks else 0.0
            ticks = now
            if since >= STALL_SECONDS:
                log.warning("worker process %d used no CPU for %.0f s (stuck): stopped; its work is done in "
                            "this process", self.pid, since)
                os.close(self.reading)
                self.stop()
                raise WorkerLost(f"worker process {self.pid} was stuck and was stopped")

    def read(self, size: int | None = None) -> bytes:
        """``size`` bytes from the child's pipe (all it writes until it closes the pipe when None),
        fewer if it closes it first; :meth:`wait_readable` before each read."""
        chunks: list[bytes] = []
        left = size
        while left is None or left > 0:
            self.wait_readable()
            chunk = os.read(self.reading, _CHUNK if left is None else min(left, _CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left = None if left is None else left - len(chunk)
        return b"".join(chunks)


def spare_core() -> bool:
    """Whether a second process would find a core to run on: two or more cores this process may
    use, and fewer processes than cores waiting to run on average over the last minute (this
    command included). On a machine kept busy by other work a second process only adds its own
    costs (a fork, the messages), so the command stays in one."""
    cores = len(os.sched_getaffinity(0))
    return cores >= 2 and os.getloadavg()[0] < cores


def fork_child(body: Callable[[int], None]) -> Child | None:
    """``body(writing)`` started in a child process, or None where this platform cannot fork
    safely or no core is spare (:func:`spare_core`)."""
    if sys.platform != "linux" or not spare_core():
        return None
    reading, writing = os.pipe()
    pid = os.fork()
    if pid:
        os.close(writing)
        return Child(pid, reading)
    status = 1
    try:  # the child: leave by os._exit, so nothing of the parent's stack (its finally clauses,
        os.close(reading)  # atexit, unflushed output) runs a second time
        body(writing)
        status = 0
    finally:
        os._exit(status)


class Forked(Generic[T]):
    """A child process computing one value; :meth:`result` waits for it."""

    def __init__(self, child: Child):
        self.child = child

    def result(self) -> T:
        """The child's value, or the exception it raised, raised again here."""
        return _received(self.child, last=True)  # type: ignore[return-value]

    def cancel(self) -> None:
        os.close(self.child.reading)
        self.child.stop()


def forked(work: Callable[[], T]) -> Forked[T] | None:
    """``work()`` computed in a child process, or None where this platform cannot fork safely."""
    child = fork_child(partial(_send_each, [work]))
    return None if child is None else Forked(child)


def halving(work: Callable[[list[V]], list[R]], values: list[V],
            beside: Callable[[], object] | None = None, at: int | None = None) -> Halving[V, R]:
    """``work(values)`` for a ``work`` that maps each value by itself, in steps: a child process
    started now maps the second half (the values from ``at`` on: by default, half of them) and sends it, then computes ``beside()`` (a value of its own)
    and sends that, while this process goes on with its own work; :meth:`Halving.result` then maps
    the first half here and joins the child's, and :meth:`Halving.beside` (with ``beside`` given: it
    must be called, or :meth:`Halving.cancel`) reads the second message and collects the child, so
    this process can do more of its own work while the child computes it. All of it here where no
    child can be started (:func:`fork_child`), or when the child is lost."""
    at = len(values) // 2 if at is None else at
    works = [lambda: work(values[at:]), *([] if beside is None else [beside])]
    return Halving(work, values, at, fork_child(partial(_send_each, works)), beside is not None)


@dataclass
class Halving(Generic[V, R]):
    """A map half done by a child (:func:`halving`); ``child`` None: none (any more)."""

    work: Callable[[list[V]], list[R]]
    values: list[V]
    at: int  # the child maps the values from here on
    child: Child | None
    besides: bool  # the child sends a second message, beside()'s

    def result(self) -> list[R]:
        """``work(values)``; a failure of the first half is raised before the second's. Once."""
        if self.child is None:
            return self.work(self.values)
        try:
            first = self.work(self.values[:self.at])
        except BaseException:
            self.cancel()
            raise
        try:
            second: list[R] = self._message(last=not self.besides)  # type: ignore[assignment]
        except WorkerLost:
            second = self.work(self.values[self.at:])
        return first + second

    def beside(self) -> object:
        """The child's ``beside()``, once :meth:`result` has been read (None without a child, or
        when it was lost); the child collected."""
        return None if self.child is None else self._message(last=True)

    def cancel(self) -> None:
        """Stop the child, when the caller will not read what it sends (nothing once it is collected)."""
        if self.child is not None:
            os.close(self.child.reading)
            self.child.stop()
            self.child = None

    def _message(self, last: bool) -> object:
        """The child's next message (:func:`_received`); ``last``: the child collected after it.
        Once it raises, the child is gone (collected or stopped)."""
        child, self.child = self.child, None
        assert child is not None
        value = _received(child, last)
        self.child = None if last else child
        return value


def _received(child: Child, last: bool) -> object:
    """The child's next message (:func:`_send_each`): its value, or the exception it raised
    raised again here (the child stopped: it sends nothing more); :class:`WorkerLost` when it
    ended before sending it (the child collected) or was stuck (stopped). ``last``: the child
    collected after it."""
    head = child.read(_LENGTH.size)
    size = _LENGTH.unpack(head)[0] if len(head) == _LENGTH.size else -1
    payload = child.read(size) if size >= 0 else b""
    lost = size < 0 or len(payload) != size
    if last or lost:
        os.close(child.reading)
        os.waitpid(child.pid, 0)
    if lost:
        raise WorkerLost(f"worker process {child.pid} ended without a result")
    outcome, value = pickle.loads(payload)
    if outcome == _RAISED:
        if not last:
            os.close(child.reading)
            child.stop()
        raise value
    return value


def _send_each(works: list[Callable[[], object]], writing: int) -> None:
    """The child's side of :class:`Forked` and :class:`Halving`: each work's value (or the
    exception it raised, and then no more) as a message, its length before it, each sent as soon
    as it is computed (:func:`_received` reads them)."""
    with os.fdopen(writing, "wb") as pipe:
        for work in works:
            try:
                payload, raised = pickle.dumps((_OK, work())), False
            except BaseException as exc:  # every failure goes back to the parent, which raises it
                payload, raised = _raised(exc), True
            pipe.write(_LENGTH.pack(len(payload)) + payload)
            pipe.flush()
            if raised:
                break


def _raised(exc: BaseException) -> bytes:
    """The exception, pickled as it is when it can be (the evalsite errors can), else as text."""
    try:
        return pickle.dumps((_RAISED, exc))
    except Exception:  # an exception holding something unpicklable
        return pickle.dumps((_RAISED, RuntimeError(f"worker process: {type(exc).__name__}: {exc}")))
