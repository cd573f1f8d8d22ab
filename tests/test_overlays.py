"""Overlay manifests: ``overlays:`` files whose ``spec.overrides`` groups patch the manifest
through selectors with wildcards, before validation and before ``--set``."""

from __future__ import annotations

import yaml
from study_support import runs, write_study

from evalsite.experiment.manifest import load_manifest

ARMS = [{"id": "gpt-small", "target": "python:study_target:answer", "params": {"temperature": 1}},
        {"id": "gpt-large", "target": "python:study_target:answer"},
        {"id": "local", "target": "python:study_target:answer", "params": {"temperature": 1}}]


def _overlay(root, name: str, groups: list) -> str:
    (root / "experiments" / name).write_text(yaml.safe_dump({"kind": "Overlay", "spec": {"overrides": groups}}))
    return name


def test_wildcard_groups_patch_every_arm_they_select_in_order_and_set_wins(study_project, cli):
    cold = _overlay(study_project, "cold.yaml", [
        {"target": "arms.gpt-*.params", "patch": {"temperature": 0, "seed": 7}},
        {"target": ["arms.local.params", "schedule"], "patch": {"max_attempts": 2}},
    ])
    late = _overlay(study_project, "late.yaml", [{"target": "arms.*.params", "patch": {"top_p": 0.5}}])
    path = write_study(study_project, arms=ARMS, overlays=[cold, late])
    manifest = load_manifest(path, ["arms.gpt-large.params.seed=8"])
    params = {arm.id: arm.params for arm in manifest.arms}
    assert params == {"gpt-small": {"temperature": 0, "seed": 7, "top_p": 0.5},
                      "gpt-large": {"temperature": 0, "seed": 8, "top_p": 0.5},  # created, then --set
                      "local": {"temperature": 1, "max_attempts": 2, "top_p": 0.5}}
    assert manifest.schedule["max_attempts"] == 2
    assert cli("run", path, "--arm", "gpt-large").exit_code == 0
    (run,) = runs(study_project)
    assert run.header.config["params"] == {"temperature": 0, "seed": 7, "top_p": 0.5}


def test_every_problem_of_every_overlay_is_one_line_each(study_project, cli):
    bad = _overlay(study_project, "bad.yaml", [
        {"target": "arms.claude-*.params", "patch": {"temperature": 0}},
        {"target": "arms.*.params", "patch": 3},
        {"target": "name", "patch": {"x": 1}},
        {"target": "arms.*", "patch": {"x": 1}, "extra": True},
    ])
    path = write_study(study_project, arms=ARMS, overlays=[bad, "missing.yaml"])
    result = cli("run", path)
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("Error:") or line.startswith("experiments")]
    prefix = "experiments/study.yaml: overlay "
    assert [line.removeprefix("Error: ") for line in errors] == [
        f"{prefix}bad.yaml: spec.overrides[0].target: 'arms.claude-*.params' reaches nothing",
        f"{prefix}bad.yaml: spec.overrides[1].patch: needs a mapping, got the number 3",
        f"{prefix}bad.yaml: spec.overrides[2].target: 'name' reaches the string 'study', not a mapping to patch",
        f"{prefix}bad.yaml: spec.overrides[3].extra: a group has exactly the keys target and patch",
        f"{prefix}missing.yaml: does not exist",
    ]
    assert runs(study_project) == []


def test_a_patch_is_validated_with_the_manifest(study_project, cli):
    typo = _overlay(study_project, "typo.yaml", [{"target": "schedule", "patch": {"max_atempts": 2}}])
    result = cli("run", write_study(study_project, overlays=[typo]))
    assert result.exit_code == 1 and "max_atempts" in result.output


def test_an_overlay_is_read_as_strictly_as_a_manifest(study_project, cli):
    """Overlays come from the same untrusted places as manifests, and are read by the same function
    (its size limit included): a repeated key, an alias bomb and a device that never ends each
    become one line, and nothing runs."""
    folder = study_project / "experiments"
    (folder / "twice.yaml").write_text("kind: Overlay\nspec: {overrides: []}\nkind: Overlay\n")
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"] + [
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]" for i in range(7)]
    (folder / "bomb.yaml").write_text("kind: Overlay\nspec: {overrides: []}\n" + "\n".join(bomb) + "\n")
    overlays = ["twice.yaml", "bomb.yaml", "/dev/zero"]
    result = cli("run", write_study(study_project, overlays=overlays))
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 3, lines
    assert "overlay twice.yaml: invalid YAML on line 3: duplicate key 'kind' (first on line 1)" in lines[0]
    assert lines[1].endswith("overlay bomb.yaml: invalid YAML on line 8: holds more than 1000000 values (YAML aliases repeating a large part?)")
    assert lines[2].endswith("overlay /dev/zero: not a regular file")
    assert runs(study_project) == []
