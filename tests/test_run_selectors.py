"""``evalsite run --item / --scenario / --depth``: which items, which arms, how far out post steps run."""

from __future__ import annotations

from example_support import REPO
from study_support import lines, runs, write_study


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("Error:")]


def test_item_runs_only_the_named_items_in_dataset_order(study_project, cli):
    manifest = write_study(study_project, items=4, repeat=2)
    # one case at a time: cases.jsonl keeps completion order, so only then is the file the plan's order
    assert cli("run", manifest, "--item", "q2", "--item", "q0", "--concurrency", "1").exit_code == 0
    (run,) = runs(study_project)
    assert [(c["item_id"], c["repeat"]) for c in run.cases] == [("q0", 0), ("q0", 1), ("q2", 0), ("q2", 1)]
    assert sorted(c["input"] for c in lines(study_project / "calls.log")) == ["x0", "x0", "x2", "x2"]
    assert run.header.dataset.items == 2  # a subset, with its own dataset id (as dataset.limit gives)
    assert cli("run", manifest).exit_code == 0
    assert runs(study_project)[1].header.dataset.dataset_id != run.header.dataset.dataset_id


def test_an_unknown_item_is_one_line_naming_it_and_nothing_runs(study_project, cli):
    manifest = write_study(study_project)
    result = cli("run", manifest, "--item", "q1", "--item", "q7")
    assert result.exit_code == 1
    assert _error_lines(result.output) == [
        "Error: experiments/study.yaml: --item 'q7': no such item (items: q0, q1, q2)"]
    assert runs(study_project) == [] and not (study_project / "calls.log").exists()
    assert f"`{_error_lines(result.output)[0]}`" in (REPO / "docs/reference/commands/run.md").read_text()  # as documented


def test_scenario_names_an_arm(study_project, cli):
    manifest = write_study(study_project, arms=[{"id": "a", "target": "python:study_target:answer"},
                                                 {"id": "b", "target": "python:study_target:answer"}])
    assert cli("run", manifest, "--scenario", "b").exit_code == 0
    assert [run.header.arm_id for run in runs(study_project)] == ["b"]
    result = cli("run", manifest, "--scenario", "c")
    assert result.exit_code == 1 and _error_lines(result.output) == [
        "Error: experiments/study.yaml: unknown arm 'c' (arms: a, b)"]


def test_depth_keeps_post_steps_of_outer_levels_from_running(study_project, cli):
    note = [{"name": "note", "run": "python:study_steps:note"}]
    manifest = write_study(study_project, items=2, hooks={level: {"post": note} for level in ("experiment", "arm", "item", "case")})
    assert cli("run", manifest, "--depth", "item").exit_code == 0
    assert sorted({e["level"] for e in lines(study_project / "steps.log")}) == ["case", "item"]
    assert not (study_project / "results").exists()  # the experiment's post did not run, nor write its end.json
    (study_project / "steps.log").unlink()
    assert cli("run", manifest).exit_code == 0  # the default: every level
    assert sorted({e["level"] for e in lines(study_project / "steps.log")}) == ["arm", "case", "experiment", "item"]
    refused = cli("run", manifest, "--depth", "scenario")
    assert refused.exit_code == 2 and "'scenario' is not one of 'experiment', 'arm', 'item', 'case'" in refused.output


def test_schedule_runner_picks_the_executor_unless_executor_says(study_project, cli):
    manifest = write_study(study_project, schedule={"runner": "ray"})
    refused = cli("run", manifest, "-o", "out.junit.xml")  # the ray executor has no cases to write as JUnit
    assert refused.exit_code == 1 and _error_lines(refused.output) == [
        "Error: out.junit.xml: run --executor ray has no test cases to write as JUnit XML; use .json, .csv, .md or .html"]
    assert cli("run", manifest, "--executor", "local", "-o", "out.junit.xml").exit_code == 0
    assert (study_project / "out.junit.xml").is_file() and len(runs(study_project)) == 1
    wrong = cli("run", write_study(study_project, schedule={"runner": "slurm"}))
    assert wrong.exit_code == 1 and "schedule.runner" in wrong.output
