"""``json_problem`` (a dataset's rows, a JSON manifest) gives what the plain definition gives:
``json.loads`` with the strict hooks, then the walk of the whole value — its shortcuts (one
decoder, the shape judged from the text, duplicates found by ``dict``) change no answer."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evalsite.experiment.bounded import DuplicateKey, NotFinite, json_problem, shape_problem, too_deep, unique_object


def reference(text: str) -> tuple[Any, str | None]:
    """The plain definition, as json_problem was first written (its problem texts too)."""

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for key, value in pairs:
            if key in data:
                raise DuplicateKey(key)
            data[key] = value
        return data

    def finite(number: str) -> float:
        if float(number) in (float("inf"), float("-inf")):
            raise NotFinite(f"{number} is too large for a number")
        return float(number)

    def constant(name: str) -> Any:
        raise NotFinite(f"{name} is not a JSON value")

    try:
        value = json.loads(text, object_pairs_hook=pairs_hook, parse_float=finite, parse_constant=constant)
        problem = shape_problem(value)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON on line {exc.lineno}: {exc.msg}"
    except DuplicateKey as exc:
        problem = f"invalid JSON: {exc} (each key may appear once in an object)"
    except RecursionError:
        problem = too_deep()
    except ValueError as exc:
        problem = f"invalid JSON: {exc}"
    return (value, None) if problem is None else (None, problem)


EDGES = [
    '{"input": "q", "expected": "a"}',
    "\ufeff{}",
    '{"a": 1, "a": 2}',
    '{"a": 1, "b": {"c": 1, "c": 2}, "a": 3}',
    '{"a": NaN}',
    '{"a": 1e999}',
    '{"a": -Infinity}',
    '{"a": "\\ud800"}',
    '{"a": "\\uDFFF"}',
    '{"\\udc00": 1}',
    '{"a": "\\ud83d\\ude00"}',
    '{"a": "\\\\ud800"}',
    '{"a": "\\u00e9"}',
    '{"a": "\ud800"}',
    "[" * 100 + "]" * 100,
    "[" * 101 + "]" * 101,
    '{"x": ' + "[" * 99 + "]" * 99 + "}",
    '{"x": ' + "[" * 100 + "]" * 100 + "}",
    '{"x": "' + "[" * 300 + '"}',
    "[" * 5000 + "]" * 5000,
    "{" * 3 + "}",
    "",
    "nope",
    '{"a": 1}\n{"b": 2}',
    '"text"',
    "12345678901234567890123",
]


def test_edge_texts_read_as_the_plain_definition_reads_them():
    for text in EDGES:
        assert json_problem(text) == reference(text), text


def test_a_problem_names_its_line():
    assert json_problem('{"a": "\\ud800"}', 7) == (
        None,
        "line 7: holds a lone surrogate \\ud800 (not valid Unicode text)",
    )
    assert json_problem("[" * 101 + "]" * 101, 3) == (None, "line 3: nested deeper than 100 levels")


def test_unique_object_names_the_first_key_repeated():
    try:
        unique_object([("a", 1), ("b", 2), ("b", 3), ("a", 4)])
    except DuplicateKey as exc:
        assert exc.key == "b"
    assert unique_object([("a", 1), ("b", 2)]) == {"a": 1, "b": 2}


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.booleans())
def test_any_json_value_reads_as_the_plain_definition_reads_it(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert json_problem(text) == reference(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}[]":,0123456789.eE-+ \\ud80fDabcnrtux\ud800\u00e9', max_size=40))
def test_any_text_reads_as_the_plain_definition_reads_it(text):
    assert json_problem(text) == reference(text)
