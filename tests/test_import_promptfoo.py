"""``evalsite import promptfoo`` on the files promptfoo 0.121.20 wrote (see fixtures/external/README.md)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from import_support import ALL_PASS, PROMPTFOO, pass_rate, read_jsonl, runs_by_arm, write_jsonl

ASSERTION_PASSES = {  # README: namedScores sums exact / contains_expected / format
    "model-a": {"exact": 17, "contains_expected": 17, "format": 24},
    "model-b": {"exact": 10, "contains_expected": 17, "format": 14},
}
WEIGHTED_SCORE = {"model-a": 20.5 / 24, "model-b": 13.75 / 24}


def assert_matches_promptfoo(runs):
    assert sorted(runs) == ["model-a", "model-b"]
    for arm, run in runs.items():
        assert run.status == "completed"
        assert len(run.cases) == 24
        assert all(len(case["scores"]) == 3 for case in run.cases)
        assert pass_rate(run) == pytest.approx(ALL_PASS[arm])
        passes = Counter(s["evaluator"] for c in run.cases for s in c["scores"] if s["passed"])
        assert dict(passes) == ASSERTION_PASSES[arm]
        assert sum(c["score"] for c in run.cases) / 24 == pytest.approx(WEIGHTED_SCORE[arm])


def test_results_json_gives_one_run_per_provider_matching_promptfoos_own_numbers(import_project, cli):
    result = cli("import", "promptfoo", str(PROMPTFOO / "results.json"))
    assert result.exit_code == 0, result.output
    runs = runs_by_arm(import_project)
    assert_matches_promptfoo(runs)
    for arm, run in runs.items():
        reported = run.header.raw["source"]["reported"]
        assert reported["testPassCount"] == round(ALL_PASS[arm] * 24)
        assert reported["score"] == pytest.approx(sum(c["score"] for c in run.cases))


def test_results_jsonl_gives_the_same_runs_without_the_json_only_metadata(import_project, cli):
    assert cli("import", "promptfoo", str(PROMPTFOO / "results.jsonl")).exit_code == 0
    runs = runs_by_arm(import_project)
    assert_matches_promptfoo(runs)
    assert all(run.header.raw["source"]["version"] is None for run in runs.values())  # .jsonl has no version


def test_run_header_carries_source_provider_prompt_and_fingerprint(import_project, cli):
    cli("import", "promptfoo", str(PROMPTFOO / "results.json"))
    header = runs_by_arm(import_project)["model-b"].header.raw
    assert header["source"]["tool"] == "promptfoo"
    assert header["source"]["version"] == "0.121.20"
    assert header["source"]["ids"]["eval_id"] == "eval-Qc5-2026-11-30T00:34:09"
    assert len(header["source"]["sha256"]) == 64
    assert header["config"]["provider"]["id"] == "openai:chat:model-b"
    assert header["config"]["provider"]["config"]["apiKey"] == "[REDACTED]"
    assert header["config"]["prompt"]["template"] == "{% if 'k' in input %}Answer: {% endif %}{{input}}"
    assert header["evaluators"]["exact"]["type"] == "promptfoo:equals"
    assert {name: e["weight"] for name, e in header["evaluators"].items()} == {
        "exact": 1, "contains_expected": 1, "format": 2}
    assert header["fingerprint"]["source"]["spec"]["results_version"] == 3
    assert header["started_at"] == "2026-11-30T00:34:09.842Z"


def test_case_fields_come_from_the_result_row(import_project, cli):
    cli("import", "promptfoo", str(PROMPTFOO / "results.json"))
    case = next(c for c in runs_by_arm(import_project)["model-b"].cases if c["item_id"] == "item-00")
    assert case["input"] == "Answer: item 0: echo harbor signal packet"  # the rendered prompt sent
    assert case["expected"] == "ITEM 0: ECHO HARBOR SIGNAL PACKET"
    assert case["output"] == "ANSWER: ITEM 0: ECHO HARBOR SIGNAL PACKET"
    assert case["error"] is None  # promptfoo's `error` on an assertion failure is not a case error
    assert (case["input_tokens"], case["output_tokens"]) == (7, 7)
    assert case["latency_ms"] == 33
    assert case["cost_usd"] is None  # promptfoo wrote 0: no price known for this model
    assert case["finish_reason"] == "stop"
    assert case["score"] == 0.25 and case["passed"] is False
    exact = next(s for s in case["scores"] if s["evaluator"] == "exact")
    assert exact["passed"] is False and "to equal" in exact["detail"]


def test_repeats_are_recovered_by_grouping_identical_tests(import_project, cli):
    assert cli("import", "promptfoo", str(PROMPTFOO / "results-repeat.json")).exit_code == 0
    runs = runs_by_arm(import_project)
    for arm, expected_rate in {"model-a": 16 / 20, "model-b": 8 / 20}.items():
        run = runs[arm]
        assert run.header.plan == {"items": 10, "repeat": 2, "cases": 20}
        keys = Counter((c["item_id"], c["repeat"]) for c in run.cases)
        assert set(keys) == {(f"item-{i:02d}", r) for i in range(10) for r in (0, 1)}
        assert pass_rate(run) == pytest.approx(expected_rate)
        verdicts = {}
        for case in run.cases:
            verdicts.setdefault(case["item_id"], set()).add(case["passed"])
        assert all(len(v) == 1 for v in verdicts.values())  # the fake server is deterministic


def test_a_provider_error_is_a_case_error_scoring_zero_on_every_assertion(import_project, cli, tmp_path):
    rows = read_jsonl(PROMPTFOO / "results.jsonl")
    broken = next(r for r in rows if r["vars"]["id"] == "item-02" and r["provider"]["label"] == "model-a")
    broken.update(success=False, score=0, failureReason=2, error="API error: 500 Internal Server Error",
                  gradingResult=None, response={"error": "API error: 500 Internal Server Error"})
    cli("import", "promptfoo", str(write_jsonl(tmp_path / "with-error.jsonl", rows)))
    run = runs_by_arm(import_project)["model-a"]
    case = next(c for c in run.cases if c["item_id"] == "item-02")
    assert case["error"] == "API error: 500 Internal Server Error"
    assert case["passed"] is False and case["score"] == 0
    assert {s["evaluator"]: s["score"] for s in case["scores"]} == {"exact": 0, "contains_expected": 0, "format": 0}
    assert all(s["detail"].startswith("generation failed") for s in case["scores"])
    assert run.footer.totals.errors == 1
    assert pass_rate(run) == pytest.approx(16 / 24)


def test_several_prompts_for_one_provider_make_one_run_per_prompt(import_project, cli, tmp_path):
    rows = read_jsonl(PROMPTFOO / "results.jsonl")
    for row in rows:
        row["provider"] = {"id": "openai:chat:model-a", "label": "model-a"}
    cli("import", "promptfoo", str(write_jsonl(tmp_path / "two-prompts.jsonl", rows)))
    runs = runs_by_arm(import_project)
    assert sorted(runs) == ["model-a/answer-prefix", "model-a/plain"]
    assert pass_rate(runs["model-a/plain"]) == pytest.approx(17 / 24)


def test_arm_from_names_runs_by_another_field(import_project, cli):
    result = cli("import", "promptfoo", str(PROMPTFOO / "results.json"), "--arm-from", "provider.id")
    assert result.exit_code == 0, result.output
    assert sorted(runs_by_arm(import_project)) == ["openai:chat:model-a", "openai:chat:model-b"]


def test_arm_from_a_missing_field_names_it(import_project, cli):
    result = cli("import", "promptfoo", str(PROMPTFOO / "results.json"), "--arm-from", "provider.nickname")
    assert result.exit_code == 1
    assert "results.results[0]: --arm-from field 'provider.nickname' is missing" in result.output
    assert not (import_project / "runs").exists()


def test_an_unknown_results_version_is_refused_naming_the_field(import_project, cli, tmp_path):
    data = json.loads((PROMPTFOO / "results.json").read_text())
    data["results"]["version"] = 4
    path = tmp_path / "future.json"
    path.write_text(json.dumps(data, indent=2))
    result = cli("import", "promptfoo", str(path))
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: {path}: results.version is 4; evalsite reads promptfoo results version 3"
    )
    assert not (import_project / "runs").exists()


def test_a_file_that_is_not_promptfoo_results_says_so(import_project, cli, tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"results": {"version": 3, "rows": []}}))
    result = cli("import", "promptfoo", str(path))
    assert result.exit_code == 1
    assert "no results.results array: not a promptfoo results file" in result.output


def test_a_file_cut_inside_the_results_imports_the_complete_ones_as_interrupted(import_project, cli, tmp_path):
    text = (PROMPTFOO / "results.json").read_text()
    cut = text.index('"testIdx": 12')  # inside the 25th result or so
    path = tmp_path / "cut.json"
    path.write_text(text[:cut])
    result = cli("import", "promptfoo", str(path))
    assert result.exit_code == 0, result.output
    assert "the file ends in the middle of the results" in result.output
    runs = runs_by_arm(import_project)
    assert {run.status for run in runs.values()} == {"interrupted"}
    cases = sum(len(run.cases) for run in runs.values())
    complete = text[:cut].count('"failureReason"')  # the last key of every complete result
    assert 0 < cases == complete < 48


def test_prompt_ids_that_are_not_text_key_the_runs_as_text_ids_do(import_project, cli, tmp_path):
    """A result's ``promptId`` (and a prompt's ``label``) of another JSON type tells its prompt apart
    as text does: the same arms and cases (a number there was a TypeError traceback)."""
    document = json.loads((PROMPTFOO / "results.json").read_text(encoding="utf-8"))
    numbers: dict[str, int] = {}
    for result in document["results"]["results"]:
        result["promptId"] = numbers.setdefault(result["promptId"], len(numbers) + 1)
        result["prompt"]["label"] = [result["prompt"]["label"]]
    path = tmp_path / "numbered.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = cli("import", "promptfoo", str(path))
    assert result.exit_code == 0, result.output
    assert len(numbers) > 1
    runs = runs_by_arm(import_project)
    assert {arm: len(run.cases) for arm, run in runs.items()} == {"model-a": 24, "model-b": 24}
