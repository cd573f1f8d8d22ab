"""Manifests: loading, the shipped schema, every validation message, --set overrides, extends."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from evalsite.errors import ManifestError
from evalsite.experiment.manifest import apply_override, load_manifest
from evalsite.experiment.schema_check import SCHEMA_PATH, manifest_schema

REPO = Path(__file__).resolve().parent.parent
VALID = """\
name: demo
dataset: {path: data/qa.jsonl}
arms:
  - id: base
    target: python:arms.qa:answer
"""


def manifest_file(tmp_path: Path, text: str, name: str = "demo.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(tmp_path: Path, text: str, *overrides: str, name: str = "demo.yaml") -> list[str]:
    """The lines of the error a manifest raises, without the leading file name."""
    path = manifest_file(tmp_path, text, name)
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, overrides)
    lines = caught.value.message.splitlines()
    assert all(line.startswith(f"{path}: ") for line in lines), lines
    return [line.removeprefix(f"{path}: ") for line in lines]


def test_the_example_manifest_loads():
    manifest = load_manifest(REPO / "experiments/arithmetic.yaml")
    assert manifest.name == "arithmetic"
    assert [arm.id for arm in manifest.arms] == ["careful", "left_to_right", "sampler"]
    assert manifest.arms[2].price == {"input": 0.5, "output": 1.5}
    assert manifest.repeat == 3 and manifest.concurrency == 8
    assert manifest.design == {"mode": "cartesian"} and manifest.sweep is None
    assert manifest.text == (REPO / "experiments/arithmetic.yaml").read_text()


def test_a_json_manifest_loads_the_same(tmp_path):
    import yaml

    path = manifest_file(tmp_path, json.dumps(yaml.safe_load(VALID)), "demo.json")
    assert load_manifest(path).arms[0].target == "python:arms.qa:answer"


def test_the_shipped_schema_is_a_valid_json_schema():
    Draft202012Validator.check_schema(manifest_schema())
    assert SCHEMA_PATH.parent.parent.parent.name == "evalsite"  # inside the package, so the wheel ships it


# ---- schema messages -----------------------------------------------------------------------

def test_an_unknown_key_suggests_the_closest_known_one(tmp_path):
    assert problems(tmp_path, VALID + "repaet: 3\n") == [
        "repaet: unknown key; did you mean 'repeat'? (allowed: $schema, arms, artifacts, checkpoints, concurrency, dataset, "
        "description, design, emulation, evaluators, hooks, limits, models, name, output_schema, overlays, prompt, repeat, rows, schedule, stop_when, sweep)"
    ]


def test_unknown_keys_are_found_at_any_depth(tmp_path):
    text = VALID.replace("target: python:arms.qa:answer", "target: python:arms.qa:answer\n    parmas: {}")
    text = text.replace("{path: data/qa.jsonl}", "{path: data/qa.jsonl, limt: 3}")
    assert problems(tmp_path, text) == [
        "arms[0].parmas: unknown key; did you mean 'params'? (allowed: description, extends, id, params, price, settings, target)",
        "dataset.limt: unknown key; did you mean 'limit'? (allowed: dataset_id, expected_field, limit, name, path, reference_tier, split)",
    ]


def test_every_problem_is_listed_not_only_the_first(tmp_path):
    text = VALID + "repeat: three\nconcurrency: 0\nsweep: {mode: gird, variables: {temperature: []}}\n"
    assert problems(tmp_path, text) == [
        "concurrency: must be at least 1, got 0",
        "repeat: must be a whole number, got the string 'three'",
        "sweep.mode: must be one of grid, random, schedule, got 'gird'; did you mean 'grid'?",
        "sweep.variables.temperature: needs at least 1 entry",
    ]


@pytest.mark.parametrize("extra, problem", [
    ("limits: {max_cost_usd: 0}", "limits.max_cost_usd: must be more than 0, got 0"),
    ("prompt: 5", "prompt: must be a string or a list or a mapping, got the number 5"),
    ("prompt: [{role: user, content: hi}, {role: robot, content: x}]",
     "prompt[1].role: must be one of system, user, assistant, got 'robot'"),
    ("evaluators: [{threshold: 0.5}]", "evaluators[0].type: required key is missing"),
    ("design: {mode: coupled}", "design.couplings: required key is missing"),
    ("design: {mode: one_factor, vary: {axis: item, values: [q1]}}", "design.pin_arms: required key is missing"),
    ("design: {mode: one_factor, vary: {axis: arm, values: [base]}}", "design.pin_items: required key is missing"),
    ("sweep: {mode: random, variables: {style: [a, b]}}", "sweep.trials: required key is missing"),
    ("sweep: {variables: {not-a-name: [1]}}", "sweep.variables: 'not-a-name' is not allowed: must match ^[A-Za-z_][A-Za-z0-9_]*$"),
    ("schedule: {timeout: 3}",
     "schedule.timeout: unknown key; did you mean 'timeout_s'? (allowed: backoff_s, max_attempts, max_backoff_s, ordering, parallel_arms, "
     "pause_between_s, reset_state, runner, timeout_s)"),
])
def test_schema_messages_name_the_key_path_and_what_is_allowed(tmp_path, extra, problem):
    assert problems(tmp_path, VALID + extra + "\n") == [problem]


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", "with space", "x" * 101])
def test_names_that_become_paths_are_checked(tmp_path, name):
    rule = "letters, digits, '-', '_' and '.' only (at most 100), without '..'"
    assert problems(tmp_path, VALID.replace("name: demo", f"name: {json.dumps(name)}")) == [
        f"name: {name!r} is not allowed: {rule}"
    ]
    assert problems(tmp_path, VALID.replace("id: base", f"id: {json.dumps(name)}")) == [
        f"arms[0].id: {name!r} is not allowed: {rule}"
    ]


def test_a_file_name_that_is_not_a_safe_name_needs_a_name(tmp_path):
    text = VALID.replace("name: demo\n", "")
    assert problems(tmp_path, text, name="my demo.yaml") == [
        "name: the file name 'my demo' is not a safe name (letters, digits, '-', '_' and '.' only "
        "(at most 100), without '..'); add a 'name'"
    ]


# ---- rules beyond the schema ---------------------------------------------------------------

def test_dataset_or_rows_not_both(tmp_path):
    assert problems(tmp_path, VALID + "rows: [{input: a}]\n") == [
        "dataset: give either 'dataset' (a file) or 'rows' (inline), not both"
    ]
    # neither is one empty row (tests/test_seeds_sweeps.py)
    assert load_manifest(manifest_file(tmp_path, VALID.replace("dataset: {path: data/qa.jsonl}\n", ""))).rows == [{}]


def test_arm_references(tmp_path):
    text = """\
