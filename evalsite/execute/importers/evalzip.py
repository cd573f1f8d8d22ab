"""Read the members of an Inspect ``.eval`` log: a ZIP whose members are zstd-compressed.

Current Inspect versions compress members with zstd (ZIP method 93), which Python's ``zipfile``
cannot decompress before 3.14. ``zipfile`` still reads the central directory (names, sizes,
offsets, CRCs); this module reads each member's raw bytes from its local header and
decompresses them with ``zstandard``, one member at a time, checking the CRC. Stored and
deflated members (older logs) go through ``zipfile`` itself.

A member is decoded a piece at a time (:mod:`evalsite.calls.decompress`) and never past the
size the central directory declares for it, which must itself be at most ``max_member_bytes``
(default :data:`DEFAULT_MAX_MEMBER_BYTES`, ``evalsite import --max-member-mb``): a few kilobytes
declaring 2 GB, or declaring 1 KB and holding 2 GB, are refused naming the file and member
without ever holding more than the limit.

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

from evalsite.calls.decompress import STEP, Budget, DecodeError, TooLarge, Unzstd
from evalsite.errors import SourceError
from evalsite.execute.importers.jsonstream import TOO_DEEP, json_problem

ZSTD_METHOD = 93
DEFAULT_MAX_MEMBER_BYTES = 256 * 1024 * 1024
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_CENTRAL_HEADER = struct.Struct("<4sHHHHHHIIIHHHHHII")
_END_RECORD = struct.Struct("<4sHHHHIIH")
_LOCAL_SIGNATURE, _CENTRAL_SIGNATURE, _END_SIGNATURE = b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06"
_ENCRYPTED = 0x1  # general purpose flag bit 0: the member is encrypted (zipfile then asks for a password)


class EvalZip:
    """An open ``.eval`` file; use as a context manager."""

    def __init__(self, path: Path, label: str | None = None, max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES):
        self.path = Path(path)
        self.label = label or str(path)
        self.max_member_bytes = max_member_bytes
        try:
            self._zip = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise SourceError(f"{self.label}: not a readable .eval (ZIP) file: {exc}") from None
        self._raw = open(self.path, "rb")

    def __enter__(self) -> EvalZip:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._raw.close()
        self._zip.close()

    def names(self) -> list[str]:
        return self._zip.namelist()

    def read(self, name: str) -> bytearray:
        """The member's decoded bytes, refused past its declared size or the limit (module docstring)."""
        info = self._zip.getinfo(name)
        if info.flag_bits & _ENCRYPTED:
            raise SourceError(f"{self.label}: member {name} is encrypted; evalsite reads only unencrypted logs")
        if info.file_size > self.max_member_bytes:
            raise SourceError(f"{self.label}: member {name} declares {info.file_size:,} bytes decompressed, over the "
                              f"limit of {self.max_member_bytes:,} (evalsite import --max-member-mb raises it)")
        budget = Budget(info.file_size)
        try:
            if info.compress_type == ZSTD_METHOD:
                self._decompress(info, budget)
            else:
                self._read_through_zipfile(info, budget)
        except TooLarge:
            raise SourceError(f"{self.label}: member {name} decompresses to more than the {info.file_size:,} bytes it "
                              "declares (a damaged file or a zip bomb)") from None
        if len(budget.data) != info.file_size or zlib.crc32(budget.data) != info.CRC:
            raise SourceError(f"{self.label}: member {name} is corrupt (CRC mismatch)")
        return budget.data

    def read_json(self, name: str) -> Any:
        try:
            return json.loads(self.read(name))
        except ValueError as exc:  # syntax, encoding, or an integer past 4,300 digits
            raise SourceError(f"{self.label}: member {name} is not valid JSON: {json_problem(exc)}") from None
        except RecursionError:
            raise SourceError(f"{self.label}: member {name} is {TOO_DEEP}") from None

    def _read_through_zipfile(self, info: zipfile.ZipInfo, budget: Budget) -> None:
        try:
            with self._zip.open(info) as member:
                while piece := member.read(STEP):
                    budget.write(piece)
        except (zipfile.BadZipFile, NotImplementedError, zlib.error, EOFError) as exc:
            raise SourceError(f"{self.label}: member {info.filename} is unreadable: {exc}") from None

    def _decompress(self, info: zipfile.ZipInfo, budget: Budget) -> None:
        self._raw.seek(info.header_offset)
        header = self._raw.read(_LOCAL_HEADER.size)
        if len(header) < _LOCAL_HEADER.size or header[:4] != _LOCAL_SIGNATURE:
            raise SourceError(f"{self.label}: member {info.filename} has no local header (damaged file)")
        name_length, extra_length = _LOCAL_HEADER.unpack(header)[-2:]
        self._raw.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
        decoder, remaining = Unzstd(budget), info.compress_size
        try:
            while remaining > 0 and (piece := self._raw.read(min(STEP, remaining))):
                decoder.write(piece)
                remaining -= len(piece)
        except DecodeError as exc:
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
