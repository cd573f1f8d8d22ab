"""Model slots: models.main / models.judge fill what names no model; an explicit model wins."""

from __future__ import annotations

import json

from runner_support import openai_arm
from study_support import runs, write_study

from evalsite.experiment.manifest import load_manifest
from evalsite.scoring.evaluators import build_evaluators

TARGET = '''
def echo_model(input, params):
    return "ok " + input if params.get("model") else "no model"

def model_of(input, params):
    return params.get("model")
'''


def test_arms_without_a_model_take_models_main_and_the_resolved_config_pins_it(study_project, cli):
    (study_project / "study_models.py").write_text(TARGET)
    manifest = write_study(study_project, items=1, models={"main": "big-model", "judge": "judge-model"}, arms=[
        {"id": "slot", "target": "python:study_models:model_of"},
        {"id": "any", "target": "python:study_models:model_of", "params": {"model": "any", "v": 1}},
        {"id": "own", "target": "python:study_models:model_of", "params": {"model": "small-model"}},
    ])
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    by_arm = {run.header.raw["arm_id"]: run for run in runs(study_project)}
    assert {arm: run.cases[0]["output"] for arm, run in by_arm.items()} == {
        "slot": "big-model", "any": "big-model", "own": "small-model"}
    assert by_arm["slot"].header.raw["config"]["params"]["model"] == "big-model"
    assert by_arm["slot"].header.raw["config"]["model_slot"] == "main"
    assert "model_slot" not in by_arm["own"].header.raw["config"]


def test_changing_the_slot_changes_the_config(study_project, cli):
    (study_project / "study_models.py").write_text(TARGET)
    manifest = write_study(study_project, items=1, models={"main": "m1"}, arms=[{"id": "a", "target": "python:study_models:model_of"}])
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    assert cli("run", manifest, "--allow-failures", "--set", "models.main=m2").exit_code == 0
    first, second = runs(study_project)
    assert first.header.raw["config_id"] != second.header.raw["config_id"]
    assert [first.cases[0]["output"], second.cases[0]["output"]] == ["m1", "m2"]


def test_a_bare_openai_arm_sends_the_slot_model(study_project, server, cli):
    arm = openai_arm(server)
    arm["target"] = "openai"
    manifest = write_study(study_project, items=1, models={"main": "slot-model"}, arms=[arm])
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    assert [call.body["model"] for call in server.calls] == ["slot-model"]
    (run,) = runs(study_project)
    assert run.header.raw["fingerprint"]["target"]["model"] == "slot-model"


def test_model_any_without_a_slot_is_one_line(study_project, cli):
    write_study(study_project, arms=[{"id": "a", "target": "python:study_target:answer", "params": {"model": "any"}}])
    result = cli("validate")
    assert result.exit_code == 1
    assert "arms[0].params.model: 'any' takes models.main, which is not set" in result.output


def test_judges_take_models_judge_unless_they_name_a_model(study_project):
    path = write_study(study_project, models={"main": "big", "judge": "judge-model"}, evaluators=[
        {"type": "llm_judge", "name": "slot", "judge": "python:study_target:answer"},
        {"type": "llm_judge", "name": "own", "judge": {"target": "python:study_target:answer", "params": {"model": "mine"}}},
    ])
    evaluators = build_evaluators(load_manifest(study_project / path).evaluators, study_project)
    assert {e.name: e.describe()["judge"]["model"] for e in evaluators} == {"slot": "judge-model", "own": "mine"}
    json.dumps([e.describe() for e in evaluators])
