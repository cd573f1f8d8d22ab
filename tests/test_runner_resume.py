"""Cost ceiling and ``--resume``: stop, print the exact line, continue without paying twice."""

from __future__ import annotations

import json
import shlex
from collections import Counter

from runner_support import all_runs, only_run, questions, write_experiment

from evalsite.runlog.store import CASES_FILE, END_FILE, RunWriter, read_attempts

COUNTED = """
import json

def answer(input, row, repeat, params):
    with open("calls.log", "a") as log:
        log.write(f"{row['id']}#{repeat}\\n")
    return {"output": "echo: " + input, "cost_usd": params.get("cost", 0.1)}
"""


def counted_arm(project, arm_id: str = "paid", **extra) -> dict:
    (project / "pt_counted.py").write_text(COUNTED)
    return {"id": arm_id, "target": "python:pt_counted:answer", **extra}


def calls(project) -> Counter:
    log = project / "calls.log"
    return Counter(log.read_text().split()) if log.exists() else Counter()


def printed_commands(stderr: str) -> list[list[str]]:
    """The command lines printed under 'to continue, run:', as argument lists for the CLI."""
    lines = stderr.split("to continue, run:\n", 1)[1].splitlines()
    return [shlex.split(line)[1:] for line in lines if line.startswith("  evalsite ")]


def keys(run) -> Counter:
    return Counter((c["item_id"], c["repeat"]) for c in run.cases)


def test_the_ceiling_stops_new_calls_and_the_printed_line_resumes(runner_project, cli):
    manifest = write_experiment(runner_project, questions(10), [counted_arm(runner_project)])
    result = cli("run", manifest, "--concurrency", "1", "--max-cost", "0.35")
    assert result.exit_code == 1
    run = only_run(runner_project)
    assert run.footer.status == "stopped_cost_ceiling" and len(run.cases) == 4
    assert run.footer.cost_ceiling["spent_usd"] >= 0.35
    (line,) = printed_commands(result.stderr)
    assert line == ["run", manifest, "--concurrency", "1", "--max-cost", "0.35", "--resume", run.run_id]

    while True:  # each resume may spend up to the ceiling again
        result = cli(*line)
        if only_run(runner_project).footer.status == "completed":
            break
        assert only_run(runner_project).footer.status == "stopped_cost_ceiling"
    assert result.exit_code == 0
    run = only_run(runner_project)
    assert keys(run) == Counter({(f"q{i}", 0): 1 for i in range(10)})
    assert calls(runner_project) == Counter({f"q{i}#0": 1 for i in range(10)})
    assert [a["previous"]["status"] for a in read_attempts(run.directory)] == ["stopped_cost_ceiling"] * 2
    assert run.footer.totals.cases == 10 and abs(run.footer.totals.cost_usd - 1.0) < 1e-9


def test_env_var_and_manifest_ceilings_and_which_wins(runner_project, cli, monkeypatch):
    arm = counted_arm(runner_project)
    manifest = write_experiment(runner_project, questions(6), [arm], limits={"max_cost_usd": 0.15})
    cli("run", manifest, "--concurrency", "1")
    assert len(only_run(runner_project).cases) == 2  # limits.max_cost_usd
    monkeypatch.setenv("EVALSITE_MAX_COST_USD", "0.25")
    manifest = write_experiment(runner_project, questions(6), [arm], name="env", limits={"max_cost_usd": 0.15})
    result = cli("run", manifest, "--concurrency", "1")
    env_run = next(r for r in all_runs(runner_project) if r.header.experiment == "env")
    assert len(env_run.cases) == 3  # the environment beats the manifest
    assert "--max-cost 0.25" in result.stderr
    manifest = write_experiment(runner_project, questions(6), [arm], name="flag", limits={"max_cost_usd": 0.15})
    cli("run", manifest, "--concurrency", "1", "--max-cost", "0.45")
    flag_run = next(r for r in all_runs(runner_project) if r.header.experiment == "flag")
    assert len(flag_run.cases) == 5  # the flag beats both


def test_a_batch_stopped_at_the_ceiling_names_the_arms_it_never_started(runner_project, cli):
    arms = [counted_arm(runner_project, "first"), counted_arm(runner_project, "second"), counted_arm(runner_project, "third")]
    manifest = write_experiment(runner_project, questions(4), arms)
    result = cli("run", manifest, "--concurrency", "1", "--max-cost", "0.2")
    (run,) = all_runs(runner_project)
    resume, remaining = printed_commands(result.stderr)
    assert resume == ["run", manifest, "--concurrency", "1", "--max-cost", "0.2", "--resume", run.run_id]
    assert remaining == ["run", manifest, "--concurrency", "1", "--max-cost", "0.2", "--arm", "second", "--arm", "third"]
    assert json.loads(cli("run", manifest, "--resume", run.run_id, "--json").stdout)[0]["status"] == "completed"
    assert cli(*remaining[:-4], "--max-cost", "10", *remaining[-4:]).exit_code == 0
    assert sorted(r.header.arm_id for r in all_runs(runner_project)) == ["first", "second", "third"]
    assert calls(runner_project) == Counter({f"q{i}#0": 3 for i in range(4)})


