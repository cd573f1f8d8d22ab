"""One large file read by two processes: most of its elements decoded and mapped by a second
one, while this process does the rest and every step that depends on order. The file is an
indented JSON array (promptfoo's results, :class:`~evalsite.execute.importers.jsonstream.JsonArrayStream`)
or JSON Lines (plain rows, :class:`~evalsite.execute.importers.jsonstream.JsonLines`).

Both processes walk the same file with the same stream, which cuts it into runs of elements the
same way in each (the cut depends only on the text and the position). Run ``n`` is decoded here
when it falls in this process's share of the runs (:func:`main_takes`: the reader's choice,
:data:`MAIN_SHARE` by default, one run in three); the second
process steps over those and decodes the others, maps each of their elements with the reader's
function (a promptfoo result or a plain row to its case) and sends, per run, its number, its offsets and the
mapped elements, packed as the reader chooses (:class:`Packing`), as one message through a pipe:
an orjson text (compact bytes, not pickled objects) and raw bytes. This process, reaching such a
run, reads the message and yields what the packing unpacks in the run's place (the mapped elements,
or the plain format's one block of them), so the reader sees every element in file order and does
all the order-dependent work itself (items, repeats, evaluator tallies, the spool): the same cases
in the same order as one process.

This process stays the reference. A run is taken from the second process only when the message
names the same run at the same offsets and that process decoded and mapped all of it; otherwise
(its decoder refused the run, an element did not map, a message that does not match because the
two walks parted after a run one process decoded one element at a time, or the process is gone)
the run is decoded here, and after a mismatch the second process is stopped and this one reads
on alone. So a bad element's error is raised here, with its index or line, in file order, as always.

The mapped values travel as orjson: they come from the reader's decoding of the run (orjson's, or
promptfoo's fields-only one: no NaN or lone surrogate, those runs are refused) and a mapping that
makes strings, floats, integers, booleans, lists and dicts of them, which orjson writes and reads
back unchanged; a message orjson cannot write (an integer past 64 bits, say) sends the run back
to this process. Only for files of at least
:data:`MIN_BYTES`, and only where :func:`~evalsite.forked.fork_child` forks. The
fork happens before this process opens the file, while the import's hash thread may be running;
the second process touches nothing of that thread's (its file, its digest) and leaves by
``os._exit``.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import IO, Any

import orjson

from evalsite.execute.importers.jsonstream import RunShare
from evalsite.forked import Child, WorkerLost, fork_child

#: by default one run in three is decoded in this process, the others in the second one. For a
#: promptfoo case this process spends ~25 µs on one of its own (decoded, mapped, spooled) and ~4 µs on
#: one the second prepared (its message read, the item checked, its line spooled: ~8-12 µs as
#: measured beside the second process and the hash thread, their caches and its waits); the second
#: spends ~22 µs (decoded, mapped, prepared). The import's hash thread runs beside both (the kernel
#: shares the two cores among the three threads, and the thread waits for the GIL between its
#: reads), so the two reading threads are what must be equally busy: on the 200,000-case file the
#: second process used 1.08-1.15 times this one's reading thread's CPU with one run in three here,
#: 0.98-1.05 with 3 in 8 (session 27, pfpipe17); after promptfoo_fields' cheaper decoding (in both)
#: 0.88-0.97 with 3 in 8, 0.94-0.98 with 5 in 14, 1.00-1.03 with 1 in 3 (session 28, block18)
MAIN_SHARE = Fraction(1, 3)
#: smaller files are read by one process: a second costs a fork and its start (a few ms)
MIN_BYTES = 16 << 20
_LENGTHS = struct.Struct("<II")  # of a message's orjson text and of its raw bytes
_PIPE_BYTES = 1 << 20  # the second process may run this far ahead before it waits


def main_takes(number: int, share: Fraction) -> bool:
    """Whether run ``number`` is decoded in this process: ``share``'s numerator runs in each
    ``share.denominator``, spread out (1/3: runs 0, 3, 6, …; 2/5: runs 0, 3, 5, 8, …)."""
    return number * share.numerator % share.denominator < share.numerator


@dataclass(slots=True)
class Mapped:
    """An element as the second process's mapping gave it (orjson's reading of its message). Not
    frozen: one is made for most elements of a large file, and a frozen dataclass's ``__init__``
    costs twice a plain one's (~0.5 µs more, ~0.06 s of this process's CPU for 120,000 rows)."""

    value: Any


@dataclass(frozen=True)
class Packing:
    """How a run's mapped elements travel: ``pack`` (the second process) makes them a JSON value
    and raw bytes, ``unpack`` (this process) makes those the values yielded in the run's place."""

    pack: Callable[[list[Any]], tuple[Any, bytes]]
    unpack: Callable[[Any, bytes], list[Any]]


#: each mapped element sent as it is and yielded as :class:`Mapped`
ELEMENTS = Packing(lambda mapped: (mapped, b""), lambda value, raw: [Mapped(element) for element in value])


class MainShare:
    """This process's side: its own runs decoded here, the others taken from the second process."""

    def __init__(self, child: Child, main_share: Fraction, packing: Packing = ELEMENTS):
        self._child: Child | None = child
        self._main_share = main_share
        self._unpack = packing.unpack

    def claim(self, number: int, start: int, end: int) -> list[Any] | None:
        if main_takes(number, self._main_share) or self._child is None:
            return None
        message = self._message()
        if message is None or message[0][:3] != [number, start, end]:
            self.close()  # the walks have parted (or the process is gone): read on alone
            return None
        (*_, packed), raw = message
        return None if packed is None else self._unpack(packed, raw)

    def decoded(self, values: list[Any] | None) -> None:
        pass

    def finished(self) -> None:
        self.close()

    def close(self) -> None:
        """Stop the second process, if running, and reap it."""
        if self._child is not None:
            os.close(self._child.reading)
            self._child.stop()
            self._child = None

    def _message(self) -> tuple[list[Any], bytes] | None:
        """The second process's next message (its orjson value and raw bytes), None when it has
        ended (or was stuck, and stopped)."""
        assert self._child is not None
        try:
            head = self._child.read(_LENGTHS.size)
            if len(head) < _LENGTHS.size:
                return None
            size, raw_size = _LENGTHS.unpack(head)
            body = self._child.read(size + raw_size)
        except WorkerLost:  # already stopped
            self._child = None
            return None
        if len(body) < size + raw_size:  # it ended while writing
            return None
        value = orjson.loads(memoryview(body)[:size])
        return (value, body[size:]) if isinstance(value, list) else None


class _Done(Exception):
    """The array has ended: the second process has nothing more to do."""


class WorkerShare:
    """The second process's side: other runs stepped over, its own decoded, mapped and sent."""

    def __init__(self, pipe: IO[bytes], mapping: Callable[[Any], Any], main_share: Fraction,
                 packing: Packing = ELEMENTS):
        self._pipe = pipe
        self._mapping = mapping
        self._pack = packing.pack
        self._main_share = main_share
        self._run: list[Any] | None = None  # [number, start, end] of the run being mapped
        self._expected = 0  # elements of that run still to come
        self._mapped: list[Any] | None = []  # None once an element failed to map

    def claim(self, number: int, start: int, end: int) -> list[Any] | None:
        if main_takes(number, self._main_share):
            return []
        self._run = [number, start, end]
        return None

    def decoded(self, values: list[Any] | None) -> None:
        if self._run is None:
            return
        if values is None:  # read one element at a time: left to the main process
            self._send(None)
            return
        self._expected, self._mapped = len(values), []
        if not values:  # a run of blank lines (JSON Lines): its empty message now, none will follow
            self._send(self._mapped)

    def finished(self) -> None:
        raise _Done

    def element(self, value: Any) -> None:
        """One element the stream yielded: mapped when it belongs to a run of this process."""
        if not self._expected:
            return
        self._expected -= 1
        if self._mapped is not None:
            try:
                self._mapped.append(self._mapping(value))
            except Exception:  # the main process maps it again and raises its error, in order
                self._mapped = None
        if not self._expected:
            self._send(self._mapped)

    def _send(self, mapped: list[Any] | None) -> None:
        assert self._run is not None
        try:
            packed, raw = (None, b"") if mapped is None else self._pack(mapped)
            body = orjson.dumps([*self._run, packed])
        except TypeError:  # a value orjson does not write: the main process decodes the run
            body, raw = orjson.dumps([*self._run, None]), b""
        self._pipe.write(b"".join((_LENGTHS.pack(len(body), len(raw)), body, raw)))
        self._run = None


def shared_reading(
    path: Path, stream: Callable[[RunShare], Iterable[Any]], mapping: Callable[[Any], Any],
    main_share: Fraction = MAIN_SHARE, packing: Packing = ELEMENTS,
) -> MainShare | None:
    """Start the second process on ``path`` (``stream(share)``: the same stream this process will
    walk; ``mapping``: an element to what the reader needs of it, JSON-writable once packed;
    ``main_share``: the share of the runs decoded here, :func:`main_takes`; ``packing``: how a
    run's mapped elements travel), or None when the file is too small or the platform cannot fork."""
    if path.stat().st_size < MIN_BYTES:
        return None
    child = fork_child(lambda writing: _second_process(writing, stream, mapping, main_share, packing))
    if child is None:
        return None
    import fcntl  # Linux's, here: fork_child forks only there

    try:
        fcntl.fcntl(child.reading, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except OSError:  # a system whose pipes may not grow so far: the default size works, with more waits
        pass
    return MainShare(child, main_share, packing)


def _second_process(writing: int, stream: Callable[[RunShare], Iterable[Any]], mapping: Callable[[Any], Any],
                    main_share: Fraction, packing: Packing) -> None:
    with os.fdopen(writing, "wb") as pipe:
        share = WorkerShare(pipe, mapping, main_share, packing)
        try:
            for value in stream(share):
                share.element(value)
        except _Done:
            pass
