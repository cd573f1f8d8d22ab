"""Bounded item ids and bounded error messages (issue 32, Low 12): three rows with megabyte ids once
made a 20 MB site, and a 100 KB name was echoed whole in an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsite.errors import MAX_LINE_CHARS, EvalsiteError, bounded_message
from evalsite.experiment.datasets import MAX_ITEM_ID_CHARS

HUGE = "n" * 100_000


@pytest.fixture
def scaffolded(cli, tmp_path, monkeypatch) -> Path:
    """`evalsite init`'s example project, as the working folder."""
    assert cli("init", str(tmp_path / "p")).exit_code == 0
    monkeypatch.chdir(tmp_path / "p")
    return tmp_path / "p"


def write_rows(scaffolded: Path, ids: list) -> Path:
    path = scaffolded / "data/example.jsonl"
    path.write_text("".join(json.dumps({"id": item_id, "input": "abc", "expected": "cba"}) + "\n" for item_id in ids))
    return path


def one_short_error(result, *parts: str) -> str:
    assert result.exit_code == 1, result.output
    error = next(line for line in result.output.splitlines() if line.startswith("Error: "))
    assert len(error) < 400 and all(part in error for part in parts), error
    assert HUGE not in result.output
    return error


@pytest.mark.parametrize("command", [("run", "experiments/example.yaml", "--dry-run"), ("dataset", "show", "data/example.jsonl")])
def test_an_item_id_past_the_limit_is_refused_naming_file_and_line(cli, scaffolded, command):
    write_rows(scaffolded, ["a", "b" * 1_000_000, "c"])
    error = one_short_error(cli(*command), "data/example.jsonl: line 2: 'id' is 1,000,000 characters long",
                            f"at most {MAX_ITEM_ID_CHARS} characters")
    assert "line 1" not in error and "line 3" not in error


def test_an_item_id_at_the_limit_is_kept_and_one_past_it_is_not(cli, scaffolded):
    write_rows(scaffolded, ["a", "b" * MAX_ITEM_ID_CHARS])
    assert cli("run", "experiments/example.yaml", "--dry-run").exit_code == 0
    write_rows(scaffolded, ["a", "b" * (MAX_ITEM_ID_CHARS + 1)])
    one_short_error(cli("run", "experiments/example.yaml", "--dry-run"), "line 2", f"{MAX_ITEM_ID_CHARS + 1} characters long")


def test_a_number_id_past_the_limit_is_refused_without_writing_its_digits(cli, scaffolded):
    path = scaffolded / "data/example.jsonl"
    path.write_text('{"id": 1, "input": "abc", "expected": "cba"}\n{"id": 1' + "0" * 300 + ', "input": "x"}\n')
    one_short_error(cli("dataset", "show", "data/example.jsonl"), "line 2: 'id' is a number of more than 256 digits")


def test_validate_lists_a_long_id_once_per_row(cli, scaffolded):
    write_rows(scaffolded, ["x" * 5000, "x" * 5000])  # also a duplicate: too long to compare, so not listed as one
    result = cli("validate")
    assert result.exit_code == 1
    for line in (1, 2):
        assert f"data/example.jsonl: line {line}: 'id' is 5,000 characters long" in result.output
    assert "duplicate" not in result.output


def test_a_100_kb_name_in_an_error_is_shown_by_its_start_and_length(cli, scaffolded):
    error = one_short_error(cli("run", "experiments/example.yaml", "--arm", HUGE, "--dry-run"), "unknown arm")
    assert "'" + "n" * 59 + "…(100,001 chars)' (arms: reverse, lowercase)" in error  # the value as quoted: 'nnn…'


def test_a_100_kb_manifest_name_is_shown_by_its_start_and_length(cli, scaffolded):
    manifest = scaffolded / "experiments/example.yaml"
    manifest.write_text(manifest.read_text().replace("name: example", f"name: {HUGE}"))
    one_short_error(cli("run", "experiments/example.yaml", "--dry-run"), "name:", "(100,001 chars)'")


def test_every_line_of_a_message_is_bounded_and_keeps_its_advice():
    spaced = " ".join(["word"] * 30_000)
    message = EvalsiteError(f"x.yaml: unknown name {spaced!r}; choose another\nsecond line").message
    first, second = message.split("\n")
    assert len(first) <= MAX_LINE_CHARS + 40 and first.startswith("x.yaml: unknown name 'word word")
    assert first.endswith("word'; choose another") and "chars)…" in first and second == "second line"
    assert bounded_message("short message, unchanged") == "short message, unchanged"
    path = "/" + "/".join(["folder"] * 50) + "/run.json"  # 350 characters: a long path is not cut
    assert bounded_message(f"{path}: unreadable") == f"{path}: unreadable"


def test_a_100_kb_dataset_path_is_one_short_error_not_a_traceback(cli, scaffolded):
    one_short_error(cli("dataset", "show", HUGE), "nnnn…(100,000 chars): cannot read the dataset file: File name too long")


def test_a_100_kb_run_reference_is_one_short_error_line(scaffolded, cli):
    for command in ("show", "compare", "bootstrap"):
        result = cli(command, "r" * 100_000)
        assert result.exit_code == 1 and "Traceback" not in result.output
        (line,) = result.output.strip().splitlines()
        assert line.startswith("Error: no run matches 'rrrr") and " chars)" in line and len(line) < 400
