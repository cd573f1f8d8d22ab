"""``evalsite show`` reads a large finished run, its cases as written, as columns (DuckDB) rather than
one Python object a case: the same figures and errors as reading every case line, and a run whose
cases changed since it was written (a bad line to warn about) is still read line by line."""

from __future__ import annotations

import json
import random
from statistics import fmean

import pytest

from evalsite.analysis import run_views
from evalsite.analysis.run_views import run_overview
from evalsite.analysis.summary import summarise_run
from evalsite.project import Project
from evalsite.runlog.store import CASES_FILE, RunWriter

EVALUATORS = ("exact", "judge")


def score_of(rng: random.Random, evaluator: str) -> dict:
    roll = rng.random()
    if roll < 0.05:
        return {"evaluator": evaluator, "version": "1", "score": None, "passed": False, "error": rng.choice(["boom", "timeout\nat line 3"])}
    if roll < 0.1:
        return {"evaluator": evaluator, "version": "1", "score": None, "passed": None, "skipped": True}
    value = rng.choice([0.0, 0.25, 0.5, 1.0])
    return {"evaluator": evaluator, "version": "1", "score": value, "passed": value >= 0.5 if evaluator == "exact" else None}


def write_run(root, seed: int, *, critical: bool = True) -> str:
    """A finished run of 40 items × 3 repeats: failed generations, errored and skipped scores,
    critical rows (or no critical flag at all), latency, cost and tokens."""
    rng = random.Random(seed)
    cases = []
    for item in range(40):
        for repeat in range(3):
            scores = [score_of(rng, name) for name in EVALUATORS if rng.random() < 0.95]
            values = [s["score"] for s in scores if s["score"] is not None]
            verdicts = [s["passed"] for s in scores if s["passed"] is not None]
            case = {
                "item_id": f"q{item}", "item_sha": f"s{item}", "repeat": repeat, "input": f"Q{item}", "expected": "x",
                "output": rng.choice(["x", "y"]), "error": rng.choice([None] * 20 + ["rate limited", "HTTP 500: upstream"]),
                "latency_ms": rng.uniform(5, 500), "cost_usd": rng.choice([None, 1e-5, 3e-4]),
                "input_tokens": rng.randrange(1, 90), "output_tokens": rng.randrange(1, 40), "scores": scores,
                "score": fmean(values) if values else None, "passed": all(verdicts) if verdicts else None,
            }
            if critical:
                case["critical"] = item % 7 == 0
            cases.append(case)
    writer = RunWriter.create(root / "runs", "main", {"arm_id": "main", "dataset": {"path": "d.jsonl", "dataset_id": "d@0"}})
    for case in cases:
        writer.append_case(case)
    writer.finish({"status": "completed", "totals": summarise_run(cases).totals().to_json()})
    return writer.run_id


def overview(project: Project, run_id: str, monkeypatch, *, columns: bool) -> dict:
    read = []
    monkeypatch.setattr(run_views, "COLUMNAR_MIN_BYTES", 0 if columns else 1 << 60)
    monkeypatch.setattr(run_views, "_columns_overview", lambda *a: read.append(a) or columns_overview(*a))
    found = run_overview(project, run_id)
    assert bool(read) == columns, "read as columns only when asked and vouched"
    return {**found.to_json(), "warnings": found.warnings}


columns_overview = run_views._columns_overview


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("critical", [True, False])
def test_columns_give_the_figures_and_errors_of_every_case_read(tmp_path, monkeypatch, seed, critical):
    project = Project(tmp_path)
    run_id = write_run(tmp_path, seed, critical=critical)
    by_lines = overview(project, run_id, monkeypatch, columns=False)
    assert by_lines["top_errors"] and by_lines["errors"] and by_lines["skipped"], "the run has all of them"
    assert overview(project, run_id, monkeypatch, columns=True) == by_lines


def test_a_run_whose_cases_changed_is_read_line_by_line_with_its_warning(tmp_path, monkeypatch):
    project = Project(tmp_path)
    run_id = write_run(tmp_path, 4)
    with open(tmp_path / "runs" / run_id / CASES_FILE, "a") as cases:
        cases.write("{not json\n")
    monkeypatch.setattr(run_views, "COLUMNAR_MIN_BYTES", 0)
    found = run_overview(project, run_id)
    assert found.summary.cases == 120 and any("line 121" in warning for warning in found.warnings), found.warnings
    assert json.loads(json.dumps(found.to_json()))["cases"] == 120


def test_a_large_run_is_shown_without_its_texts_its_errors_read_from_their_lines(tmp_path, monkeypatch):
    """The texts (inputs, outputs, …) are most of a large run's bytes: only the lines of the cases
    whose columns flag an error are read again."""
    from evalsite.analysis import case_scan

    project = Project(tmp_path)
    run_id = write_run(tmp_path, 4)
    by_lines = overview(project, run_id, monkeypatch, columns=False)
    cases_file = next((tmp_path / "runs").glob(f"{run_id}*")) / CASES_FILE
    lines = [json.loads(line) for line in cases_file.read_text().splitlines()]
    assert any(line["error"] for line in lines)

    def no_texts(*args, **kwargs):
        raise AssertionError("the texts were read")

    monkeypatch.setattr(case_scan, "texts_from_arrow", no_texts)
    assert overview(project, run_id, monkeypatch, columns=True) == by_lines, "the errors read from their lines"
