"""Numbers from outside: a provider's or a project's NaN, negative or absurd cost and token counts
are case errors, never recorded and never switch off the cost ceiling; manifests refuse NaN/inf and
oversized limits (issue 15, defect 4 and the `concurrency` part of defect 8)."""

from __future__ import annotations

import math
import textwrap

import pytest
from runner_support import only_run, openai_arm, questions, write_experiment

from evalsite.errors import ManifestError
from evalsite.execute.stopping import Budget
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.safety import MAX_CONCURRENCY, MAX_REPEAT
from evalsite.experiment.schema_check import manifest_schema


def test_a_nan_or_negative_billed_cost_is_a_case_error_and_the_ceiling_still_holds(runner_project, server, cli):
    server.script = {"question 0": [{"cost": float("nan")}], "question 1": [{"cost": -1.0}],
                     **{f"question {i}": [{"cost": 0.1}] for i in range(2, 10)}}
    manifest = write_experiment(runner_project, questions(10), [openai_arm(server)])
    result = cli("run", manifest, "--concurrency", "1", "--max-cost", "0.35")
    run = only_run(runner_project)
    by_item = {case["item_id"]: case for case in run.cases}
    assert by_item["q0"]["error"] == "target returned cost_usd=nan; expected a finite number from 0 to 1e+06 or null"
    assert by_item["q1"]["error"] == "target returned cost_usd=-1.0; expected a finite number from 0 to 1e+06 or null"
    assert by_item["q0"]["cost_usd"] is None and by_item["q1"]["cost_usd"] is None
    assert run.footer.raw["status"] == "stopped_cost_ceiling" and len(run.cases) == 6, result.output
    spent = run.footer.raw["cost_ceiling"]["spent_usd"]
    assert math.isfinite(spent) and abs(spent - 0.4) < 1e-9
    assert "NaN" not in (run.directory / "cases.jsonl").read_text() + (run.directory / "end.json").read_text()


def test_a_billed_cost_header_that_is_not_a_finite_number_is_refused(runner_project, server, cli):
    server.script = {"question 0": [{"headers": {"x-litellm-response-cost": "inf"}}]}
    cli("run", write_experiment(runner_project, questions(1), [openai_arm(server)]))
    (case,) = only_run(runner_project).cases
    assert case["error"] == "target returned cost_usd=inf; expected a finite number from 0 to 1e+06 or null"


ARM = '''
def answer(input):
    values = {"a": {"output": "x", "cost_usd": float("nan")},
              "b": {"output": "x", "cost_usd": float("-inf")},
              "c": {"output": "x", "input_tokens": -5},
              "d": {"output": "x", "output_tokens": 10**30},
              "e": {"output": "x", "cost_usd": 0.25, "input_tokens": 3}}
    return values[input]
'''


def test_a_python_target_reporting_unusable_numbers_gets_case_errors(runner_project, cli):
    (runner_project / "num_arm.py").write_text(textwrap.dedent(ARM))
    rows = [{"id": key, "input": key, "expected": "x"} for key in "abcde"]
    cli("run", write_experiment(runner_project, rows, [{"id": "py", "target": "python:num_arm:answer"}]))
    errors = {case["item_id"]: case["error"] for case in only_run(runner_project).cases}
    assert errors == {
        "a": "target returned cost_usd=nan; expected a finite number from 0 to 1e+06 or null",
        "b": "target returned cost_usd=-inf; expected a finite number from 0 to 1e+06 or null",
        "c": "target returned input_tokens=-5; expected a whole number from 0 to 1000000000 or null",
        "d": f"target returned output_tokens={10**30}; expected a whole number from 0 to 1000000000 or null",
        "e": None,
    }


def test_the_budget_never_counts_a_non_finite_cost():
    budget = Budget(limit=1.0)
    assert budget.add(float("nan")) is False and budget.add(-5.0) is False and budget.add(float("inf")) is False
    assert budget.spent == 0.0
    assert budget.add(0.6) is False and budget.add(0.6) is True


@pytest.mark.parametrize("text, message", [
    ("limits:\n  max_cost_usd: .nan\n", "limits.max_cost_usd: must be a finite number, got nan"),
    ("limits:\n  max_cost_usd: .inf\n", "limits.max_cost_usd: must be a finite number, got inf"),
    ("schedule:\n  timeout_s: .inf\n", "schedule.timeout_s: must be a finite number, got inf"),
    ("arms:\n  - {id: a, target: none, price: {input: .nan, output: 1}}\n", "arms[0].price.input: must be a finite number, got nan"),
    ("concurrency: 10000000\n", f"concurrency: must be at most {MAX_CONCURRENCY}, got 10000000"),
    ("repeat: 100000\n", f"repeat: must be at most {MAX_REPEAT}, got 100000"),
    ("schedule:\n  max_attempts: 1000000\n", "schedule.max_attempts: must be at most 100, got 1000000"),
])
def test_manifests_refuse_non_finite_numbers_and_oversized_limits(tmp_path, text, message):
    path = tmp_path / "m.yaml"
    arms = "" if text.startswith("arms") else "arms:\n  - {id: a, target: none}\n"
    path.write_text("name: m\nrows:\n  - {input: q}\n" + arms + text)
    with pytest.raises(ManifestError) as caught:
        load_manifest(path)
    assert f"{path}: {message}" in caught.value.message


def test_the_cli_bounds_match_the_schema_and_refuse_nan(runner_project, server, cli):
    schema = manifest_schema()["properties"]
    assert (schema["concurrency"]["maximum"], schema["repeat"]["maximum"]) == (MAX_CONCURRENCY, MAX_REPEAT)
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)])
    for args in (["--max-cost", "nan"], ["--concurrency", "10000000"], ["--repeat", "100000"]):
        result = cli("run", manifest, *args)
        assert result.exit_code == 2 and "Invalid value" in result.output, result.output
    assert not (runner_project / "runs").exists() or not any((runner_project / "runs").iterdir())
