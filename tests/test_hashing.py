"""sha256_json writes plain values with orjson: its hashes must stay the standard encoder's."""

import hashlib
import json
import os

import pytest

from evalsite.runlog import hashing
from evalsite.runlog.hashing import canonical_json, file_sha256_once, sha256_json

EVERY_CODE_POINT = [chr(cp) for cp in (*range(0xD800), *range(0xE000, 0x110000))]


def standard(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                     default=str).encode("utf-8")).hexdigest()


def test_every_code_point_in_text_and_keys_hashes_as_the_standard_encoder_writes_it():
    for start in range(0, len(EVERY_CODE_POINT), 4096):
        chunk = EVERY_CODE_POINT[start:start + 4096]
        value = {"".join(chunk[:64]): "".join(chunk), **{c: [c, None] for c in chunk}}
        assert sha256_json(value) == standard(value)


@pytest.mark.parametrize("value", [
    {"id": "item-00", "input": "a", "expected": None}, [1, -1, 0, True, False, None, ""],
    2**63 - 1, -2**63, 2**64 - 1, 2**64, -2**63 - 1, 10**30, {"x": 1.5}, {"x": 1e16}, [float("nan")],
    {"b": {"a": [[], {}]}}, {"é": 1, "e": 2, "z": 3, "\U0001f600": 4}, (1, "a"), {1: "a"},
])
def test_numbers_nesting_and_other_types_hash_as_before(value):
    assert sha256_json(value) == standard(value)


def test_deep_values_hash_as_before():
    deep: list = []
    inner = deep
    for _ in range(400):
        inner.append([])
        inner = inner[0]
    assert sha256_json(deep) == standard(deep)
    assert canonical_json(deep).startswith("[[")



def test_a_file_is_read_once_per_state(tmp_path, monkeypatch):
    reads: list[str] = []
    read = hashing.file_sha256
    monkeypatch.setattr(hashing, "file_sha256", lambda path: reads.append(os.fspath(path)) or read(path))
    file = tmp_path / "cases.jsonl"
    file.write_text("one\n")
    first = file_sha256_once(file)
    assert first == hashlib.sha256(b"one\n").hexdigest() and file_sha256_once(file) == first
    assert reads == [str(file)]
    state = file.stat()
    file.write_text("two\n")  # the same size, its modification time put back: its change time still moves
    os.utime(file, ns=(state.st_atime_ns, state.st_mtime_ns))
    assert file_sha256_once(file) == hashlib.sha256(b"two\n").hexdigest()
    assert len(reads) == 2
