"""Decompression on a budget, for compressed bytes from outside: an Inspect ``.eval`` member, a
provider's ``Content-Encoding: gzip`` reply.

A few kilobytes of zstd or deflate can stand for gigabytes (a "bomb"), and a size declared beside
them (a ZIP's central directory, a ``Content-Length``) says nothing about what they decode to.
So nothing here decodes in one call: input is written in pieces, each zlib call yields at most
:data:`STEP` bytes, zstd writes its output in pieces of that size, and every piece is counted
into a :class:`Budget`, which raises :class:`TooLarge` the moment the total passes its limit.
Memory then stays near the limit whatever the input claims or holds. Every decoder is also a
sink (``write``), so stacked encodings (``Content-Encoding: gzip, zstd``) chain.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
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


class Sink(Protocol):
    def write(self, data: bytes) -> object: ...


class Inflate:
    """gzip, zlib or raw deflate (``wbits``); ``fallback_wbits``: tried instead when the first
    bytes are not valid for ``wbits`` (HTTP ``deflate`` is zlib-wrapped, some servers send it raw)."""

    def __init__(self, sink: Sink, wbits: int, fallback_wbits: int | None = None):
        self.sink = sink
        self._wbits, self._fallback = wbits, fallback_wbits
        self._stream = zlib.decompressobj(wbits)
        self._started = False

    def write(self, data: bytes) -> None:
        try:
            self._inflate(data)
        except zlib.error as exc:
            if self._started or self._fallback is None:
                raise DecodeError(str(exc)) from None
            self._stream, self._fallback = zlib.decompressobj(self._fallback), None
            self.write(data)

    def _inflate(self, data: bytes) -> None:
        pending = data
        while pending and not self._stream.eof:
            piece = self._stream.decompress(pending, STEP)
            self._started = self._started or bool(piece)
            self.sink.write(piece)
            pending = self._stream.unconsumed_tail
            while len(piece) == STEP and not pending:  # output still held back by the last call
                piece = self._stream.decompress(b"", STEP)
                self.sink.write(piece)


class Unzstd:
    """zstd, one frame or several in a row (Inspect writes a large member as consecutive frames)."""

    def __init__(self, sink: Sink):
        output = cast(IO[bytes], sink)  # stream_writer calls only write()
        self._writer = zstandard.ZstdDecompressor().stream_writer(output, write_size=STEP, closefd=False)

    def write(self, data: bytes) -> None:
        try:
            self._writer.write(data)
        except zstandard.ZstdError as exc:
            raise DecodeError(str(exc)) from None


#: Content-Encoding values and the decoder of each, writing into a sink
DECODERS: dict[str, Callable[[Sink], Sink]] = {
    "gzip": lambda sink: Inflate(sink, GZIP_WBITS),
    "x-gzip": lambda sink: Inflate(sink, GZIP_WBITS),
    "deflate": lambda sink: Inflate(sink, ZLIB_WBITS, RAW_DEFLATE_WBITS),
    "zstd": Unzstd,
}


def decoding(encodings: list[str], sink: Sink) -> Sink:
    """A sink that undoes ``encodings`` (in the order they were applied) and writes into ``sink``;
    an encoding not in :data:`DECODERS` (other than ``identity``) is a :class:`DecodeError`."""
    for encoding in encodings:
        if encoding in ("", "identity"):
            continue
        if encoding not in DECODERS:
            raise DecodeError(f"unsupported encoding {encoding[:40]!r}")
        sink = DECODERS[encoding](sink)
    return sink
