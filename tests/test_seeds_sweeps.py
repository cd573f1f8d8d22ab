"""Seed 000: a manifest without a dataset runs one empty row; schedule sweeps and curves."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from runner_support import all_runs

from evalsite.errors import ManifestError, PlanError
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.plan import build_plan
from evalsite.experiment.sweeps import curve_values
from evalsite.project import find_project


def write_manifest(root, **document) -> str:
    document = {"name": "sw", "arms": [{"id": "a", "target": "none"}], **document}
    (root / "experiments" / "sw.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return "experiments/sw.yaml"


def plan_of(root, **document):
    return build_plan(find_project(root), load_manifest(root / write_manifest(root, **document)))


def test_no_dataset_and_no_rows_runs_one_empty_row_per_config(runner_project, cli):
    (runner_project / "sw_arm.py").write_text("def say(input):\n    return input\n")
    manifest = write_manifest(runner_project, prompt="Say hi, {{ style }}.", arms=[{"id": "a", "target": "python:sw_arm:say"}],
                              sweep={"variables": {"style": ["briefly", "warmly", "formally"]}}, evaluators=[])
    result = cli("run", manifest)
    assert result.exit_code == 0, result.output
    runs = all_runs(runner_project)
    assert len(runs) == 3 and all(len(run.cases) == 1 for run in runs)
    assert sorted(run.cases[0]["output"] for run in runs) == ["Say hi, briefly.", "Say hi, formally.", "Say hi, warmly."]
    assert {run.header.raw["dataset"]["items"] for run in runs} == {1}


def test_schedule_zips_listed_values_trial_by_trial(runner_project):
    plan = plan_of(runner_project, rows=[{"input": "x"}], prompt="{{ input }} {{ style }}",
                   sweep={"mode": "schedule", "variables": {"temperature": [0.0, 0.5, 1.0], "style": ["a", "b", "c"]}})
    assert [(c.params["temperature"], c.prompt_variables["style"]) for c in plan.configs] == [
        (0.0, "a"), (0.5, "b"), (1.0, "c")
    ], "zipped, not crossed (a grid would make 9)"
    assert [c.label for c in plan.configs] == ["a trial=0 temperature=0.0 style=a", "a trial=1 temperature=0.5 style=b",
                                               "a trial=2 temperature=1.0 style=c"]


def test_a_cosine_schedule_gives_the_annealing_values(runner_project):
    n, start, end = 7, 1.0, 0.1
    plan = plan_of(runner_project, rows=[{"input": "x"}], sweep={
        "mode": "schedule", "trials": n, "variables": {"temperature": {"curve": "cosine", "start": start, "end": end}}})
    got = [c.params["temperature"] for c in plan.configs]
    # cosine annealing as usually written: η_t = η_min + ½(η_max − η_min)(1 + cos(π t / T))
    expected = end + 0.5 * (start - end) * (1 + np.cos(np.pi * np.arange(n) / (n - 1)))
    assert got == pytest.approx(expected.tolist(), abs=1e-12)
    assert len({c.config_id for c in plan.configs}) == n


@pytest.mark.parametrize("spec, expected", [
    ({"curve": "linear", "start": 0, "end": 1}, np.linspace(0, 1, 5)),
    ({"curve": "log", "start": 1e-4, "end": 1e-2}, np.geomspace(1e-4, 1e-2, 5)),
    ({"curve": "step", "start": 0, "end": 1, "steps": 2}, [0, 0, 1, 1, 1]),
    ({"curve": "step", "start": 10, "end": 40, "steps": 4}, [10, 20, 30, 40, 40]),
    ({"curve": "linear", "start": 16, "end": 256, "integer": True}, [16, 76, 136, 196, 256]),
])
def test_curves_against_numpy(spec, expected):
    assert curve_values(spec, 5, "x") == pytest.approx(list(expected), rel=1e-12)


def test_a_single_trial_is_at_the_start():
    assert curve_values({"curve": "cosine", "start": 3, "end": 9}, 1, "x") == [3.0]


def test_a_curve_file_under_curves(runner_project):
    (runner_project / "curves").mkdir()
    (runner_project / "curves" / "warmup.yaml").write_text("curve: linear\nstart: 0.2\nend: 0.8\n")
    (runner_project / "curves" / "picked.json").write_text('{"values": ["short", "long", "short"]}')
    plan = plan_of(runner_project, rows=[{"input": "x"}], prompt="{{ input }} {{ length }}", sweep={
        "mode": "schedule", "variables": {"temperature": {"curve": "warmup"}, "length": {"curve": "picked"}}})
    assert [c.params["temperature"] for c in plan.configs] == pytest.approx([0.2, 0.5, 0.8])
    assert [c.prompt_variables["length"] for c in plan.configs] == ["short", "long", "short"]


@pytest.mark.parametrize("sweep, message", [
    ({"mode": "schedule", "variables": {"temperature": [0, 1], "top": [1, 2, 3]}}, "every listed variable gives one value per trial (2 trials; top has 3)"),
    ({"mode": "schedule", "variables": {"temperature": {"curve": "cosine", "start": 1, "end": 0}}}, "sweep.trials: needed when a schedule has only curves"),
    ({"mode": "schedule", "trials": 3, "variables": {"temperature": {"curve": "nosuch"}}}, "curve 'nosuch' is neither built in"),
    ({"mode": "schedule", "trials": 3, "variables": {"temperature": {"curve": "log", "start": 0, "end": 1}}}, "a log curve needs start and end > 0"),
    ({"mode": "schedule", "trials": 3, "variables": {"temperature": {"curve": "linear", "start": 0}}}, "sweep.variables.temperature.end: a linear curve needs a number, got None"),
])
def test_bad_schedules_are_one_line_naming_the_variable(runner_project, sweep, message):
    with pytest.raises(PlanError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan_of(runner_project, rows=[{"input": "x"}], sweep=sweep)


@pytest.mark.parametrize("sweep, problem", [
    ({"mode": "schedule", "seed": 3, "variables": {"temperature": [0, 1]}}, "sweep.seed: only used with mode: random"),
    ({"variables": {"temperature": {"curve": "linear", "start": 0, "end": 1}}}, "sweep.variables.temperature: a curve follows the trials; use mode: schedule"),
    ({"mode": "schedule", "trials": 2, "variables": {"temperature": {"curve": "linear", "strat": 0}}}, "sweep.variables.temperature.strat: unknown key; did you mean 'start'"),
])
def test_manifest_rules_for_schedules(runner_project, sweep, problem):
    with pytest.raises(ManifestError, match=problem):
        load_manifest(runner_project / write_manifest(runner_project, rows=[{"input": "x"}], sweep=sweep))


def test_only_random_mode_reads_the_seed(runner_project, monkeypatch):
    import random

    def refuse(*args, **kwargs):
        raise AssertionError("a schedule drew a random number")

    monkeypatch.setattr(random, "Random", refuse)
    plan = plan_of(runner_project, rows=[{"input": "x"}], sweep={"mode": "schedule", "variables": {"temperature": [0, 1]}})
    assert len(plan.configs) == 2 and math.isfinite(plan.configs[1].params["temperature"])


def test_the_documented_schedule_gives_the_documented_values(runner_project, cli):
    import json
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs/reference/manifest.md").read_text()
    example = re.search(r"```yaml\n(name: temperature-schedule\n.*?)```", page, re.S).group(1)
    (runner_project / "experiments" / "schedule.yaml").write_text(example)
    plan = build_plan(find_project(runner_project), load_manifest(runner_project / "experiments" / "schedule.yaml"))
    assert [round(c.params["temperature"], 3) for c in plan.configs] == [1.0, 0.854, 0.5, 0.146, 0.0]
    assert [c.params["max_tokens"] for c in plan.configs] == [16, 76, 136, 196, 256]
    dry = json.loads(cli("run", "experiments/schedule.yaml", "--dry-run", "--json").output)
    assert dry["total"]["cases"] == 5
