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
from import_support import PROMPTFOO

import evalsite.execute.importers.jsonstream as jsonstream
from evalsite.errors import SourceError
from evalsite.execute.importers import ImportOptions, import_files
from evalsite.execute.importers.jsonstream import JsonArrayStream
from evalsite.project import Project

#: element texts json.dumps cannot write, each as the standard decoder reads it
RAW_ELEMENTS = [
    '{\n"a": 1,\n"a": 2\n}',  # a duplicate key: the last one wins
    '{\n"n": 123456789012345678901234567890,\n"m": -9223372036854775809\n}',  # past 64 bits
    '{\n"x": NaN,\n"y": -Infinity,\n"z": 1e400\n}',
    '{\n"s": "\\ud800 alone",\n"t": "\\udc00\\ud83d\\ude00"\n}',  # lone surrogates, a pair
    '{\n"f": [0.1, 1e-320, 5e-324, -0.0, 1.7976931348623157e308, 2.5e-5]\n}',
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
elements = st.lists(
    st.one_of(
        st.dictionaries(st.text(max_size=5), values, max_size=5),
        st.lists(values, max_size=3),
        st.sampled_from(RAW_ELEMENTS),
        values,
    ),
    max_size=30,
)
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
    return (
        f'{{\n{unit}"meta": {{"v": 3}},\n{unit}"results": {{\n{unit * 2}"results": [{opened}{body}{closed}],\n'
        f'{unit * 2}"after": [1]\n{unit}}}\n}}'
    )


def read(path: Path) -> tuple[str, Any, Any, bool]:
    stream = JsonArrayStream(path, ("results", "results"))
    try:
        return "read", repr(list(stream)), repr(stream.rest), stream.truncated
    except SourceError as exc:
        return "error", str(exc), None, False


@pytest.mark.parametrize("chunk, run", [(7, 64), (97, 200), (1 << 20, 1 << 16), (1 << 20, 300)])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
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
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    elements=elements,
    indent=st.sampled_from([1, 2, "\t"]),
    where=st.floats(0, 1),
    change=st.sampled_from(["", '"', ",", "}", "]", "{", "x", "1", "\\", "\n", " ", "\x01"]),
)
def test_a_broken_or_cut_document_reads_as_one_element_at_a_time_does(
    monkeypatch, tmp_path, chunk, elements, indent, where, change
):
    """The same elements, error message (line number included) or cut, whether runs are on or off."""
    text = document(elements, indent)
    at = int(where * len(text))
    broken = text[:at] + change + text[at + 1 :] if change else text[:at]  # "": the file cut there
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
    path = PROMPTFOO / "results.json"
    elements = list(JsonArrayStream(path, ("results", "results")))
    assert elements == json.loads(path.read_text())["results"]["results"]
    assert len(elements) == 48 and len(calls) <= 48 // 4  # ~5 KB elements, 64 KiB runs


def _promptfoo_source(tmp_path: Path) -> Path:
    """The fixture's 48 results 30 times over (new test ids), with results the runs cannot take
    surely among them: NaN, an integer past 64 bits, a duplicate key; written as promptfoo does."""
    document = json.loads((PROMPTFOO / "results.json").read_text())
    rows = []
    for copy in range(30):
        for row in json.loads(json.dumps(document["results"]["results"])):
            row["vars"]["id"] = row["testCase"]["vars"]["id"] = f"{row['vars']['id']}-{copy}"
            row["testIdx"] += 24 * copy
            rows.append(row)
    rows[100]["response"]["output"] = {"text": "odd", "n": 12345678901234567890123, "x": float("nan")}
    rows[700]["latencyMs"] = float("inf")
    rows[900]["response"]["output"] = "DUPLICATE"
    document["results"]["results"] = rows
    text = json.dumps(document, indent=2).replace('"output": "DUPLICATE"', '"output": "first", "output": "last"')
    path = tmp_path / "results.json"
    path.write_text(text, encoding="utf-8")
    return path


def _imported(root: Path, source: Path) -> dict[str, tuple[dict[str, Any], bytes, dict[str, Any]]]:
    (root / "data").mkdir(parents=True)
    runs = {}
    for run in import_files(Project(root), "promptfoo", [source], ImportOptions(again=True)).runs:
        folder = root / "runs" / run.run_id
        header = json.loads((folder / "run.json").read_text())
        for key in ("run_id", "batch_id"):
            header.pop(key)
        header["source"].pop("imported_at")
        runs[run.arm_id] = header, (folder / "cases.jsonl").read_bytes(), json.loads((folder / "end.json").read_text())
    return runs


def test_a_promptfoo_import_read_in_runs_writes_the_run_one_element_at_a_time_writes(monkeypatch, tmp_path):
    source = _promptfoo_source(tmp_path)
    in_runs = _imported(tmp_path / "runs-on", source)
    monkeypatch.setattr(jsonstream, "RUN_CHARS", 0)
    one_at_a_time = _imported(tmp_path / "runs-off", source)
    assert in_runs.keys() == one_at_a_time.keys() == {"model-a", "model-b"}
    for arm, (header, cases, footer) in in_runs.items():
        assert cases == one_at_a_time[arm][1], arm
        assert header == one_at_a_time[arm][0] and footer == one_at_a_time[arm][2], arm
    lines = [json.loads(line) for run in in_runs.values() for line in run[1].splitlines()]
    assert len(lines) == 30 * 48
    odd = [line["output"] for line in lines if isinstance(line["output"], dict)]
    assert repr(odd) == repr([{"text": "odd", "n": 12345678901234567890123, "x": float("nan")}])  # an int, not a float
    assert "last" in [line["output"] for line in lines]  # the duplicate key's last value, as json reads it
