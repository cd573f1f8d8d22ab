"""The gates (issue 14, defect 8): a run that measured nothing never passes, a first run does not
pass a regression gate silently, and `run` never exits 1 with an empty stderr."""

from __future__ import annotations

import sys

import pytest
from compare_support import run_arm
from example_support import forget_project_modules
from runner_support import write_experiment

from evalsite.execute.outcomes import BatchOutcome, RunOutcome
from evalsite.runlog.records import RunStatus
from evalsite.runlog.totals import RunTotals

CRASH = "def answer(row):\n    raise RuntimeError('target down')\n"
FLAKY = "def answer(row):\n    if row['id'] in {'c0', 'c1', 'c2'}:\n        raise RuntimeError('down')\n    return 'right'\n"
WRONG = "def answer(row):\n    return 'right' if row['id'] != 'c3' else 'wrong'\n"


def rows(count: int = 5) -> list[dict]:
    return [{"id": f"c{i}", "input": "q", "expected": "right"} for i in range(count)]


@pytest.fixture
def targets(runner_project, monkeypatch):
    """``runner_project`` with three gate targets (``gate_crash``, ``gate_flaky``, ``gate_wrong``) importable afresh."""
    for name, source in (("crash", CRASH), ("flaky", FLAKY), ("wrong", WRONG)):
        (runner_project / f"gate_{name}.py").write_text(source)
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("crash", "flaky", "wrong"):
        forget_project_modules(f"gate_{name}")
    yield runner_project
    for name in ("crash", "flaky", "wrong"):
        forget_project_modules(f"gate_{name}")


def test_an_arm_whose_every_case_crashed_fails_run_even_with_allow_failures(targets, cli):
    manifest = write_experiment(targets, rows(), [{"id": "down", "target": "python:gate_crash:answer"}])
    result = cli("run", manifest, "--allow-failures")
    assert result.exit_code == 1
    assert ("failed: down: 5 of 5 cases failed to generate (100%): a run with no successful case measured nothing, "
            "whatever [ci] max_error_rate says; --allow-failures does not accept it") in result.stderr


def test_max_error_rate_sets_how_many_failed_generations_allow_failures_accepts(targets, cli):
    manifest = write_experiment(targets, rows(), [{"id": "flaky", "target": "python:gate_flaky:answer"}])
    three_of_five = cli("run", manifest, "--allow-failures")
    assert three_of_five.exit_code == 1 and "failed: flaky: 3 of 5 cases failed to generate (60%" in three_of_five.stderr
    (targets / "evalsite.toml").write_text("[ci]\nmax_error_rate = 0.7\n")
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    (targets / "evalsite.toml").write_text("[ci]\nmax_error_rate = 'lots'\n")
    refused = cli("run", manifest, "--allow-failures")
    assert refused.exit_code == 1 and "evalsite.toml: [ci] max_error_rate: needs a number" in refused.stderr


def test_run_exits_1_with_one_line_per_reason_never_an_empty_stderr(targets, cli):
    manifest = write_experiment(targets, rows(), [{"id": "wrong", "target": "python:gate_wrong:answer"}])
    result = cli("run", manifest)
    assert result.exit_code == 1
    assert "failed: wrong: pass rule failed: exact (passed 4 of 5) (--allow-failures accepts it)" in result.stderr
    assert cli("run", manifest, "--allow-failures").exit_code == 0


def outcome(arm: str, *, cases: int = 10, errors: int = 0, passed: bool | None = True, critical=(),
            status: RunStatus = RunStatus.COMPLETED) -> RunOutcome:
    summary = {"cases": cases, "errors": errors, "passed": passed, "critical_failures": list(critical),
               "evaluators": {"exact": {"n": cases, "pass_rate": 0.5, "passed": passed}}}
    return RunOutcome(f"run-{arm}", arm, status, RunTotals.from_json(summary, "summary"))


def test_every_reason_names_its_arm_and_allow_failures_accepts_only_the_tolerable_ones():
    batch = BatchOutcome(
        [outcome("ok"), outcome("some", errors=2), outcome("rule", passed=False), outcome("crit", critical=["q1"]),
         outcome("half", errors=5), outcome("stopped", status=RunStatus.STOPPED_COST_CEILING)],
        ["late"], RunStatus.STOPPED_COST_CEILING, 1.0, 1.0,
    )
    strict = batch.failure_reasons(allow_failures=False)
    assert [reason.split(":")[0] for reason in strict] == ["late", "some", "rule", "crit", "half", "stopped"]
    lenient = batch.failure_reasons(allow_failures=True)
    assert [reason.split(":")[0] for reason in lenient] == ["late", "crit", "stopped"]
    assert batch.failure_reasons(allow_failures=True, max_error_rate=0.4)[2].startswith("half: 5 of 10 cases")
    assert not BatchOutcome([outcome("ok")], [], None, None, 0.0).failure_reasons(allow_failures=False)


def test_compare_fail_on_regression_without_a_baseline_fails_unless_allowed(golden_project, cli):
    only = run_arm(cli, golden_project)
    result = cli("compare", only, "--fail-on", "regression")
    assert result.exit_code == 1
    assert "gate: fail: no baseline to compare with" in result.stderr
    assert cli("compare", only, "--fail-on", "regression", "--allow-missing-baseline").exit_code == 0
    assert cli("compare", only).exit_code == 0  # without the gate, "no prior run" is a report
