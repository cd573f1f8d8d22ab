"""Datasets: every format, row shapes, identity, locks, and the `evalsite dataset` commands."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsite.errors import DatasetError
from evalsite.experiment.datasets import (
    describe_dataset,
    load_dataset,
    load_rows,
    row_problems,
    select_items,
)
from evalsite.experiment.locks import freeze_dataset, lock_path, verify_dataset
from evalsite.runlog.hashing import sha256_json

REPO = Path(__file__).resolve().parent.parent


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def error_of(call, *args, **kwargs) -> str:
    with pytest.raises(DatasetError) as caught:
        call(*args, **kwargs)
    return caught.value.message


# ---- formats -------------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".jsonl", ".ndjson"])
def test_json_lines_skip_blank_lines(tmp_path, suffix):
    path = write(tmp_path / f"d{suffix}", '{"input": "a"}\n\n  \n{"input": "b"}\n')
    assert load_rows(path) == [{"input": "a"}, {"input": "b"}]


def test_json_lines_name_the_bad_line(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"input": "a"}\n\n{"input": \n')
    assert error_of(load_rows, path) == f"{path}: invalid JSON on line 3: Expecting value"


def test_json_lines_refuse_a_line_that_is_not_an_object(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"input": "a"}\n[1, 2]\n')
    assert error_of(load_rows, path) == f"{path}: line 2 is an array, expected an object"


def test_json_lines_keep_a_line_separator_inside_a_string(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"input": "a\u2028b"}\n')
    assert load_rows(path) == [{"input": "a\u2028b"}]


def test_json_array(tmp_path):
    path = write(tmp_path / "d.json", '[{"input": "a"}, {"input": "b", "expected": [1, 2]}]')
    assert load_rows(path) == [{"input": "a"}, {"input": "b", "expected": [1, 2]}]


def test_json_that_is_not_an_array_of_objects_is_refused(tmp_path):
    path = write(tmp_path / "d.json", '{"rows": []}')
    assert error_of(load_rows, path) == f"{path}: a .json dataset must be an array of objects, got an object"
    write(path, '[{"input": "a"}, "b"]')
    assert error_of(load_rows, path) == f"{path}: element 1 is a string, expected an object"
    write(path, '[\n{"input": "a"},\n{oops}\n]')
    assert error_of(load_rows, path).startswith(f"{path}: invalid JSON on line 3: ")


def test_csv_quotes_commas_escapes_newlines_padding_and_empty_records(tmp_path):
    text = (
        'id,input,expected\r\n'
        '1,"a, with comma","say ""hi"""\r\n'
        '2,"two\r\nlines",x\r\n'
        '3,short\r\n'
        ',,\r\n'
        '\r\n'
        '4,last,y'
    )
    rows = load_rows(write(tmp_path / "d.csv", text))
    assert rows == [
        {"id": "1", "input": "a, with comma", "expected": 'say "hi"'},
        {"id": "2", "input": "two\r\nlines", "expected": "x"},
        {"id": "3", "input": "short", "expected": ""},
        {"id": "", "input": "", "expected": ""},
        {"id": "4", "input": "last", "expected": "y"},
    ]


def test_csv_refuses_a_record_longer_than_the_header_naming_its_line(tmp_path):
    path = write(tmp_path / "d.csv", 'a,b\n"x\ny",1\n1,2,3\n')
    assert error_of(load_rows, path) == f"{path}: line 4 has 3 fields but the header has 2"


def test_csv_refuses_a_repeated_or_empty_header(tmp_path):
    path = write(tmp_path / "d.csv", "a,b,a\n1,2,3\n")
    assert error_of(load_rows, path) == f"{path}: line 1: the header names column 'a' more than once"
    write(path, "a,,c\n")
    assert error_of(load_rows, path) == f"{path}: line 1: column 2 of the header has no name"


def test_csv_with_only_a_header_has_no_rows(tmp_path):
    assert load_rows(write(tmp_path / "d.csv", "input,expected\n")) == []


