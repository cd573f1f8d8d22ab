"""A run of promptfoo results decoded into only the fields the promptfoo reader uses.

About 60 % of a result's text is fields no reader uses (``testCase``, ``metadata``, ``namedScores``,
each assertion's ``metadata``, the token usage details). msgspec decodes a run of results into
dicts of just the fields :mod:`~evalsite.execute.importers.promptfoo` reads (the TypedDicts below),
stepping over the others in C without building objects for them while still checking they are
JSON; the reader then maps these dicts exactly as it maps whole ones.

The result is used only where it surely maps as the reader's whole decoding (:func:`orjson_value`,
or ``json`` for the text that function leaves to it) maps; anything else is decoded by that
function, as without this module:

- text msgspec refuses (NaN, 1e400 or an integer past Python's 4,300 digits in a kept field, a
  lone surrogate, bad JSON, ~1,000 levels of nesting: msgspec's limit is Python's, below
  orjson's), or a kept field of another shape (a ``response`` that is not an object, say: the
  reader's ``mapping`` reads it as empty, a TypedDict refuses it);
- more digits in a row than Python reads as an integer (:func:`_may_hold_too_long_integer`):
  ``json`` refuses such an integer anywhere, msgspec steps over it in a field it skips;
- an object whose emptiness the reader tests, when the kept keys alone could make it look empty:
  ``gradingResult`` (an ``error`` counts as the result's error only without one) must hold
  ``pass`` and a token usage ``total`` (``response.tokenUsage or tokenUsage``), as promptfoo
  always writes them.

msgspec reads every other integer exactly as ``json`` does, so unlike orjson it needs no check
for 19 digits in a row (that check, a pass over the whole run, costs about half of this decoding);
an integer past 64 bits that reaches a mapped value sends its run back to the main process
(orjson cannot write it into the message: :mod:`~evalsite.execute.importers.shared_reading`). A
duplicate key keeps its last value, as in ``json`` and orjson. ``--arm-from`` may name any field,
so with it the reader decodes whole results.
"""

from __future__ import annotations

import sys
from typing import Any, Required, TypedDict

import msgspec

from evalsite.runlog.jsonread import has_digit_run, orjson_value

# (the functional form: ``pass`` is a keyword)
_ComponentResult = TypedDict(
    "_ComponentResult", {"pass": Any, "score": Any, "reason": Any, "assertion": Any}, total=False
)
_Grading = TypedDict(  # pass required: the reader tests whether the object is empty
    "_Grading",
    {"pass": Required[Any], "score": Any, "reason": Any, "componentResults": list[_ComponentResult] | None},
    total=False,
)


class _Usage(TypedDict, total=False):
    total: Required[Any]  # the reader tests whether the object is empty
    prompt: Any
    completion: Any


class _Response(TypedDict, total=False):
    output: Any
    error: Any
    latencyMs: Any
    finishReason: Any
    tokenUsage: _Usage | None


class _TestCase(TypedDict, total=False):
    vars: Any


class _Result(TypedDict, total=False):
    provider: Any
    prompt: Any
    promptId: Any
    promptIdx: Any
    vars: Any
    testCase: _TestCase | None
    testIdx: Any
    failureReason: Any
    error: Any
    gradingResult: _Grading | None
    response: _Response | None
    latencyMs: Any
    cost: Any
    score: Any
    success: Any
    tokenUsage: _Usage | None


_DECODER = msgspec.json.Decoder(list[_Result])


def used_fields(data: bytes) -> Any:
    """The results in ``data`` (a JSON array of them, UTF-8) with only the fields the reader uses,
    or what :func:`orjson_value` gives where that is not sure to map the same (module docstring)."""
    if _may_hold_too_long_integer(data):
        return orjson_value(data)
    try:
        return _DECODER.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return orjson_value(data)


def _may_hold_too_long_integer(data: bytes) -> bool:
    """Whether ``data`` holds more digits in a row than Python reads as an integer (inside a string
    too). Such a run covers two neighbouring bytes of every ``stride``-th one, so only a text
    where those samples show two digits in a row is searched whole (~0.3 µs for 64 KiB)."""
    limit = sys.get_int_max_str_digits()
    if not limit:
        return False
    stride = (limit + 1) // 2
    return has_digit_run(data[::stride], 2) and has_digit_run(data, limit + 1)
