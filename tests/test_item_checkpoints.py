"""An item's own ``inputs.checkpoint.load``: given to the target without an axis, overridden by a
checkpoint axis with a warning."""

from __future__ import annotations

from example_support import REPO
from study_support import runs, write_study

TARGET = '''
def started_from(input, checkpoint=None):
    if checkpoint is None or checkpoint["path"] is None:  # no checkpoint, or the axis's fresh start
        return "fresh"
    return checkpoint["id"] + " " + open(checkpoint["path"]).read()
'''
ROWS = [{"id": "q0", "input": "x0", "expected": "?", "inputs": {"checkpoint": {"load": "states/q0.json"}}},
        {"id": "q1", "input": "x1", "expected": "?"}]


def _project(root) -> None:
    (root / "states").mkdir()
    (root / "states/q0.json").write_text("{q0 state}")
    (root / "warm.json").write_text("{warm}")
    (root / "starts.py").write_text(TARGET)


def test_without_an_axis_each_item_starts_from_its_own_checkpoint(study_project, cli):
    _project(study_project)
    manifest = write_study(study_project, rows=ROWS, target="python:starts:started_from")
    result = cli("run", manifest, "--allow-failures")
    assert result.exit_code == 0 and "overrides" not in result.output
    (run,) = runs(study_project)
    by_item = {c["item_id"]: c for c in run.cases}
    assert by_item["q0"]["output"] == "states/q0.json {q0 state}" and by_item["q0"]["checkpoint"] == "states/q0.json"
    assert by_item["q1"]["output"] == "fresh" and "checkpoint" not in by_item["q1"]


def test_a_checkpoint_axis_overrides_the_items_own_and_warns(study_project, cli):
    _project(study_project)
    manifest = write_study(study_project, rows=ROWS, target="python:starts:started_from",
                           checkpoints=[{"id": "none"}, {"id": "warm", "path": "warm.json"}])
    result = cli("run", manifest, "--allow-failures")
    assert result.exit_code == 0
    assert ("the checkpoint axis overrides the inputs.checkpoint.load of 1 item(s) (q0): their cases start "
            "from each axis checkpoint instead") in result.output
    documented = " ".join((REPO / "docs/reference/manifest.md").read_text().split())
    assert ("`the checkpoint axis overrides the inputs.checkpoint.load of 1 item(s) (q0): their cases start "
            "from each axis checkpoint instead`") in documented
    outputs = sorted((c["item_id"], c["checkpoint"], c["output"]) for run in runs(study_project) for c in run.cases)
    assert outputs == [("q0", "none", "fresh"), ("q0", "warm", "warm {warm}"),
                       ("q1", "none", "fresh"), ("q1", "warm", "warm {warm}")]


def test_a_missing_item_checkpoint_is_one_line_before_anything_runs(study_project, cli):
    _project(study_project)
    rows = [{**ROWS[0], "inputs": {"checkpoint": {"load": "states/gone.json"}}}]
    result = cli("run", write_study(study_project, rows=rows, target="python:starts:started_from"))
    assert result.exit_code == 1
    assert "item 'q0': inputs.checkpoint.load: states/gone.json does not exist" in result.output
    assert runs(study_project) == []