rows: [{input: a}]
arms:
  - {id: base, target: none}
  - {id: base, target: none}
  - {id: x, extends: y}
  - {id: y, extends: x}
  - {id: z, extends: bsae}
"""
    assert problems(tmp_path, text) == [
        "arms[1].id: duplicate arm id 'base' (also arms[0])",
        "arms[2].extends: a cycle x → y → x",
        "arms[3].extends: a cycle y → x → y",
        "arms[4].extends: no arm 'bsae'; did you mean 'base'?",
    ]


def test_a_secret_written_into_the_manifest_is_refused(tmp_path):
    text = VALID + "    settings: {base_url: 'http://127.0.0.1:8000', headers: {Authorization: Bearer x}, api_key: sk-1}\n"
    assert problems(tmp_path, text) == [
        f"arms[0].settings.{key}: looks like a secret written into the manifest; keep it in an environment "
        "variable and name that variable instead (e.g. api_key_env: OPENAI_API_KEY)"
        for key in ("headers.Authorization", "api_key")
    ]


def test_keys_a_mode_does_not_use_are_errors_not_ignored(tmp_path):
    assert problems(tmp_path, VALID + "sweep: {seed: 3, variables: {temperature: [0, 1]}}\n") == [
        "sweep.seed: only used with mode: random"
    ]
    assert problems(tmp_path, VALID + "design: {mode: cartesian, pin_items: [q1]}\n") == [
        "design.pin_items: not used with mode: cartesian"
    ]
    text = VALID + "design: {mode: one_factor, vary: {axis: arm, values: [base]}, pin_items: [q1], pin_arms: [base]}\n"
    assert problems(tmp_path, text) == ["design.pin_arms: not used when vary.axis is arm"]


def test_design_arms_must_exist(tmp_path):
    text = VALID + "design: {mode: coupled, couplings: [{arm: bas, items: [q1]}]}\n"
    assert problems(tmp_path, text) == ["design.couplings[0].arm: no arm 'bas'; did you mean 'base'? (arms: base)"]


def test_a_prompt_template_with_a_syntax_error_names_its_key(tmp_path):
    text = VALID + "prompt: [{role: system, content: ok}, {role: user, content: '{{ question '}]\n"
    assert problems(tmp_path, text) == [
        "prompt[1].content: invalid template on line 1: unexpected end of template, expected 'end of print statement'."
    ]


# ---- reading -------------------------------------------------------------------------------

def test_a_key_given_twice_is_an_error(tmp_path):
    path = manifest_file(tmp_path, VALID + "name: other\n")
    with pytest.raises(ManifestError, match=re.escape(f"{path}: invalid YAML on line 6: duplicate key 'name' (first on line 1)")):
        load_manifest(path)
    path = manifest_file(tmp_path, '{"name": "a", "name": "b"}', "demo.json")
    with pytest.raises(ManifestError, match=re.escape(f"{path}: invalid JSON: duplicate key 'name'")):
        load_manifest(path)


@pytest.mark.parametrize("text, name, message", [
    ("name: [unclosed\n", "demo.yaml", "invalid YAML on line 2: "),
    ('{"name": }', "demo.json", "invalid JSON on line 1: Expecting value"),
    ("- just\n- a list\n", "demo.yaml", "a manifest must be a mapping at the top level"),
    ("", "demo.yaml", "a manifest must be a mapping at the top level"),
])
def test_unreadable_manifests(tmp_path, text, name, message):
    path = manifest_file(tmp_path, text, name)
    with pytest.raises(ManifestError) as caught:
        load_manifest(path)
    assert caught.value.message.startswith(f"{path}: {message}")


# ---- --set ---------------------------------------------------------------------------------

def test_set_parses_yaml_scalars_and_flow_lists():
    data = {"arms": [{"id": "base", "target": "none"}]}
    for assignment in ("repeat=3", "limits.max_cost_usd=0.5", "arms.base.params.stream=true",
                       "description=a: b", "sweep.variables.temperature=[0, 0.7]", "arms.0.params.model=gpt-x"):
        apply_override(data, assignment)
    assert data == {
        "arms": [{"id": "base", "target": "none", "params": {"stream": True, "model": "gpt-x"}}],
        "repeat": 3,
        "limits": {"max_cost_usd": 0.5},
        "description": "a: b",
        "sweep": {"variables": {"temperature": [0, 0.7]}},
    }


@pytest.mark.parametrize("assignment, message", [
    ("repeat", "--set 'repeat': expected KEY=VALUE with a dotted KEY, e.g. arms.base.params.temperature=0"),
    ("a..b=1", "--set 'a..b=1': expected KEY=VALUE with a dotted KEY, e.g. arms.base.params.temperature=0"),
    ("arms.bsae.params.x=1", "--set 'arms.bsae.params.x=1': arms has no entry 'bsae'; did you mean 'base'? (ids: base)"),
    ("name.first=x", "--set 'name.first=x': name is the string 'demo', not a mapping or a list"),
])
def test_set_errors_name_the_assignment(assignment, message):
    with pytest.raises(ManifestError) as caught:
        apply_override({"name": "demo", "arms": [{"id": "base"}]}, assignment)
    assert caught.value.message == message


def test_set_patches_before_validation_and_is_recorded(tmp_path):
    path = manifest_file(tmp_path, VALID)
    manifest = load_manifest(path, ["repeat=2", "arms.base.params.temperature=0.2"])
    assert manifest.repeat == 2 and manifest.arms[0].params == {"temperature": 0.2}
    assert manifest.overrides == ("repeat=2", "arms.base.params.temperature=0.2")
    assert manifest.text == VALID and manifest.effective["repeat"] == 2
    assert problems(tmp_path, VALID, "repeat=0", "arms.base.parmas.x=1") == [
        "arms[0].parmas: unknown key; did you mean 'params'? (allowed: description, extends, id, params, price, settings, target)",
        "repeat: must be at least 1, got 0",
    ]


# ---- extends -------------------------------------------------------------------------------

def test_extends_deep_merges_chains_of_arms(tmp_path):
    text = """\