def interrupted_run(project, cli, manifest: str, keep_lines: int, torn: str | None = None):
    """A finished run turned into one that crashed after ``keep_lines`` cases (and half a line)."""
    assert cli("run", manifest, "--repeat", "2").exit_code == 0
    run = only_run(project)
    lines = (run.directory / CASES_FILE).read_text().splitlines(keepends=True)
    (run.directory / CASES_FILE).write_text("".join(lines[:keep_lines]) + (torn or ""))
    (run.directory / END_FILE).unlink()
    (project / "calls.log").unlink()
    return run


def test_resume_repairs_a_torn_line_and_runs_only_what_is_missing(runner_project, cli):
    manifest = write_experiment(runner_project, questions(5), [counted_arm(runner_project)])
    run = interrupted_run(runner_project, cli, manifest, keep_lines=6, torn='{"item_id": "q3", "repe')
    recorded = keys(only_run(runner_project))
    assert len(recorded) == 6
    result = cli("run", manifest, "--repeat", "2", "--resume", run.run_id[:22])
    assert result.exit_code == 0, result.output
    resumed = only_run(runner_project)
    assert keys(resumed) == Counter({(f"q{i}", r): 1 for i in range(5) for r in range(2)})
    assert sum(calls(runner_project).values()) == 4
    assert not set(calls(runner_project)) & {f"{item}#{repeat}" for item, repeat in recorded}
    assert all(line.endswith("}") for line in (resumed.directory / CASES_FILE).read_text().splitlines())
    assert read_attempts(resumed.directory)[0]["previous"] == {"status": "interrupted"}


def test_resume_refuses_when_the_fingerprint_changed_and_names_the_fields(runner_project, cli):
    manifest = write_experiment(runner_project, questions(3), [counted_arm(runner_project, params={"cost": 0.1})])
    run = interrupted_run(runner_project, cli, manifest, keep_lines=2)
    write_experiment(runner_project, questions(3), [counted_arm(runner_project, params={"cost": 0.2})])
    result = cli("run", manifest, "--repeat", "2", "--resume", run.run_id)
    assert result.exit_code == 1
    message = result.output.strip()
    assert message.startswith(f"Error: cannot resume {run.run_id}: what its numbers depend on changed (")
    assert "fingerprint.config.params.cost: 0.1 → 0.2; fingerprint.config_id: " in message
    assert message.endswith("; start a new run instead") and len(message.splitlines()) == 1
    result = cli("run", write_experiment(runner_project, questions(3), [counted_arm(runner_project, params={"cost": 0.1})]),
                 "--resume", run.run_id)
    assert "(plan.cases: 6 → 3; plan.repeat: 2 → 1)" in result.output
    assert not (run.directory / END_FILE).exists() and len(keys(only_run(runner_project))) == 2


def test_resume_refuses_a_completed_run_a_locked_run_and_another_arm(runner_project, cli):
    manifest = write_experiment(runner_project, questions(2), [counted_arm(runner_project, "a"), counted_arm(runner_project, "b")])
    cli("run", manifest, "--arm", "a")
    (run,) = all_runs(runner_project)
    assert cli("run", manifest, "--resume", run.run_id).output.strip() == (
        f"Error: run {run.run_id} is completed; there is nothing to resume"
    )
    assert "its arm 'a' is not among the arms this command runs (b)" in cli(
        "run", manifest, "--arm", "b", "--resume", run.run_id).output
    (run.directory / END_FILE).unlink()
    holder = RunWriter.reopen(run.directory, {"test": "holds the lock"})
    try:
        result = cli("run", manifest, "--resume", run.run_id)
        assert result.output.strip() == f"Error: run {run.run_id} is being written by another evalsite process"
    finally:
        holder.close()


def test_a_zero_ceiling_stops_after_the_first_paid_case_and_stays_in_the_line(runner_project, cli):
    manifest = write_experiment(runner_project, questions(3), [counted_arm(runner_project)])
    result = cli("run", manifest, "--concurrency", "1", "--max-cost", "0")
    run = only_run(runner_project)
    assert len(run.cases) == 1 and run.footer.status == "stopped_cost_ceiling"
    assert printed_commands(result.stderr) == [["run", manifest, "--concurrency", "1", "--max-cost", "0.0",
                                                "--resume", run.run_id]]
