"""Real ``evalsite run`` processes: killed with SIGKILL, interrupted with SIGINT, run side by side."""

from __future__ import annotations

import shlex
import signal
from collections import Counter
from pathlib import Path

from runner_support import only_run, openai_arm, questions, start_run, wait_for_cases, write_experiment

from evalsite.runlog.store import CASES_FILE, END_FILE, read_attempts, read_cases, run_directories

ITEMS = 40


def case_keys(directory: Path) -> Counter:
    return Counter((c["item_id"], c["repeat"]) for c in read_cases(directory / CASES_FILE))


def test_sigkill_mid_run_then_resume_records_every_case_once(runner_project, server, cli):
    server.delay = 0.1
    manifest = write_experiment(runner_project, questions(ITEMS), [openai_arm(server)])
    process = start_run(runner_project, manifest, "--concurrency", "4")
    directory = wait_for_cases(runner_project, 8, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = case_keys(directory)
    assert not (directory / END_FILE).exists() and 8 <= len(before) < ITEMS

    result = cli("run", manifest, "--concurrency", "4", "--resume", directory.name)
    assert result.exit_code == 0, result.output
    assert case_keys(directory) == Counter({(f"q{i}", 0): 1 for i in range(ITEMS)})
    called = Counter(call.content for call in server.calls)
    # nothing recorded before the kill was called again; only calls in flight at the kill repeat
    assert all(called[f"question {item[1:]}"] == 1 for item, _ in before)
    assert sum(called.values()) - ITEMS <= 4 and max(called.values()) <= 2
    assert read_attempts(directory)[0]["previous"] == {"status": "interrupted"}
    assert only_run(runner_project).footer.status == "completed"


def test_sigint_cancels_cooperatively_and_prints_the_resume_line(runner_project, server, cli):
    server.delay = 0.1
    manifest = write_experiment(runner_project, questions(ITEMS), [openai_arm(server)])
    process = start_run(runner_project, manifest, "--concurrency", "4")
    directory = wait_for_cases(runner_project, 5, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 1, stderr
    assert "Traceback" not in stderr
    run = only_run(runner_project)
    assert run.footer.status == "canceled"
    # calls in flight at Ctrl-C were allowed to finish and were recorded: every call made is on disk
    assert len(server.calls) == len(run.cases) < ITEMS
    line = stderr.split("to continue, run:\n")[1].strip()
    assert line == f"evalsite run {manifest} --concurrency 4 --resume {directory.name}"

    assert cli(*shlex.split(line)[1:]).exit_code == 0
    assert case_keys(directory) == Counter({(f"q{i}", 0): 1 for i in range(ITEMS)})
    assert Counter(call.content for call in server.calls) == Counter({f"question {i}": 1 for i in range(ITEMS)})


def test_two_processes_on_one_project_write_separate_whole_runs(runner_project, server):
    server.delay = 0.01
    manifest = write_experiment(runner_project, questions(ITEMS), [openai_arm(server)])
    processes = [start_run(runner_project, manifest, "--concurrency", "8") for _ in range(2)]
    for process in processes:
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr
    directories = run_directories(runner_project / "runs")
    assert len(directories) == 2
    for directory in directories:
        assert case_keys(directory) == Counter({(f"q{i}", 0): 1 for i in range(ITEMS)})
        assert (directory / END_FILE).exists()