def test_parquet(tmp_path):
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"input": ["a", "b"], "expected": ["1", "2"]}), path)
    assert load_rows(path) == [{"input": "a", "expected": "1"}, {"input": "b", "expected": "2"}]


def test_an_unreadable_parquet_file_is_named(tmp_path):
    path = write(tmp_path / "d.parquet", "not parquet")
    assert error_of(load_rows, path).startswith(f"{path}: unreadable Parquet file: ")


def test_any_other_text_is_one_row_per_non_blank_line(tmp_path):
    path = write(tmp_path / "prompts.txt", "first\r\n\nsecond\n")
    assert load_rows(path) == [{"text": "first"}, {"text": "second"}]


def test_missing_and_non_utf8_files(tmp_path):
    assert error_of(load_rows, tmp_path / "nope.jsonl") == f"{tmp_path / 'nope.jsonl'}: dataset file not found"
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"input": "\xff"}\n')
    assert error_of(load_rows, path) == f"{path}: not UTF-8 text (invalid start byte at byte 11)"


CHARACTERS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufeff")
CSV_FIELD = st.text(st.one_of(st.sampled_from([",", '"', "\n", "\r", " "]), CHARACTERS), max_size=12)


@settings(max_examples=150, deadline=None)
@given(header=st.lists(CSV_FIELD.filter(bool), min_size=1, max_size=4, unique=True), data=st.data())
def test_csv_rows_survive_a_write_read_round_trip(tmp_path_factory, header, data):
    """Quotes, commas, newlines (\n, \r, \r\n) and records whose fields are all empty come back."""
    records = data.draw(st.lists(st.lists(CSV_FIELD, min_size=len(header), max_size=len(header)), max_size=6))
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(records)
    path = tmp_path_factory.mktemp("csv") / "d.csv"
    path.write_bytes(buffer.getvalue().encode("utf-8"))
    assert load_rows(path) == [dict(zip(header, record)) for record in records]


# ---- row shapes ----------------------------------------------------------------------------

