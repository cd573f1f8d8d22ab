"""Real bombs for the tests of issue 32 (Medium 7): a few kilobytes that decode to gigabytes,
made in a fraction of a second by repeating one small self-contained piece."""

from __future__ import annotations

import struct
import tracemalloc
import zlib
from pathlib import Path

import zstandard

GIB, MIB = 1 << 30, 1 << 20
PIECE = 16 * MIB  # every size below is a multiple of this
LOCAL = struct.Struct("<4sHHHHHIIIHH")
CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
END = struct.Struct("<4sHHHHIIH")
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"


def zstd_zeros(size: int) -> bytes:
    """zstd data decoding to ``size`` zero bytes (a multiple of :data:`PIECE`): one frame, repeated."""
    frame = zstandard.ZstdCompressor(level=3).compress(bytes(PIECE))
    return frame * (size // PIECE)


def deflate_zeros(size: int) -> bytes:
    """Raw deflate decoding to ``size`` zero bytes (a multiple of :data:`PIECE`): one fully flushed
    (byte-aligned, self-contained) run of blocks repeated, then a final empty block."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    chunk = compressor.compress(bytes(PIECE)) + compressor.flush(zlib.Z_FULL_FLUSH)
    return chunk * (size // PIECE) + zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS).flush()


def write_zip(path: Path, members: list[tuple[str, int, bytes, int, int]]) -> Path:
    """A ZIP whose members are ``(name, method, compressed, declared size, crc)``, sizes as given."""
    central = []
    with open(path, "wb") as out:
        for name, method, data, declared, crc in members:
            encoded, offset = name.encode(), out.tell()
            out.write(LOCAL.pack(b"PK\x03\x04", 63, 0x800, method, 0, 0x21, crc, len(data), declared, len(encoded), 0))
            out.write(encoded + data)
            central.append(CENTRAL.pack(b"PK\x01\x02", 63, 63, 0x800, method, 0, 0x21, crc, len(data), declared,
                                        len(encoded), 0, 0, 0, 0, 0, offset) + encoded)
        start = out.tell()
        out.write(b"".join(central))
        out.write(END.pack(b"PK\x05\x06", 0, 0, len(central), len(central), out.tell() - start, start, 0))
    return path


def gzip_zeros(size: int) -> bytes:
    """A valid gzip stream (header, deflate, CRC and size) of ``size`` zero bytes."""
    crc = 0
    for _ in range(size // PIECE):
        crc = zlib.crc32(bytes(PIECE), crc)
    return GZIP_HEADER + deflate_zeros(size) + struct.pack("<II", crc, size & 0xFFFFFFFF)


def zlib_zeros(size: int) -> bytes:
    """A valid zlib stream (HTTP ``deflate``) of ``size`` zero bytes."""
    adler = 1
    for _ in range(size // PIECE):
        adler = zlib.adler32(bytes(PIECE), adler)
    return b"\x78\xda" + deflate_zeros(size) + struct.pack(">I", adler)


def peak_of(action) -> int:
    """The most memory Python allocated while ``action`` ran (every bytearray and bytes counts)."""
    tracemalloc.start()
    try:
        action()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak
