"""Hostile YAML — nested thousands deep (flow, block, indented, through aliases), an alias bomb or
an integer of more digits than Python reads —
is refused as it is read, with one line naming the file and line, at every place a user hands us
YAML: the manifest, ``--set``, curve files, step files, prompt files, a json evaluator's schema
file; the site build reads on past it. The refusal does not wait for Python's recursion limit."""

from __future__ import annotations

import json
import sys

import pytest
import yaml
from sitekit import case, write_run

from evalsite.experiment import bounded_yaml
from evalsite.experiment.bounded import MAX_DEPTH, shape_problem
from evalsite.experiment.bounded_yaml import YAMLBoundError, load_yaml, yaml_problem
from evalsite.project import find_project
from evalsite.site import build_site

DEEP = "nested deeper than 100 levels"
LONG = "an integer of more than 4300 digits"
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(7))
#: each shape: a mapping document, the line the refusal names, and the problem
SHAPES = {
    "flow": ("deep: " + "[" * 20_000 + "]" * 20_000 + "\n", 1, DEEP),
    "block": ("deep:\n" + "- " * 20_000 + "x\n", 2, DEEP),
    "indented": ("".join(" " * level + "k:\n" for level in range(150)) + " " * 150 + "v\n", 101, DEEP),
    "alias": ("a: &a " + "[" * 60 + "]" * 60 + "\nb: " + "[" * 50 + "*a" + "]" * 50 + "\n", 2, DEEP),
    "bomb": (BOMB, 6, "holds more than 1000000 values (YAML aliases repeating a large part?)"),
    # past Python's 4,300 digits: int() raised a ValueError PyYAML let through (a traceback); in hex
    # it read, and then no message or schema check could show it
    "long-integer": ("n: " + "9" * 5_000 + "\n", 1, LONG),
    "long-hex-integer": ("n: 0x" + "f" * 5_000 + "\n", 1, LONG),
}
HEAD = "name: m\nrows:\n  - {input: q}\narms:\n  - {id: a, target: none}\n"  # 5 lines


@pytest.fixture
def high_recursion_limit():
    """Python's recursion limit at 20,000: PyYAML alone would recurse (and scan) that deep first."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    yield
    sys.setrecursionlimit(before)


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_is_refused_at_its_line_whatever_the_recursion_limit(shape, high_recursion_limit):
    text, line, problem = SHAPES[shape]
    with pytest.raises(YAMLBoundError) as caught:
        load_yaml(text)
    assert yaml_problem(caught.value) == f"invalid YAML on line {line}: {problem}"


def _nested(kind: str, levels: int) -> str:
    if kind == "flow":
        return "[" * levels + "]" * levels
    if kind == "block":
        return "- " * levels + "x"
    if kind == "indented":
        return "".join(" " * level + "k:\n" for level in range(levels)) + " " * levels + "v"
    return "a: &a " + "[" * (levels - 3) + "]" * (levels - 3) + "\nb: [[*a]]"  # alias: 1 + 2 + (levels - 3)


@pytest.mark.parametrize("kind", ["flow", "block", "indented", "alias"])
@pytest.mark.parametrize("levels", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
def test_the_depth_bound_is_the_one_shape_problem_applies_after_the_fact(kind, levels):
    text = _nested(kind, levels)
    refused = shape_problem(yaml.safe_load(text)) is not None  # the reference: PyYAML's value, walked
    try:
        value = load_yaml(text)
    except YAMLBoundError as exc:
        assert refused and exc.problem == DEEP
    else:
        assert not refused and value == yaml.safe_load(text)
    assert refused == (levels > MAX_DEPTH)


@pytest.mark.parametrize("copies", [9, 10, 11])
def test_the_size_bound_counts_each_use_of_an_alias_as_shape_problem_does(copies, monkeypatch):
    monkeypatch.setattr(bounded_yaml, "MAX_VALUES", 307)
    text = "a: &a [1, [2, 3], {k: v}]\nb: &b [" + ", ".join(["*a"] * copies) + "]\nc: [*b, *b, {m: *b}]\n"
    refused = shape_problem(yaml.safe_load(text), max_values=307) is not None  # the reference
    try:
        value = load_yaml(text)
    except YAMLBoundError as exc:
        assert refused and exc.problem == "holds more than 307 values (YAML aliases repeating a large part?)"
    else:
        assert not refused and value == yaml.safe_load(text)
    assert refused == (copies > 9)  # 19 + 32 × copies values: 307 at 9 copies


def _project(root, shape: str) -> dict[str, str]:
    """One manifest per entry point, each reaching the same hostile document in its own file."""
    text = SHAPES[shape][0]
    for folder in ("experiments", "curves", "hooks", "prompts", "schemas"):
        (root / folder).mkdir()
    for name in ("curves/c.yaml", "hooks/h.yaml", "prompts/p.yaml", "schemas/s.yaml"):
        (root / name).write_text(text)
    manifests = {
        "manifest": HEAD + text,
        "curve": HEAD + "sweep: {mode: schedule, trials: 2, variables: {temperature: {curve: c}}}\n",
        "hooks": HEAD + "hooks: {arm: {post: {ref: hooks/h.yaml}}}\n",
        "prompt": HEAD + "prompt: {name: p}\n",
        "schema": HEAD + "evaluators: [{type: json, schema: schemas/s.yaml}]\n",
    }
    for name, manifest in manifests.items():
        (root / f"experiments/{name}.yaml").write_text(manifest)
    return manifests


@pytest.mark.parametrize("shape", SHAPES)
def test_every_entry_point_refuses_each_shape_in_one_line(shape, tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, shape)
    _, line, problem = SHAPES[shape]
    expected = {
        "manifest": f"experiments/manifest.yaml: invalid YAML on line {line + 5}: {problem}",
        "curve": f"{tmp_path}/curves/c.yaml: cannot read the curve: invalid YAML on line {line}: {problem}",
        "hooks": f"hooks.arm.post[0].ref: hooks/h.yaml: invalid YAML on line {line}: {problem}",
        "prompt": f"{tmp_path}/prompts/p.yaml: cannot read the prompt: invalid YAML on line {line}: {problem}",
        "schema": f"evaluators[0] (json): schema: schemas/s.yaml: invalid YAML on line {line}: {problem}",
    }
    for name, message in expected.items():
        result = cli("run", "--dry-run", f"experiments/{name}.yaml")
        assert result.exit_code == 1 and message in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    checked = cli("validate").output.splitlines()
    assert all(any(message in line for line in checked) for message in expected.values()), checked


@pytest.mark.parametrize("content", ["too large", "not UTF-8"])
def test_every_file_read_whole_refuses_a_huge_or_undecodable_file_in_one_line(content, tmp_path, monkeypatch, cli):
    """Past 10 MB a file is refused by its size before a byte is read (a sparse file: no disk used)."""
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, "flow")
    (tmp_path / "experiments/big.yaml").write_text(HEAD)
    problem = "10.0 MB; a file read whole may hold at most 10 MB" if content == "too large" else "not UTF-8 text (invalid start byte at byte 6)"
    for name in ("curves/c.yaml", "hooks/h.yaml", "prompts/p.yaml", "schemas/s.yaml", "experiments/big.yaml"):
        with open(tmp_path / name, "wb") as handle:
            if content == "too large":
                handle.truncate(bounded_yaml.MAX_DOCUMENT_BYTES + 1)
            else:
                handle.write(b"name: \xff\n")
    expected = {
        "curve": f"{tmp_path}/curves/c.yaml: cannot read the curve: ",
        "hooks": "hooks.arm.post[0].ref: hooks/h.yaml: cannot read the step file: ",
        "prompt": f"{tmp_path}/prompts/p.yaml: cannot read the prompt: ",
        "schema": "evaluators[0] (json): schema: schemas/s.yaml: cannot read it: ",
        "big": "experiments/big.yaml: ",
    }
    for name, message in expected.items():
        result = cli("run", "--dry-run", f"experiments/{name}.yaml")
        assert result.exit_code == 1 and message + problem in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_json_curve_and_schema_files_are_read_as_strictly_as_a_json_manifest(tmp_path, monkeypatch, cli):
    """Beside the YAML they may be JSON: read by the manifest's bounded JSON reader, not json.loads
    (whose RecursionError was a traceback)."""
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, "flow")
    (tmp_path / "curves/c.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "curves/c.yaml").unlink()
    (tmp_path / "schemas/s.json").write_text('{"type": "object", "type": "array"}')
    (tmp_path / "experiments/schema.yaml").write_text(HEAD + "evaluators: [{type: json, schema: schemas/s.json}]\n")
    result = cli("run", "--dry-run", "experiments/curve.yaml")
    assert result.exit_code == 1 and f"curves/c.json: cannot read the curve: {DEEP}" in result.output, result.output
    result = cli("run", "--dry-run", "experiments/schema.yaml")
    assert "schema: schemas/s.json: invalid JSON: duplicate key 'type' (each key may appear once" in result.output


def test_a_set_value_nested_too_deep_is_refused(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments/m.yaml").write_text(HEAD)
    result = cli("run", "--dry-run", "experiments/m.yaml", "--set", "description=" + "[" * 20_000)
    assert result.exit_code == 1 and f"invalid YAML on line 1: {DEEP}" in result.output, result.output
    assert cli("run", "--dry-run", "experiments/m.yaml", "--set", "description=[a").exit_code == 0  # still text
    result = cli("run", "--dry-run", "experiments/m.yaml", "--set", "repeat=" + "9" * 5_000)
    assert result.exit_code == 1 and f"invalid YAML on line 1: {LONG}" in result.output, result.output


def test_the_site_builds_past_every_shape_in_experiments_and_in_a_run_header(tmp_path):
    root = tmp_path / "p"
    (root / "experiments").mkdir(parents=True)
    for shape, (text, _, _) in SHAPES.items():
        (root / f"experiments/{shape}.yaml").write_text(text)
    run = write_run(root / "runs", "20260101T000000Z-a-0000", [case("i1")], experiment="flow")
    header = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**header, "submitted_manifest": SHAPES["bomb"][0]}))
    report = build_site(find_project(root))
    assert (root / "site/index.html").is_file() and report.pages > 1
    for shape, (_, _, problem) in SHAPES.items():
        page = (root / f"site/experiments/{shape}.html").read_text()
        assert f"The manifest could not be read: not valid YAML/JSON: {problem}" in page


def test_the_site_leaves_a_manifest_past_10_mb_unread_and_warns(tmp_path):
    root = tmp_path / "p"
    (root / "experiments").mkdir(parents=True)
    text = "name: renamed\n# " + "x" * bounded_yaml.MAX_DOCUMENT_BYTES + "\n"  # read, PyYAML scans it for seconds
    (root / "experiments/huge.yaml").write_text(text)
    write_run(root / "runs", "20260101T000000Z-a-0000", [case("i1")], experiment="huge")
    report = build_site(find_project(root))
    assert ("experiments/huge.yaml: 10.0 MB; a file read whole may hold at most 10 MB (put rows in a dataset file)"
            in report.warnings), report.warnings
    assert (root / "site/experiments/huge.html").is_file()
    assert not (root / "site/experiments/renamed.html").exists()  # named by its file: its text was never read


def test_a_recorded_manifest_past_10_mb_is_not_scanned_by_the_site(tmp_path):
    root = tmp_path / "p"
    run = write_run(root / "runs", "20260101T000000Z-a-0000", [case("i1")], experiment="far")
    header = json.loads((run / "run.json").read_text())
    recorded = "description: read\n# " + "x" * bounded_yaml.MAX_DOCUMENT_BYTES + "\n"  # scanned for seconds
    (run / "run.json").write_text(json.dumps({**header, "submitted_manifest": recorded}))
    build_site(find_project(root))
    page = (root / "site/experiments/far.html").read_text()
    assert "The manifest could not be read: not valid YAML/JSON: longer than 10 MB" in page