@pytest.mark.parametrize("row", [
    {"input": "What is 2 + 2?", "expected": "4"},
    {"input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]},
    {"turns": ["Hi", {"role": "user", "content": "And then?"}], "expected": ["hello", "then this"]},
    {"turns": ["Hi"], "expected": {"any": ["json"]}},
    {"question": "no input field: a prompt template uses the fields", "answer": "ok"},
    {"input": "x", "output": "a recorded answer", "metadata": {"critical": True, "split": "test", "group": "g1"}},
])
def test_eval_row_shapes_that_are_fine(row):
    assert row_problems(row) == []


TURN_RULE = "needs a string or a {role, content} message with role system, user or assistant and text content"


@pytest.mark.parametrize("row, problem", [
    ({"input": 3}, "'input' must be a string or a list of messages, got a number"),
    ({"input": [{"content": "no role"}]}, "'input[0]' must be a message {role, content}, got {'content': 'no role'}"),
    ({"input": [{"role": "robot", "content": "x"}]},
     "'input[0].role' must be one of system, user, assistant, tool, developer, got 'robot'"),
    ({"input": "a", "turns": ["b"]}, "has both 'input' and 'turns'; a row is a single input or a replayed conversation"),
    ({"turns": []}, "'turns' is an empty list"),
    ({"turns": [{"role": "assistant", "content": "hi"}]}, "'turns' has no user turn to answer"),
    ({"turns": ["a", "b"], "expected": ["only one"]}, "'expected' has 1 entries but 'turns' has 2 user turns (one each)"),
    # what the runner refuses to replay, validate refuses too (it passed validate, then stopped the run)
    ({"turns": ["hi", {"role": "assistant", "content": None}]}, f"turns[1]: {TURN_RULE}"),
    ({"turns": [{"role": "user", "content": 5}]}, f"turns[0]: {TURN_RULE}"),
    ({"turns": [{"role": "tool", "content": "x"}, "hi"]}, f"turns[0]: {TURN_RULE}"),
    ({"input": "a", "metadata": "critical"}, "'metadata' must be an object, got a string"),
    ({"input": "a", "metadata": {"critical": "yes"}}, "'metadata.critical' must be true or false, got 'yes'"),
    ({"input": "a", "metadata": {"split": 1}}, "'metadata.split' must be a string, got 1"),
    ({"input": "a", "id": ""}, "'id' must be a non-empty string or a whole number, got ''"),
])
def test_eval_row_shape_problems(row, problem):
    assert row_problems(row) == [problem]


def test_preference_rows_are_refused_with_the_reason(tmp_path):
    path = write(tmp_path / "prefs.jsonl", '{"prompt": "p", "chosen": "a", "rejected": "b"}\n')
    assert error_of(load_dataset, path) == (
        f"{path}: line 1: a preference row (chosen/rejected) ranks two answers and has no expected output "
        "to score; rewrite it as input + expected"
    )


def test_a_dataset_error_counts_the_other_problems(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"input": 1}\n{"input": 2}\n{"input": 3}\n')
    assert error_of(load_dataset, path) == (
        f"{path}: line 1: 'input' must be a string or a list of messages, got a number"
        " (and 2 more; `evalsite validate` lists them all)"
    )


# ---- identity ------------------------------------------------------------------------------

def test_item_ids_come_from_the_id_field_else_the_index(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"id": "a", "input": "x"}\n{"input": "y"}\n{"id": 7, "input": "z"}\n')
    assert [item.item_id for item in load_dataset(path).items] == ["a", "1", "7"]


def test_duplicate_ids_name_both_lines(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"id": "a", "input": "x"}\n\n{"id": "b", "input": "y"}\n{"id": "a", "input": "z"}\n')
    assert error_of(load_dataset, path) == f"{path}: duplicate item id 'a' on line 1 and line 4"


def test_an_id_equal_to_another_rows_index_is_a_duplicate(tmp_path):
    path = write(tmp_path / "d.jsonl", '{"input": "x"}\n{"id": "0", "input": "y"}\n')
    assert error_of(load_dataset, path) == f"{path}: duplicate item id '0' on line 1 and line 2"


def test_item_hashes_use_canonical_json_so_key_order_does_not_matter(tmp_path):
    one = load_dataset(write(tmp_path / "a.jsonl", '{"input": "x", "expected": "1"}\n'))
    two = load_dataset(write(tmp_path / "b.jsonl", '{"expected":"1",   "input":"x"}\n'), name="a")
    assert one.items[0].sha == two.items[0].sha == sha256_json({"input": "x", "expected": "1"})
    assert one.dataset_id == two.dataset_id


def test_input_and_expected_sides_have_separate_hashes(tmp_path):
    base = load_dataset(write(tmp_path / "a.jsonl", '{"input": "x", "expected": "1"}\n')).items[0]
    new_truth = load_dataset(write(tmp_path / "a.jsonl", '{"input": "x", "expected": "2"}\n')).items[0]
    new_question = load_dataset(write(tmp_path / "a.jsonl", '{"input": "y", "expected": "1"}\n')).items[0]
    assert new_truth.input_sha == base.input_sha and new_truth.expected_sha != base.expected_sha
    assert new_question.input_sha != base.input_sha and new_question.expected_sha == base.expected_sha


def test_dataset_id_is_name_at_twelve_hex_and_changes_with_one_byte(tmp_path):
    path = write(tmp_path / "qa.jsonl", '{"input": "x"}\n')
    first = load_dataset(path).dataset_id
    write(path, '{"input": "y"}\n')
    name, _, digest = first.partition("@")
    assert name == "qa" and len(digest) == 12 and int(digest, 16) >= 0
    assert load_dataset(path).dataset_id != first


def test_the_example_dataset_keeps_its_id():
    dataset = load_dataset(REPO / "data/arithmetic.jsonl")
    assert dataset.dataset_id == "arithmetic@854dec43a471"
    assert len(dataset.items) == 60


def test_expected_field_names_the_ground_truth_column(tmp_path):
    path = write(tmp_path / "d.csv", "question,answer\n2+2,4\n")
    (item,) = load_dataset(path, expected_field="answer").items
    assert item.row == {"question": "2+2", "answer": "4", "expected": "4"}
    assert item.sha == sha256_json({"question": "2+2", "answer": "4"})
    assert item.expected_sha == sha256_json({"expected": "4"})
    assert error_of(load_dataset, path, expected_field="truth") == (
        f"{path}: dataset.expected_field 'truth' is in no row (fields: answer, question)"
    )


def test_select_items_by_split_then_limit(tmp_path):
    lines = [json.dumps({"input": str(i), "metadata": {"split": "test" if i % 2 else "train"}}) for i in range(6)]
    items = load_dataset(write(tmp_path / "d.jsonl", "\n".join(lines))).items
    assert [i.item_id for i in select_items(items, split="test")] == ["1", "3", "5"]
    assert [i.item_id for i in select_items(items, split=["test", "train"], limit=2)] == ["0", "1"]
    assert [i.item_id for i in select_items(items, split="test", limit=2)] == ["1", "3"]


def test_describe_counts_fields_shapes_and_splits(tmp_path):
    path = write(tmp_path / "d.jsonl", "\n".join([
        '{"input": "a", "expected": "1", "metadata": {"split": "dev", "critical": true}}',
        '{"turns": ["b"], "metadata": {"split": "dev"}}',
        '{"question": "c"}',
    ]))
    summary = describe_dataset(load_dataset(path))
    assert summary.items == 3
    assert summary.fields == {"expected": 1, "input": 1, "metadata": 2, "question": 1, "turns": 1}
    assert summary.shapes == {"fields": 1, "input": 1, "turns": 1}
    assert (summary.with_expected, summary.critical, summary.splits) == (1, 1, {"dev": 2})


# ---- locks ---------------------------------------------------------------------------------

ROWS = ['{"id": "a", "input": "1+1", "expected": "2"}', '{"id": "b", "input": "2+2", "expected": "4"}']


@pytest.fixture
def frozen(tmp_path) -> Path:
    """A two-row dataset file (qa.jsonl) with the lock ``freeze_dataset`` wrote beside it."""
    path = write(tmp_path / "qa.jsonl", "\n".join(ROWS) + "\n")
    freeze_dataset(path)
    return path


def test_freeze_writes_the_lock_beside_the_dataset(frozen):
    lock = json.loads(lock_path(frozen).read_text())
    assert lock_path(frozen).name == "qa.jsonl.lock.json"
    assert lock["lock_version"] == 1 and lock["dataset"] == "qa.jsonl"
    assert lock["dataset_id"] == load_dataset(frozen).dataset_id and lock["count"] == 2
    assert [entry["item_id"] for entry in lock["items"]] == ["a", "b"]
    assert verify_dataset(frozen).ok


def test_verify_names_the_item_and_the_side_that_changed(frozen):
    write(frozen, ROWS[0] + "\n" + ROWS[1].replace('"4"', '"5"') + "\n")
    assert verify_dataset(frozen).differences == ["item 'b' changed: expected only (the ground truth was edited)"]
    write(frozen, ROWS[0].replace("1+1", "1+2") + "\n" + ROWS[1] + "\n")
    assert verify_dataset(frozen).differences == ["item 'a' changed: input side only"]


def test_verify_names_added_removed_and_reordered_items(frozen):
    write(frozen, ROWS[1] + "\n" + '{"id": "c", "input": "3+3"}\n')
    assert verify_dataset(frozen).differences == ["item 'a' removed", "item 'c' added"]
    write(frozen, ROWS[1] + "\n" + ROWS[0] + "\n")
    check = verify_dataset(frozen)
    assert check.differences == ["the items are in a different order (the dataset_id depends on the order)"]
    assert check.current_id != check.locked_id


def test_verify_fails_on_a_byte_that_changes_no_item(frozen):
    write(frozen, "\n".join(ROWS).replace(", ", ",") + "\n")
    check = verify_dataset(frozen)
    assert check.current_id == check.locked_id
    assert check.differences[0].startswith("the file's bytes changed but every item hashes the same")


def test_a_missing_or_newer_lock_is_refused(tmp_path, frozen):
    other = write(tmp_path / "other.jsonl", ROWS[0])
    assert error_of(verify_dataset, other) == (
        f"{lock_path(other)}: no lock file; run `evalsite dataset freeze` on the dataset first"
    )
    lock = json.loads(lock_path(frozen).read_text())
    lock_path(frozen).write_text(json.dumps({**lock, "lock_version": 2}))
    assert error_of(verify_dataset, frozen) == (
        f"{lock_path(frozen)}: lock_version 2 is newer than this evalsite reads (1); upgrade evalsite"
    )


def test_dataset_commands(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    write(tmp_path / "data/qa.jsonl", "\n".join(ROWS) + "\n")
    frozen = cli("dataset", "freeze", "data/qa.jsonl")
    dataset_id = load_dataset(tmp_path / "data/qa.jsonl").dataset_id
    assert frozen.output == f"data/qa.jsonl.lock.json: {dataset_id} (2 items)\n"
    assert cli("dataset", "verify", "data/qa.jsonl").exit_code == 0

    shown = json.loads(cli("dataset", "show", "data/qa.jsonl", "--json").output)
    assert shown["dataset_id"] == dataset_id and shown["items"] == 2
    assert shown["lock"] == "data/qa.jsonl.lock.json: matches"

    write(tmp_path / "data/qa.jsonl", ROWS[0] + "\n")
    result = cli("dataset", "verify", "data/qa.jsonl")
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == "data/qa.jsonl: item 'b' removed"
    report = json.loads(cli("dataset", "verify", "data/qa.jsonl", "--json").output)
    assert report["ok"] is False and report["differences"] == ["item 'b' removed"]


def test_dataset_command_errors_are_one_line(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "bad.jsonl", "{nope}\n")
    result = cli("dataset", "show", "bad.jsonl")
    assert result.exit_code == 1
    assert result.output == "Error: bad.jsonl: invalid JSON on line 1: Expecting property name enclosed in double quotes\n"


def test_the_documented_example_rows_are_valid():
    page = (REPO / "docs/reference/datasets.md").read_text()
    block = page.split("```json\n", 1)[1].split("```", 1)[0]
    rows = [json.loads(line) for line in block.splitlines()]
    assert len(rows) == 3 and all(row_problems(row) == [] for row in rows)


def test_plain_rows_are_hashed_by_orjson_to_the_same_text_as_the_canonical_encoder():
    """A row of only dicts, lists, strings, integers, booleans and nulls is written by orjson: the
    very text the canonical encoder writes (so every item hash stays what it was), over every code
    point, key order across the planes and the whole 64-bit range; anything else is not plain."""
    import random

    from evalsite.runlog.hashing import canonical_json, plain_json, sha256_json, sha256_of_plain

    reference = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    characters = [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF]
    texts = ["".join(characters[start:start + 997]) for start in range(0, len(characters), 997)]
    texts += characters[:0x100]
    rng = random.Random(7)
    keys = characters[:160] + characters[0xF000:0xF100] + characters[-200:]
    numbers = [0, -5, 2**63 - 1, -2**63, 2**64 - 1, 2**64, -2**63 - 1, 10**30]
    rows = [{"input": text, "id": n} for n, text in enumerate(texts)]
    for _ in range(500):
        row = {"".join(rng.choices(keys, k=rng.randint(0, 3))): rng.choice(
            [*numbers, True, False, None, "x", [1, {"b": [None, "é"], "a": {}}], []]) for _ in range(6)}
        rows.append(row)
    for row in rows:
        assert plain_json(row)
        assert canonical_json(row) == reference.encode(row), row
        assert sha256_of_plain(row) == sha256_json(row) == hashlib.sha256(reference.encode(row).encode()).hexdigest(), row
    class Text(str):
        pass
    for value in [{"x": 1.5}, {"x": [0.1]}, {1: "a"}, {"x": Text("a")}, {"x": (1, 2)}, 2.0, {"x": float("nan")}]:
        assert not plain_json(value)


# ---- the column-at-a-time checks and hashes ------------------------------------------------

_IDS = st.one_of(st.text(max_size=2), st.sampled_from([None, "", "x" * 256, "x" * 257, 0, 1, -1, True, 1.5, 10**300, ["a"]]))
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=4), st.lists(st.integers(), max_size=2),
                    st.dictionaries(st.sampled_from(["k", "é"]), st.integers(), max_size=2))
