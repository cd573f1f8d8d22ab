"""Hostile dataset, manifest and prompt inputs end in one clear line naming the file (and line),
never a traceback, a MemoryError or silently lost records (issue 15, defect 8). Hostile YAML at
each place a user hands us YAML, and the site build past it: test_hostile_yaml.py."""

from __future__ import annotations

import pytest

from evalsite.errors import DatasetError, ManifestError
from evalsite.experiment.datasets import load_rows
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.prompts import render_template

DEEP = 100_000


@pytest.mark.parametrize("name, text, message", [
    ("deep.jsonl", '{"input": "q"}\n{"input": ' + "[" * DEEP + "]" * DEEP + "}\n", "line 2: nested deeper than 100 levels"),
    ("deep.json", "[" * DEEP + "]" * DEEP, "nested deeper than 100 levels"),
    ("lone.jsonl", '{"input": "a\\ud800b"}\n', "line 1: holds a lone surrogate \\ud800 (not valid Unicode text)"),
    ("twice.jsonl", '{"input": "a"}\n{"input": "b", "expected": 1, "input": "c"}\n',
     "line 2: invalid JSON: duplicate key 'input'"),
    ("twice.json", '[{"input": "a"}, {"id": 1, "id": 2}]', "invalid JSON: duplicate key 'id'"),
    ("open.csv", 'id,input\n1,"hello\n2,world\n3,foo\n',
     "invalid CSV in the record starting on line 2: a quoted field is never closed"),
    ("stray.csv", 'id,input\n1,ok\n2,"he"llo\n', "invalid CSV in the record starting on line 3: ',' expected after '\"'"),
])
def test_hostile_dataset_files_are_one_line_errors(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DatasetError) as caught:
        load_rows(path)
    assert caught.value.message.startswith(f"{path}: ") and message in caught.value.message
    assert "\n" not in caught.value.message


def test_good_files_still_read_the_same(tmp_path):
    (tmp_path / "ok.csv").write_text('id,input\n1,"multi\nline, with ""quotes"""\n2,x\n')
    assert load_rows(tmp_path / "ok.csv") == [{"id": "1", "input": 'multi\nline, with "quotes"'}, {"id": "2", "input": "x"}]
    (tmp_path / "ok.jsonl").write_text('{"input": "a\\ud83d\\ude00", "n": [[[1]]]}\n')
    assert load_rows(tmp_path / "ok.jsonl") == [{"input": "a\U0001f600", "n": [[[1]]]}]


HEAD = "name: m\nrows:\n  - {input: q}\narms:\n  - {id: a, target: none}\n"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(7))


@pytest.mark.parametrize("name, text, message", [
    ("deep.yaml", HEAD + "description: " + "[" * 20_000 + "]" * 20_000 + "\n", "invalid YAML on line 6: nested deeper than 100 levels"),
    ("deep.json", '{"name": "m", "x": ' + "[" * DEEP + "]" * DEEP + "}", "nested deeper than 100 levels"),
    ("lone.yaml", HEAD + 'description: "a\\ud800"\n', "holds a lone surrogate \\ud800"),
    ("bomb.yaml", HEAD + "extra:\n" + "".join("  " + line + "\n" for line in BOMB.splitlines()),
     "holds more than 1000000 values (YAML aliases"),
    ("include.yaml", HEAD + "prompt: \"{% include 'secrets.txt' %}\"\n", "prompt: {% include %} is not supported"),
])
def test_hostile_manifests_are_one_line_errors(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ManifestError) as caught:
        load_manifest(path)
    assert caught.value.message.startswith(f"{path}: ") and message in caught.value.message, caught.value.message


@pytest.mark.parametrize("source, message", [
    ("{{ 'x' * 3000000000 }}", "would be longer than 5000000 characters"),
    ("{{ 'x' * 3e9 }}", "TypeError: can't multiply sequence"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "ran longer than 2s"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}xx{% endfor %}{% endfor %}", "cannot render"),
    ("{{ 'x'.ljust(3000000000) }}", "a call with 3000000000"),
    ("{{ 2 ** 100000000 }}", "too large a power"),
    ("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "too much memory or depth"),
    ("{% include 'x' %}", "{% include %} is not supported"),
])
def test_a_prompt_stops_within_its_budget(source, message):
    with pytest.raises(ManifestError) as caught:
        render_template(source, {})
    assert caught.value.message.startswith("prompt: ") and message in caught.value.message


def test_a_run_with_a_runaway_prompt_is_refused_before_any_call(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments/m.yaml").write_text(
        HEAD + "prompt: \"{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}\"\n")
    result = cli("run", "experiments/m.yaml")
    assert result.exit_code == 1 and "ran longer than 2s" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())

