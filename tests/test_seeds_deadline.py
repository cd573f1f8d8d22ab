"""Whole-experiment timeout (seed 003): the batch stops at its deadline, timed_out, resumable."""

from __future__ import annotations

import shlex

import pytest
from runner_support import all_runs, only_run, questions, write_experiment

from evalsite.execute.stopping import parse_duration

SLOW = "import time\n\ndef echo(input):\n    time.sleep(0.3)\n    return 'echo: ' + input\n"


def resume_lines(output: str) -> list[str]:
    lines = output.splitlines()
    return [line.strip() for line in lines[lines.index("to continue, run:") + 1:] if line.startswith("  evalsite ")]


def test_run_timeout_stops_timed_out_and_the_resume_line_completes_the_rest(runner_project, cli):
    (runner_project / "slow_arm.py").write_text(SLOW)
    manifest = write_experiment(runner_project, questions(12), [{"id": "slow", "target": "python:slow_arm:echo"}],
                                concurrency=1)
    result = cli("run", manifest, "--timeout", "1s")
    assert result.exit_code == 1
    run = only_run(runner_project)
    assert run.footer.raw["status"] == "timed_out"
    assert 0 < len(run.cases) < 12 and run.header.raw["schedule"]["deadline_s"] == 1.0
    assert "timed out: every case that finished is on disk" in result.output
    (line,) = resume_lines(result.output)
    assert line == f"evalsite run {manifest} --resume {run.run_id}", "the spent deadline is not repeated"

    resumed = cli(*shlex.split(line)[1:])
    assert resumed.exit_code == 0, resumed.output
    run = only_run(runner_project)
    assert run.footer.raw["status"] == "completed"
    assert sorted(c["item_id"] for c in run.cases) == sorted(f"q{i}" for i in range(12))


def test_limits_timeout_s_stops_the_batch_and_arms_not_started_get_a_line(runner_project, cli):
    (runner_project / "slow_arm2.py").write_text(SLOW)
    arms = [{"id": "first", "target": "python:slow_arm2:echo"}, {"id": "second", "target": "python:slow_arm2:echo"}]
    manifest = write_experiment(runner_project, questions(12), arms, concurrency=1, limits={"timeout_s": 1})
    result = cli("run", manifest)
    assert result.exit_code == 1
    (run,) = all_runs(runner_project)
    assert (run.header.raw["arm_id"], run.footer.raw["status"]) == ("first", "timed_out")
    lines = resume_lines(result.output)
    assert lines == [f"evalsite run {manifest} --resume {run.run_id}", f"evalsite run {manifest} --arm second"]


@pytest.mark.parametrize("text, seconds", [("90", 90), ("2s", 2), ("30m", 1800), ("1.5h", 5400), (" 10 s ", 10)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "-1s", "5d", "soon", "1m30s"])
def test_bad_durations_are_refused_naming_the_value(text, runner_project, cli):
    result = cli("run", "experiments/none.yaml", "--timeout", text)
    assert result.exit_code == 2 and f"{text!r} is not a duration" in result.output