_FIELDS = st.sampled_from(["id", "input", "expected", "answer", "note"] * 4 + ["turns", "metadata", "chosen", "rejected"])


@st.composite
def _rows(draw: st.DrawFn) -> list[dict]:
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        row = {field: draw(_VALUES) for field in draw(st.sets(_FIELDS, max_size=4))}
        if draw(st.booleans()):
            row["id"] = draw(_IDS)
        elif "id" in row and draw(st.booleans()):
            del row["id"]
        if "input" in row and draw(st.booleans()):
            row["input"] = draw(st.sampled_from(["q", "", [{"role": "user", "content": "q"}], [{"role": "x"}]]))
        rows.append(row)
    return rows


def _reference_sha(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@settings(max_examples=600, deadline=None)
@given(_rows(), st.sampled_from(["expected", "answer"]))
def test_rows_checked_a_column_at_a_time_give_the_row_by_row_problems_and_hashes(rows, expected_field):
    """The column checks pass only rows the row-by-row checks find nothing wrong with; each item's
    three hashes are the canonical JSON's (json.dumps with sorted keys) of the row and its sides."""
    from evalsite.experiment import datasets

    sourced = [datasets.SourceRow(row, f"line {index + 1}") for index, row in enumerate(rows)]
    by_row = datasets._each_row_problems(sourced, "d", expected_field)
    if datasets._surely_fine(rows):
        assert by_row == []
    problems = datasets.dataset_problems(sourced, "d", expected_field)
    assert problems[: len(by_row)] == by_row
    if problems:
        assert error_of(datasets.make_items, sourced, "d", expected_field).startswith(problems[0])
        return
    items = datasets.make_items(sourced, "d", expected_field)
    for index, (row, item) in enumerate(zip(rows, items)):
        input_side = {k: v for k, v in row.items() if k not in ("expected", expected_field)}
        assert (item.sha, item.input_sha, item.expected_sha) == (
            _reference_sha(row), _reference_sha(input_side), _reference_sha({"expected": row.get(expected_field)}))
        shown = datasets.eval_row(row, expected_field)
        assert (item.index, item.row) == (index, shown)
        assert item.item_id == (str(index) if shown.get("id") is None else str(shown["id"]))
    if expected_field == "expected":
        assert datasets.item_identity(rows, "d") == items


def test_items_made_without_the_dataclass_init_are_the_dataclass_items():
    """``_item`` sets the fields in the object's ``__dict__``: every field of ``Item``, no other, as
    its ``__init__`` would (a field added to ``Item`` fails here until ``_item`` sets it)."""
    from dataclasses import fields

    from evalsite.experiment.datasets import Item, _item

    values = ("q1", 3, {"id": "q1"}, "a" * 64, "b" * 64, "c" * 64)
    made, expected = _item(*values), Item(*values)
    assert (made, vars(made), type(made)) == (expected, vars(expected), Item)
    assert [field.name for field in fields(Item)] == list(vars(made))


def test_rows_held_in_memory_are_named_by_index_in_a_problem():
    from evalsite.experiment.datasets import item_identity

    assert error_of(item_identity, [{"id": "a"}, {"id": "a", "turns": []}], "mem") == (
        "mem: rows[1]: 'turns' is an empty list (and 1 more; `evalsite validate` lists them all)")
    assert error_of(item_identity, [{"id": "a"}, {"id": "a"}], "mem") == "mem: duplicate item id 'a' on rows[0] and rows[1]"
