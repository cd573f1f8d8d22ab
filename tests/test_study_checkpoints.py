"""The checkpoint axis: doubled cases, the id on every case and at the target, separate configs."""

from __future__ import annotations

import json
import sys

from study_support import lines, runs, write_study

TARGET = '''
import json

def answer(input, checkpoint):
    with open("seen.log", "a") as log:
        log.write(json.dumps(checkpoint) + "\\n")
    return "ok " + input if checkpoint["id"] == "none" else "resumed " + input
'''

AXIS = [{"id": "none"}, {"id": "after-triage", "path": "checkpoints/after-triage.json"}]


def checkpoint_study(study, **manifest):
    (study / "checkpoints").mkdir()
    (study / "checkpoints/after-triage.json").write_text('{"state": 1}')
    (study / "study_cp.py").write_text(TARGET)
    return write_study(study, items=3, repeat=2, target="python:study_cp:answer", checkpoints=AXIS, **manifest)


def test_two_checkpoints_double_the_cases_and_every_case_records_its_checkpoint(study_project, cli):
    manifest = checkpoint_study(study_project)
    dry = json.loads(cli("run", manifest, "--dry-run", "--json").output)
    assert dry["total"]["cases"] == 2 * 3 * 2
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    fresh, resumed = sorted(runs(study_project), key=lambda run: run.header.raw["config"]["checkpoint"]["id"], reverse=True)
    assert {c["checkpoint"] for c in fresh.cases} == {"none"} and len(fresh.cases) == 6
    assert {c["checkpoint"] for c in resumed.cases} == {"after-triage"} and len(resumed.cases) == 6
    assert fresh.header.raw["config_id"] != resumed.header.raw["config_id"]
    assert resumed.header.raw["config"]["checkpoint"]["path"] == "checkpoints/after-triage.json"
    assert len(resumed.header.raw["config"]["checkpoint"]["sha256"]) == 16
    seen = lines(study_project / "seen.log")
    assert {json.dumps(s, sort_keys=True) for s in seen} == {
        json.dumps({"id": "none", "path": None}, sort_keys=True),
        json.dumps({"id": "after-triage", "path": str((study_project / "checkpoints/after-triage.json").resolve())},
                   sort_keys=True),
    }


def test_the_leaderboard_treats_checkpoints_as_separate_configs(study_project, cli):
    assert cli("run", checkpoint_study(study_project), "--allow-failures").exit_code == 0
    board = json.loads(cli("leaderboard", "--json").output)
    rows = board["arms"]
    assert len(rows) == 2
    by_label = {r["summary"]["arm"]["label"].split()[1]: r["summary"] for r in rows}
    assert by_label["checkpoint.id=none"]["mean"] == 1.0
    assert by_label["checkpoint.id=after-triage"]["mean"] == 0.0
    assert len({s["arm"]["config_id"] for s in by_label.values()}) == 2


def test_an_edited_checkpoint_file_is_another_config(study_project, cli):
    manifest = checkpoint_study(study_project)
    assert cli("run", manifest, "--arm", "a", "--allow-failures").exit_code == 0
    (study_project / "checkpoints/after-triage.json").write_text('{"state": 2}')
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    ids = {r.header.raw["config_id"] for r in runs(study_project) if r.header.raw["config"]["checkpoint"]["id"] != "none"}
    assert len(ids) == 2


def test_a_command_target_gets_the_checkpoint_in_its_json_and_environment(study_project, cli):
    (study_project / "checkpoints").mkdir()
    (study_project / "checkpoints/s.json").write_text("{}")
    script = ("import json, os, sys; d = json.load(sys.stdin); "
              "print(d['checkpoint']['id'] + ' ' + os.environ['EVALSITE_CHECKPOINT_ID'] + ' ' "
              "+ str(os.environ['EVALSITE_CHECKPOINT_PATH'].endswith('s.json')))")
    manifest = write_study(study_project, items=1, checkpoints=[{"id": "s", "path": "checkpoints/s.json"}],
                           arms=[{"id": "c", "target": "command", "settings": {"command": [sys.executable, "-c", script]}}])
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    (run,) = runs(study_project)
    assert run.cases[0]["output"] == "s s True"


def test_bad_checkpoint_axes_are_one_line_each(study_project, cli):
    write_study(study_project, checkpoints=[{"id": "none", "path": "x"}, {"id": "b"}, {"id": "b", "path": "y"}, {"id": "a b"}])
    result = cli("validate")
    assert result.exit_code == 1
    assert "checkpoints[3].id: 'a b' is not allowed: letters, digits, '-' and '_' only; 'none' is a fresh start" in result.output
    write_study(study_project, checkpoints=[{"id": "none", "path": "x"}, {"id": "b"}, {"id": "b", "path": "y"}])
    output = cli("validate").output
    assert "checkpoints[0].path: the 'none' checkpoint is a fresh start and takes no path" in output
    assert "checkpoints[1].path: required for every checkpoint but 'none'" in output
    assert "checkpoints[2].id: duplicate checkpoint id 'b' (also checkpoints[1])" in output
    write_study(study_project, checkpoints=[{"id": "b", "path": "checkpoints/missing.json"}])
    result = cli("run", "experiments/study.yaml", "--dry-run")
    assert result.exit_code == 1
    assert "checkpoints[0].path: checkpoints/missing.json does not exist" in result.output
