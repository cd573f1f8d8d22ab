"""An indented array's elements decoded a run at a time (``JsonArrayStream._run_of_elements``):
the values ``json.loads`` reads, and, for a broken or cut document, the outcome of reading one
element at a time (the stream's only path before runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalsite.execute.importers.jsonstream as jsonstream
from evalsite.errors import SourceError
from evalsite.execute.importers.jsonstream import JsonArrayStream

#: element texts json.dumps cannot write, each as the standard decoder reads it
RAW_ELEMENTS = [
    '{\n"a": 1,\n"a": 2\n}',  # a duplicate key: the last one wins
    '{\n"n": 123456789012345678901234567890,\n"m": -9223372036854775809\n}',  # past 64 bits
    '{\n"x": NaN,\n"y": -Infinity,\n"z": 1e400\n}',
    '{\n"s": "\\ud800 alone",\n"t": "\\udc00\\ud83d\\ude00"\n}',  # lone surrogates, a pair
    '{\n"f": [0.1, 1e-320, 5e-324, -0.0, 1.7976931348623157e308, 2.5e-5]\n}',
]

scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                      max_leaves=12)
elements = st.lists(st.one_of(st.dictionaries(st.text(max_size=5), values, max_size=5),
                              st.lists(values, max_size=3), st.sampled_from(RAW_ELEMENTS), values), max_size=30)
indents = st.sampled_from([None, 1, 2, "\t"])


def _element_text(element: Any, indent: int | str | None) -> str:
    return element if isinstance(element, str) and element.startswith("{\n") else json.dumps(element, indent=indent)


def document(elements: list[Any], indent: int | str | None) -> str:
    """A promptfoo-like document: the array two objects deep, every element on lines of its own
    (unless ``indent`` is None: one line), other keys before and after it."""
    if indent is None:
        inner = ", ".join(_element_text(e, None).replace("\n", " ") for e in elements)
        return '{"meta": {"v": 3}, "results": {"results": [' + inner + '], "after": [1]}, "config": {"tests": []}}'
    unit = " " * indent if isinstance(indent, int) else indent
    lines = [_element_text(e, indent).replace("\n", "\n" + unit * 3) for e in elements]
    body = (",\n" + unit * 3).join(lines)
    opened = "\n" + unit * 3 if elements else ""
    closed = "\n" + unit * 2 if elements else ""
    return (f'{{\n{unit}"meta": {{"v": 3}},\n{unit}"results": {{\n{unit * 2}"results": [{opened}{body}{closed}],\n'
            f'{unit * 2}"after": [1]\n{unit}}}\n}}')


def read(path: Path) -> tuple[str, Any, Any, bool]:
    stream = JsonArrayStream(path, ("results", "results"))
    try:
        return "read", repr(list(stream)), repr(stream.rest), stream.truncated
    except SourceError as exc:
        return "error", str(exc), None, False


@pytest.mark.parametrize("chunk, run", [(7, 64), (97, 200), (1 << 20, 1 << 16), (1 << 20, 300)])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(elements=elements, indent=indents)
def test_runs_of_elements_read_what_json_loads_reads(monkeypatch, tmp_path, chunk, run, elements, indent):
    monkeypatch.setattr(jsonstream, "CHUNK_CHARS", chunk)
    monkeypatch.setattr(jsonstream, "RUN_CHARS", run)
    text = document(elements, indent)
    path = tmp_path / "doc.json"
    path.write_text(text, encoding="utf-8")
    whole = json.loads(text)
    stream = JsonArrayStream(path, ("results", "results"))
    assert repr(list(stream)) == repr(whole["results"].pop("results"))  # repr: NaN != NaN, 1 == 1.0
    assert repr(stream.rest) == repr(whole) and stream.found and not stream.truncated


@pytest.mark.parametrize("chunk", [11, 1 << 20])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(elements=elements, indent=st.sampled_from([1, 2, "\t"]), where=st.floats(0, 1),
       change=st.sampled_from(["", '"', ",", "}", "]", "{", "x", "1", "\\", "\n", " ", "\x01"]))
def test_a_broken_or_cut_document_reads_as_one_element_at_a_time_does(monkeypatch, tmp_path, chunk, elements,
                                                                       indent, where, change):
    """The same elements, error message (line number included) or cut, whether runs are on or off."""
    text = document(elements, indent)
    at = int(where * len(text))
    broken = text[:at] + change + text[at + 1:] if change else text[:at]  # "": the file cut there
    path = tmp_path / "doc.json"
    path.write_text(broken, encoding="utf-8")
    monkeypatch.setattr(jsonstream, "CHUNK_CHARS", chunk)
    with_runs = read(path)
    monkeypatch.setattr(jsonstream, "RUN_CHARS", 0)  # no text fits: every element on its own
    assert with_runs == read(path)


def test_a_promptfoo_file_is_read_a_run_at_a_time(monkeypatch):
    """The fixture's 48 results in a few decoder calls, not one each."""
    calls: list[bytes] = []
    real = jsonstream.orjson_value
    monkeypatch.setattr(jsonstream, "orjson_value", lambda data: calls.append(data) or real(data))
    path = Path(__file__).parent / "fixtures" / "external" / "promptfoo" / "results.json"
    elements = list(JsonArrayStream(path, ("results", "results")))
    assert elements == json.loads(path.read_text())["results"]["results"]
    assert len(elements) == 48 and len(calls) <= 48 // 4  # ~5 KB elements, 64 KiB runs
