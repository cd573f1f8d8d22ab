"""Numbers in files to import (issue 32, items 3 and 9): a cost, latency, token count or score out
of the run log's range, or an integer past Python's 4,300 digits, is one ``Error:`` line naming the
source file and record; nothing is written to ``runs/``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from import_support import LMEVAL, PLAIN, PROMPTFOO

MANY_DIGITS = "9" * 5000


def refused(cli, project: Path, *args: str) -> str:
    result = cli("import", *args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 1, result.output
    assert not (project / "runs").exists() or not any((project / "runs").iterdir())
    (line,) = result.stderr.splitlines()
    return line


def promptfoo_lines(project: Path, change) -> Path:
    lines = (PROMPTFOO / "results.jsonl").read_text().splitlines()
    path = project / "results.jsonl"
    path.write_text("\n".join([change(lines[0]), change(lines[1]), *lines[2:]]) + "\n")
    return path


@pytest.mark.parametrize("field, value, shown", [
    ("cost", 1.7e308, "cost_usd=1.7e+308 is out of range (0 to 1e+06)"),
    ("latencyMs", 1e300, "latency_ms=1e+300 is out of range (0 to 2.592e+09)"),
])
def test_a_promptfoo_result_with_an_absurd_number_is_refused_naming_the_record(cli, import_project, field, value, shown):
    path = promptfoo_lines(import_project, lambda line: json.dumps({**json.loads(line), field: value}))
    assert refused(cli, import_project, "promptfoo", str(path)) == f"Error: {path}: line 1: {shown}; a run cannot record it"


def test_a_promptfoo_result_with_a_many_digit_integer_is_refused_naming_the_line(cli, import_project):
    path = promptfoo_lines(import_project, lambda line: line[:-1] + f', "latencyMs": {MANY_DIGITS}}}')
    assert refused(cli, import_project, "promptfoo", str(path)) == (
        f"Error: {path}: line 1: invalid JSON: an integer of more than 4300 digits")


def test_a_promptfoo_json_document_with_a_many_digit_integer_is_refused(cli, import_project):
    text = (PROMPTFOO / "results.json").read_text()
    path = import_project / "results.json"
    path.write_text(text.replace('"cost":', f'"cost": {MANY_DIGITS}, "x":', 1))
    line = refused(cli, import_project, "promptfoo", str(path))
    assert line.startswith(f"Error: {path}: line ") and line.endswith(": invalid JSON: an integer of more than 4300 digits")


def lmeval_copy(project: Path, change) -> Path:
    folder = project / "lm"
    shutil.copytree(LMEVAL / "model-a", folder)
    (samples,) = folder.glob("samples_*.jsonl")
    lines = samples.read_text().splitlines()
    samples.write_text("\n".join([change(lines[0]), *lines[1:]]) + "\n")
    return samples


def test_an_lmeval_metric_of_1e300_is_refused_naming_the_sample(cli, import_project):
    samples = lmeval_copy(import_project, lambda line: json.dumps({**json.loads(line), "exact_match": 1e300}))
    assert refused(cli, import_project, "lm-eval", str(import_project / "lm")) == (
        f"Error: {samples}: line 1: score 'exact_match': score=1e+300 is out of range (-1e+12 to 1e+12); a run cannot record it")


def test_an_lmeval_results_file_with_a_many_digit_integer_is_refused(cli, import_project):
    lmeval_copy(import_project, lambda line: line)
    (results,) = (import_project / "lm").glob("results_*.json")
    results.write_text(results.read_text().replace("{", f'{{"n": {MANY_DIGITS}, ', 1))
    assert refused(cli, import_project, "lm-eval", str(import_project / "lm")) == (
        f"Error: {results}: not valid JSON: an integer of more than 4300 digits")


@pytest.mark.parametrize("field, value, shown", [
    ("latency_ms", "1e300", "latency_ms=1e+300 is out of range (0 to 2.592e+09)"),
    ("cost_usd", "-0.5", "cost_usd=-0.5 is out of range (0 to 1e+06)"),
    ("input_tokens", "10000000000", "input_tokens=10000000000 is out of range (0 to 1e+09)"),
    ("repeat", str(2**64), f"repeat={2**64} is out of range (0 to {2**63 - 1})"),
])
def test_a_plain_row_with_a_number_out_of_range_is_refused_naming_the_line(cli, import_project, field, value, shown):
    lines = (PLAIN / "scored.jsonl").read_text().splitlines()
    lines[2] = lines[2][:-1] + f', "{field}": {value}}}'
    path = import_project / "scored.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert refused(cli, import_project, "jsonl", str(path)) == f"Error: {path}: line 3: {shown}; a run cannot record it"


def test_a_plain_row_with_a_many_digit_integer_is_refused_naming_the_line(cli, import_project):
    lines = (PLAIN / "scored.jsonl").read_text().splitlines()
    lines[1] = lines[1][:-1] + f', "extra": [{MANY_DIGITS}]}}'
    path = import_project / "scored.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert refused(cli, import_project, "jsonl", str(path)) == (
        f"Error: {path}: line 2: invalid JSON: an integer of more than 4300 digits")
