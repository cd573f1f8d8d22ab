"""Read the members of an Inspect ``.eval`` log: a ZIP whose members are zstd-compressed.

Current Inspect versions compress members with zstd (ZIP method 93), which Python's ``zipfile``
cannot decompress before 3.14. ``zipfile`` still reads the central directory (names, sizes,
offsets, CRCs); this module reads each member's raw bytes from its local header and
decompresses them with ``zstandard``, one member at a time, checking the CRC. Stored and
deflated members (older logs) go through ``zipfile`` itself.

:func:`write_zstd_zip` writes such a file; tests and ``bench/importers.py`` use it to build logs
the way Inspect does.
"""

from __future__ import annotations

import json
import struct
import time
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import zstandard

from evalsite.errors import SourceError
from evalsite.execute.importers.jsonstream import json_problem

ZSTD_METHOD = 93
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_CENTRAL_HEADER = struct.Struct("<4sHHHHHHIIIHHHHHII")
_END_RECORD = struct.Struct("<4sHHHHIIH")
_LOCAL_SIGNATURE, _CENTRAL_SIGNATURE, _END_SIGNATURE = b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06"


class EvalZip:
    """An open ``.eval`` file; use as a context manager."""

    def __init__(self, path: Path, label: str | None = None):
        self.path = Path(path)
        self.label = label or str(path)
        try:
            self._zip = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise SourceError(f"{self.label}: not a readable .eval (ZIP) file: {exc}") from None
        self._raw = open(self.path, "rb")
        self._decompressor = zstandard.ZstdDecompressor()

    def __enter__(self) -> EvalZip:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self._raw.close()
        self._zip.close()

    def names(self) -> list[str]:
        return self._zip.namelist()

    def read(self, name: str) -> bytes:
        info = self._zip.getinfo(name)
        if info.compress_type != ZSTD_METHOD:
            try:
                return self._zip.read(info)
            except (zipfile.BadZipFile, NotImplementedError, zlib.error) as exc:
                raise SourceError(f"{self.label}: member {name} is unreadable: {exc}") from None
        data = self._decompress(info)
        if zlib.crc32(data) != info.CRC:
            raise SourceError(f"{self.label}: member {name} is corrupt (CRC mismatch)")
        return data

    def read_json(self, name: str) -> Any:
        try:
            return json.loads(self.read(name))
        except ValueError as exc:  # syntax, encoding, or an integer past 4,300 digits
            raise SourceError(f"{self.label}: member {name} is not valid JSON: {json_problem(exc)}") from None

    def _decompress(self, info: zipfile.ZipInfo) -> bytes:
        self._raw.seek(info.header_offset)
        header = self._raw.read(_LOCAL_HEADER.size)
        if len(header) < _LOCAL_HEADER.size or header[:4] != _LOCAL_SIGNATURE:
            raise SourceError(f"{self.label}: member {info.filename} has no local header (damaged file)")
        name_length, extra_length = _LOCAL_HEADER.unpack(header)[-2:]
        self._raw.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
        compressed = self._raw.read(info.compress_size)
        try:
            # Inspect writes a large member as several zstd frames: read them all, not just the first
            return self._decompressor.decompressobj(read_across_frames=True).decompress(compressed)
        except zstandard.ZstdError as exc:
            raise SourceError(f"{self.label}: member {info.filename} is not valid zstd data: {exc}") from None


def write_zstd_zip(path: Path, members: Iterable[tuple[str, bytes]], level: int = 3,
                   frame_size: int | None = None) -> None:
    """Write ``members`` as a ZIP of zstd-compressed (method 93) entries, as Inspect does.

    ``frame_size``: compress each member as consecutive zstd frames of this many bytes (Inspect
    does so for large members); default one frame per member."""
    compressor = zstandard.ZstdCompressor(level=level)
    stamp = time.localtime()
    dos_time = (stamp.tm_hour << 11) | (stamp.tm_min << 5) | (stamp.tm_sec // 2)
    dos_date = ((stamp.tm_year - 1980) << 9) | (stamp.tm_mon << 5) | stamp.tm_mday
    central = []
    with open(path, "wb") as out:
        for name, data in members:
            encoded = name.encode("utf-8")
            step = frame_size or max(len(data), 1)
            compressed = b"".join(compressor.compress(data[at:at + step]) for at in range(0, max(len(data), 1), step))
            crc, offset = zlib.crc32(data), out.tell()
            out.write(_LOCAL_HEADER.pack(_LOCAL_SIGNATURE, 63, 0x800, ZSTD_METHOD, dos_time, dos_date,
                                         crc, len(compressed), len(data), len(encoded), 0))
            out.write(encoded)
            out.write(compressed)
            central.append(_CENTRAL_HEADER.pack(_CENTRAL_SIGNATURE, 63, 63, 0x800, ZSTD_METHOD, dos_time, dos_date,
                                                crc, len(compressed), len(data), len(encoded), 0, 0, 0, 0, 0,
                                                offset) + encoded)
        start = out.tell()
        for record in central:
            out.write(record)
        size = out.tell() - start
        out.write(_END_RECORD.pack(_END_SIGNATURE, 0, 0, len(central), len(central), size, start, 0))
