"""Decompression on a budget, for compressed bytes from outside: an Inspect ``.eval`` member, a
provider's ``Content-Encoding: gzip`` reply.

A few kilobytes of zstd or deflate can stand for gigabytes (a "bomb"), and a size declared beside
them (a ZIP's central directory, a ``Content-Length``) says nothing about what they decode to.
So nothing here decodes in one call: input is fed in pieces, each zlib call yields at most
:data:`STEP` bytes, zstd writes its output in pieces of that size, and every piece is counted
into a :class:`Budget`, which raises :class:`TooLarge` the moment the total passes its limit.
Memory then stays near the limit whatever the input claims or holds.
"""

from __future__ import annotations

import zlib
from typing import IO, Protocol, cast

import zstandard

STEP = 1 << 20  # most bytes one decoding call may produce
GZIP_WBITS, ZLIB_WBITS, RAW_DEFLATE_WBITS = 16 + zlib.MAX_WBITS, zlib.MAX_WBITS, -zlib.MAX_WBITS


class TooLarge(Exception):
    """More than ``limit`` bytes (decoded, or as received) would have been kept."""

    def __init__(self, limit: int):
        super().__init__(f"more than {limit:,} bytes")
        self.limit = limit


class DecodeError(Exception):
    """The bytes are not valid data of their encoding."""


class Budget:
    """Collects bytes up to ``limit``; a write past it raises :class:`TooLarge`."""

    def __init__(self, limit: int):
        self.limit = limit
        self.data = bytearray()

    def write(self, piece: bytes) -> int:
        if len(self.data) + len(piece) > self.limit:
            raise TooLarge(self.limit)
        self.data += piece
        return len(piece)


class Decoder(Protocol):
    def feed(self, data: bytes) -> None: ...


class Plain:
    """No encoding: the bytes themselves are counted."""

    def __init__(self, budget: Budget):
        self.budget = budget

    def feed(self, data: bytes) -> None:
        self.budget.write(data)


class Inflate:
    """gzip, zlib or raw deflate (``wbits``); ``fallback_wbits``: tried instead when the first
    bytes are not valid for ``wbits`` (HTTP ``deflate`` is zlib-wrapped, some servers send it raw)."""

    def __init__(self, budget: Budget, wbits: int, fallback_wbits: int | None = None):
        self.budget = budget
        self._wbits, self._fallback = wbits, fallback_wbits
        self._stream = zlib.decompressobj(wbits)
        self._started = False

    def feed(self, data: bytes) -> None:
        try:
            self._inflate(data)
        except zlib.error as exc:
            if self._started or self._fallback is None:
                raise DecodeError(str(exc)) from None
            self._stream, self._fallback = zlib.decompressobj(self._fallback), None
            self.feed(data)

    def _inflate(self, data: bytes) -> None:
        pending = data
        while pending and not self._stream.eof:
            piece = self._stream.decompress(pending, STEP)
            self._started = self._started or bool(piece)
            self.budget.write(piece)
            pending = self._stream.unconsumed_tail
            while len(piece) == STEP and not pending:  # output still held back by the last call
                piece = self._stream.decompress(b"", STEP)
                self.budget.write(piece)


class Unzstd:
    """zstd, one frame or several in a row (Inspect writes a large member as consecutive frames)."""

    def __init__(self, budget: Budget):
        self.budget = budget
        sink = cast(IO[bytes], budget)  # stream_writer calls only write()
        self._writer = zstandard.ZstdDecompressor().stream_writer(sink, write_size=STEP, closefd=False)

    def feed(self, data: bytes) -> None:
        try:
            self._writer.write(data)
        except zstandard.ZstdError as exc:
            raise DecodeError(str(exc)) from None
