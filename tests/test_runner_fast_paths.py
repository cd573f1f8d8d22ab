"""The per-case fast paths of the runner (round 5 of issue 30) answer exactly as the checks they
shortcut: each is compared with the plain formula it replaced, written out here, over values of
every type a target, a provider or a plugin may hand back (bools, int subclasses, NaN, infinities,
huge integers), and the raw-name header lookup with httpx's own ``Headers.get``."""

from __future__ import annotations

import enum
import math
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsite.calls.targets.base import TargetResult, result_problem, token_count
from evalsite.calls.targets.http import header
from evalsite.runlog.fields import shown
from evalsite.runlog.records import CASE_RANGES, MAX_TOKENS, SCORE_RANGES, out_of_range


class Level(enum.IntEnum):
    LOW = 3
    HUGE = 10**10


class Ratio(float):
    pass


numbers = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([Level.LOW, Level.HUGE, Ratio(2.5), Ratio(-1.0)]),
    st.text(max_size=3), st.just([1]), st.just(12.0), st.just(-0.0),
)


def reference_out_of_range(record: dict[str, Any], ranges: dict[str, tuple[float, float]]) -> list[str]:
    found = []
    for key, (low, high) in ranges.items():
        value = record.get(key)
        if value is not None and isinstance(value, (int, float)) and not isinstance(value, bool) \
                and not low <= value <= high:
            found.append(key)
    return found


def reference_token_count(value: Any) -> int | None:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


COUNT_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def reference_count_problem(result: TargetResult) -> str | None:
    """``result_problem``'s token-count checks as they were written before the fast path."""
    for key in COUNT_KEYS:
        count = getattr(result, key)
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_TOKENS):
            return f"target returned {key}={shown(count)}; expected a whole number from 0 to {MAX_TOKENS} or null"
    return None


@settings(max_examples=400, deadline=None)
@given(st.fixed_dictionaries({}, optional={key: numbers for key in {*CASE_RANGES, *SCORE_RANGES}}))
def test_out_of_range_names_the_same_keys_as_the_plain_check(record):
    for ranges in (CASE_RANGES, SCORE_RANGES):
        assert out_of_range(record, ranges) == reference_out_of_range(record, ranges)


@settings(max_examples=400, deadline=None)
@given(numbers)
def test_token_count_reads_every_value_as_before(value):
    expected = reference_token_count(value)
    got = token_count(value)
    assert got == expected and type(got) is type(expected)


@settings(max_examples=400, deadline=None)
@given(numbers, numbers, numbers, numbers)
def test_result_problem_refuses_the_same_counts_with_the_same_words(inputs, outputs, read, written):
    result = TargetResult(output="x", input_tokens=inputs, output_tokens=outputs, cache_read_tokens=read,
                          cache_write_tokens=written)
    refused = reference_count_problem(result)
    if refused is not None:  # the count checks come first
        assert result_problem(result) == refused
    else:  # then only the checks after them can answer
        problem = result_problem(result)
        assert problem is None or not problem.startswith(tuple(f"target returned {key}=" for key in COUNT_KEYS))


names = st.sampled_from(["content-encoding", "Content-Encoding", "CONTENT-ENCODING", "x-litellm-response-cost",
                         "X-LiteLLM-Response-Cost", "content-type", "date", "x-other"])
values = st.one_of(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
                   st.binary(max_size=12).filter(lambda raw: b"\r" not in raw and b"\n" not in raw))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(names, values), max_size=6))
def test_header_is_what_httpx_headers_get_gives(pairs):
    headers = httpx.Headers([(name.encode("ascii"), value if isinstance(value, bytes) else value.encode("ascii"))
                             for name, value in pairs])
    for name in ("content-encoding", "x-litellm-response-cost", "x-absent"):
        assert header(httpx.Headers(headers), name) == headers.get(name)