rows: [{input: a}]
arms:
  - id: base
    target: openai
    params: {model: m1, temperature: 0, stop: ["\\n"]}
    settings: {base_url: "http://127.0.0.1:1", timeout: 30}
    price: {input: 1, output: 2}
  - id: warm
    extends: base
    params: {temperature: 0.7, stop: ["."]}
  - id: warm-local
    extends: warm
    settings: {base_url: "http://127.0.0.1:2"}
"""
    warm, local = load_manifest(manifest_file(tmp_path, text)).arms[1:]
    assert warm.extends == "base" and warm.target == "openai"
    assert warm.params == {"model": "m1", "temperature": 0.7, "stop": ["."]}
    assert local.params == warm.params and local.price == {"input": 1, "output": 2}
    assert local.settings == {"base_url": "http://127.0.0.1:2", "timeout": 30}


# ---- the CLI -------------------------------------------------------------------------------

def test_run_lists_every_manifest_problem_one_line_each(example_project, cli):
    path = example_project / "experiments/arithmetic.yaml"
    path.write_text(path.read_text().replace("repeat: 3", "repeat: 0\nnmae: x"))
    result = cli("run", "experiments/arithmetic.yaml")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "Error: experiments/arithmetic.yaml: nmae: unknown key; did you mean 'name'? (allowed: $schema, arms, "
        "artifacts, checkpoints, concurrency, dataset, description, design, emulation, evaluators, hooks, limits, models, name, output_schema, overlays, prompt, repeat, rows, schedule, stop_when, sweep)",
        "experiments/arithmetic.yaml: repeat: must be at least 1, got 0",
    ]
    assert not any((example_project / "runs").glob("*"))


def test_a_malformed_set_is_a_usage_error(example_project, cli):
    result = cli("run", "experiments/arithmetic.yaml", "--set", "repeat")
    assert result.exit_code == 2
    assert "'repeat' is not KEY=VALUE" in result.output


# ---- the reference page --------------------------------------------------------------------

DOCS = REPO / "docs/reference/manifest.md"


def schema_keys(schema: dict, prefix: str = ""):
    """Every key path the schema allows: ``arms[].params.model``, ``design.vary.axis``…"""
    if "$ref" in schema:
        schema = manifest_schema()["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    for name, inner in schema.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        yield path
        yield from schema_keys(inner, path)
    if isinstance(schema.get("items"), dict):
        yield from schema_keys(schema["items"], prefix + "[]")
    for branch in schema.get("anyOf", []):
        yield from schema_keys(branch, prefix)


def test_every_schema_key_is_documented():
    documented = set(re.findall(r"`([A-Za-z_.\[\]]+)`", DOCS.read_text()))
    missing = sorted(key for key in set(schema_keys(manifest_schema())) - {"$schema"} if key not in documented)
    assert missing == []


def test_the_documented_example_manifest_runs(example_project, cli):
    example = re.search(r"```yaml\n(name: arithmetic-sweep\n.*?)```", DOCS.read_text(), re.S).group(1)
    (example_project / "experiments/arithmetic-sweep.yaml").write_text(example)
    dry = json.loads(cli("run", "experiments/arithmetic-sweep.yaml", "--dry-run", "--json").output)
    assert (len(dry["configs"]), dry["total"]["cases"]) == (6, 240)
    assert cli("run", "experiments/arithmetic-sweep.yaml", "--allow-failures").exit_code == 0
    cases = [line for path in (example_project / "runs").glob("*/cases.jsonl") for line in path.read_text().splitlines()]
    assert len(cases) == 240


def test_top_level_keys_are_names_but_nested_yaml_keys_may_be_numbers(tmp_path):
    """YAML reads `1: x` as an int key: a free-form block keeps it (a logit_bias), but a manifest's
    or an overlay's top level is names; an overlay mixing both once crashed sorting them."""
    path = manifest_file(tmp_path, "rows: [{input: a}]\narms: [{id: a, target: none}]\n1: x\n2.5: y\n")
    with pytest.raises(ManifestError) as caught:
        load_manifest(path)
    assert caught.value.message == f"{path}: each top-level key must be a name (a string), got the number 1, the number 2.5"
    (tmp_path / "o.yaml").write_text("kind: Overlay\nfoo: 1\n2: 3\n")
    path = manifest_file(tmp_path, "overlays: [o.yaml]\nrows: [{input: a}]\narms: [{id: a, target: none}]\n")
    with pytest.raises(ManifestError) as caught:
        load_manifest(path)
    assert caught.value.message == f"{path}: overlay o.yaml: each top-level key must be a name (a string), got the number 2"
    path = manifest_file(tmp_path, "rows: [{input: a}]\narms: [{id: a, target: none, params: {logit_bias: {50256: -100}}}]\n")
    assert load_manifest(path).arms[0].params == {"logit_bias": {50256: -100}}


def test_yaml_anchors_and_merge_keys_still_work(tmp_path):
    text = "rows: [{input: a}]\narms:\n  - &base {id: a, target: none, params: {temperature: 0}}\n  - <<: *base\n    id: b\n"
    arms = load_manifest(manifest_file(tmp_path, text)).arms
    assert [(arm.id, arm.target, arm.params) for arm in arms] == [("a", "none", {"temperature": 0}), ("b", "none", {"temperature": 0})]
