"""A run of promptfoo results decoded into only the fields the promptfoo reader uses.

About 60 % of a result's text is fields no reader uses (``testCase``, ``metadata``, ``namedScores``,
each assertion's ``metadata``, the token usage details). msgspec decodes a run of results into
dicts of just the fields :mod:`~evalsite.execute.importers.promptfoo` reads (the TypedDicts below),
stepping over the others in C without building objects for them while still checking they are
JSON; the reader then maps these dicts exactly as it maps whole ones.

The result is used only where it surely maps as orjson's whole decoding (:func:`orjson_value`)
maps; anything else is decoded by that function, as without this module:

- a run of 19 digits (the same check as :func:`orjson_value`'s: mapped values must stay within
  64 bits for the pipe between the two reading processes, and ``json`` refuses integers past 4,300
  digits), text msgspec refuses (NaN, 1e400 in a kept field, a lone surrogate, bad JSON,
  ~1,000 levels of nesting: msgspec's limit is Python's, below orjson's), or a kept field of
  another shape (a ``response`` that is not an object, say: the reader's ``mapping`` reads it as
  empty, a TypedDict refuses it);
- an object whose emptiness the reader tests, when the kept keys alone could make it look empty:
  ``gradingResult`` (an ``error`` counts as the result's error only without one) must hold
  ``pass`` and a token usage ``total`` (``response.tokenUsage or tokenUsage``), as promptfoo
  always writes them.

A duplicate key keeps its last value, as in ``json`` and orjson; ``--arm-from`` may name any
field, so with it the reader decodes whole results.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict

import msgspec

from evalsite.runlog.jsonread import ORJSON_RISKY_DIGITS, UNSURE, has_digit_run, orjson_value

_Assertion = TypedDict("_Assertion", {"pass": Any, "score": Any, "reason": Any, "assertion": Any}, total=False)
_Grading = TypedDict(
    "_Grading", {"pass": Required[Any], "score": Any, "reason": Any, "componentResults": list[_Assertion] | None},
    total=False,
)


class _Usage(TypedDict, total=False):
    total: Required[Any]
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
    if has_digit_run(data, ORJSON_RISKY_DIGITS):
        return UNSURE
    try:
        return _DECODER.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return orjson_value(data, digits_checked=True)
