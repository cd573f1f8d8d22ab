"""sha256_json writes plain values with orjson: its hashes must stay the standard encoder's."""

import hashlib
import json

import pytest

from evalsite.runlog.hashing import canonical_json, sha256_json

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
