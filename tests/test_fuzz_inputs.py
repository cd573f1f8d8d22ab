"""Fuzzing datasets and manifests (bounded hypothesis runs): whatever a file holds, reading it
either gives every row back unchanged or raises the one error class of its kind, whose every line
names the file; never a traceback (issue 15: the fuzz suite)."""

from __future__ import annotations

import csv
import io
import json
import string
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsite.errors import DatasetError, ManifestError
from evalsite.experiment.datasets import load_dataset, load_rows
from evalsite.experiment.manifest import load_manifest

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TEXT = st.text(st.characters(blacklist_characters="\x00\ufeff", blacklist_categories=("Cs",)), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
ROWS = st.lists(st.dictionaries(TEXT, JSON_VALUES, max_size=5), max_size=6)
JSON_FRAGMENTS = st.lists(st.sampled_from([
    "{", "}", "[", "]", '"', ":", ",", " ", "\n", "\r\n", '"a"', '"a":', "1", "-0.5e3", "1e999", "NaN", "Infinity",
    "null", "true", '"\\ud800"', '"\\ud83d\\ude00"', '"\\u0000"', "9" * 5000, "[" * 200, "]" * 200, '{"id": 1, "id": 2}',
]), max_size=40).map("".join)
CSV_FRAGMENTS = st.lists(st.sampled_from(['"', ",", "\n", "\r\n", "\r", "a", '""', "id", "input", " "]), max_size=40).map("".join)
YAML_FRAGMENTS = st.lists(st.sampled_from([
    "name: m\n", "arms:\n", "  - {id: a, target: none}\n", "rows:\n", "  - {input: q}\n", "- ", ": ", "[", "]", "{", "}",
    "&a ", "*a ", "!!python/object:os.system ", ".nan", "-.inf", '"\\ud800"', "\n", "  ", "repeat: 99999999\n",
    "prompt: '{% include x %}'\n", "concurrency: 0\n", "limits: {max_cost_usd: .nan}\n", "x: " + "[" * 150 + "]" * 150 + "\n",
]), max_size=30).map("".join)


#: Every example's folder, removed when the test process ends (hypothesis runs examples without pytest's tmp_path).
FOLDERS = tempfile.TemporaryDirectory(prefix="fuzz-")


def one_file(name: str, content: str | bytes) -> Path:
    folder = Path(tempfile.mkdtemp(dir=FOLDERS.name))
    path = folder / name
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content, **({} if isinstance(content, bytes) else {"encoding": "utf-8"}))
    return path


def assert_names_file(error: Exception, path: Path) -> None:
    message = error.message  # an EvalsiteError: click prints it as `Error: …`, one line per problem
    assert message and all(line.startswith(f"{path}: ") for line in message.splitlines()), message


def read_or_refuse(path: Path):
    try:
        return load_rows(path)
    except DatasetError as exc:
        assert_names_file(exc, path)
        return None


@FUZZ
@given(rows=ROWS, ascii_only=st.booleans())
def test_jsonl_rows_come_back_unchanged(rows, ascii_only):
    path = one_file("d.jsonl", "".join(json.dumps(row, ensure_ascii=ascii_only) + "\n" for row in rows))
    assert load_rows(path) == rows
    array = one_file("d.json", json.dumps(rows, ensure_ascii=ascii_only, indent=1))
    assert load_rows(array) == rows


@FUZZ
@given(header=st.lists(TEXT.filter(bool), min_size=1, max_size=4, unique=True), data=st.data())
def test_csv_records_come_back_unchanged(header, data):
    records = data.draw(st.lists(st.lists(TEXT, min_size=len(header), max_size=len(header)), max_size=6))
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(records)
    rows = read_or_refuse(one_file("d.csv", buffer.getvalue()))
    assert rows == [dict(zip(header, record)) for record in records]


@FUZZ
@given(text=JSON_FRAGMENTS, suffix=st.sampled_from([".jsonl", ".json"]))
def test_any_json_text_reads_or_is_refused_naming_the_file(text, suffix):
    path = one_file("d" + suffix, text)
    rows = read_or_refuse(path)
    if rows is not None:
        assert all(isinstance(row, dict) for row in rows)
        try:
            load_dataset(path)
        except DatasetError as exc:
            assert_names_file(exc, path)


@FUZZ
@given(text=CSV_FRAGMENTS)
def test_any_csv_text_reads_or_is_refused_naming_the_file(text):
    path = one_file("d.csv", text)
    rows = read_or_refuse(path)
    if rows is not None:
        records = [r for r in csv.reader(io.StringIO(text, newline=""), strict=True)][1:]
        assert len(rows) == len([r for r in records if r])  # every record is a row: none merged or lost


@FUZZ
@given(content=st.binary(max_size=200), suffix=st.sampled_from([".jsonl", ".json", ".csv", ".txt"]))
def test_any_bytes_read_or_are_refused_naming_the_file(content, suffix):
    read_or_refuse(one_file("d" + suffix, content))


def load_or_refuse(path: Path):
    try:
        return load_manifest(path)
    except ManifestError as exc:
        assert_names_file(exc, path)
        return None


@FUZZ
@given(text=YAML_FRAGMENTS)
def test_any_yaml_manifest_loads_or_is_refused_naming_the_file(text):
    load_or_refuse(one_file("m.yaml", text))


@FUZZ
@given(text=JSON_FRAGMENTS)
def test_any_json_manifest_loads_or_is_refused_naming_the_file(text):
    load_or_refuse(one_file("m.json", text))


KEYS = st.sampled_from(["name", "rows", "arms", "prompt", "repeat", "concurrency", "limits", "schedule", "sweep",
                        "design", "evaluators", "dataset", "description", "id", "target", "params", "settings",
                        "max_cost_usd", "api_key", "input", "type", "mode", "variables"] + list(string.ascii_lowercase[:3]))
MANIFEST_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**9) | st.floats() | st.sampled_from(["none", "exact", "{{ x }}", "{% for %}", "q"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=15,
)


@FUZZ
@given(data=st.dictionaries(KEYS, MANIFEST_VALUES, max_size=8))
def test_any_manifest_structure_loads_or_is_refused_naming_the_file(data):
    base = {"name": "m", "rows": [{"input": "q"}], "arms": [{"id": "a", "target": "none"}]}
    load_or_refuse(one_file("m.yaml", yaml.safe_dump({**base, **data}, allow_unicode=True)))
