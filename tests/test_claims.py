"""Claims in reports: parsing, re-derivation from real runs, the command, JUnit and summaries."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from example_support import forget_project_modules

from evalsite.analysis.claims import Beats, ClaimSyntaxError, Comparison, ValuePin, find_directives, parse_claim

REPO = Path(__file__).resolve().parent.parent


def test_parses_the_three_directive_shapes():
    beats = parse_claim("claim", " arm=v2 beats arm=v1 on dataset=golden, p < 0.01 ")
    assert isinstance(beats, Beats)
    assert (beats.winner.arm, beats.loser.arm, beats.winner.dataset, beats.alpha) == ("v2", "v1", "golden", 0.01)
    comparison = parse_claim("claim", "cost_per_item(arm=cheap) <= 0.5 * cost_per_item(arm=big)")
    assert isinstance(comparison, Comparison) and comparison.operator == "<="
    pin = parse_claim("value", "pass_rate(arm=a, evaluator=exact) = 66.7%")
    assert isinstance(pin, ValuePin) and pin.percent and pin.decimals == 1


@pytest.mark.parametrize("body, message", [
    ("mean(arm=a) >= ", "expected more"),
    ("median(arm=a) > 1", "unknown metric 'median'"),
    ("mean(model=a) > 1", "unknown selector 'model'"),
    ("mean(arm=a) 0.5", "expected a comparison"),
])
def test_syntax_errors_name_the_problem(body, message):
    with pytest.raises(ClaimSyntaxError, match=message):
        parse_claim("claim", body)


@pytest.mark.parametrize("body", [
    "mean(arm=a) > " + "(" * 100_000 + "1" + ")" * 100_000,
    "mean(arm=a) > " + "- " * 100_000 + "1",
    "mean(arm=a) > " + "1+" * 3_000 + "1",
])
def test_a_claim_nested_past_any_real_one_is_a_syntax_error_not_a_recursion_error(body):
    with pytest.raises(ClaimSyntaxError, match="more than 200 operators, signs and parentheses"):
        parse_claim("claim", body)


def test_a_long_claim_within_the_bound_still_parses():
    claim = parse_claim("claim", "mean(arm=a) < " + "1+" * 99 + "(" * 50 + "1" + ")" * 50)
    assert isinstance(claim, Comparison) and claim.operator == "<"


def test_directives_carry_their_line():
    text = "intro\n\nthe score is {{ value: mean(arm=a) = 0.5 }} and\n{{ claim: n(arm=a) == 3 }}\n"
    assert [(d.kind, d.line) for d in find_directives(text)] == [("value", 3), ("claim", 4)]


@pytest.fixture
def project_with_runs(example_project, cli):
    """The example project with its reports/ and one run per arm (one repeat), as the working folder."""
    shutil.copytree(REPO / "reports", example_project / "reports")
    assert cli("run", "experiments/arithmetic.yaml", "--repeat", "1", "--allow-failures").exit_code == 0
    return example_project


def test_the_example_report_holds(project_with_runs, cli):
    result = cli("check-claims", "--json")
    verdicts = json.loads(result.output)
    assert result.exit_code == 0, result.output
    assert len(verdicts) >= 5 and {v["status"] for v in verdicts} == {"holds"}
    beats = next(v for v in verdicts if "beats" in v["text"])
    assert beats["numbers"]["p_value"] < 0.01 and beats["numbers"]["n"] == 60
    assert len(beats["runs"]) == 2


def write_report(project: Path, body: str) -> Path:
    path = project / "reports" / "extra.md"
    path.write_text(body)
    return path


def test_a_claim_fails_after_a_new_run_changes_the_numbers(project_with_runs, cli):
    path = write_report(project_with_runs, "{{ claim: mean(arm=careful) >= 0.9 }}\n")
    assert cli("check-claims", str(path)).exit_code == 0
    arms = project_with_runs / "arms" / "arithmetic.py"
    arms.write_text(arms.read_text().replace('return f"{_with_precedence(_tokens(input)):,}"', 'return "0"'))
    forget_project_modules()
    cli("run", "experiments/arithmetic.yaml", "--repeat", "1", "--arm", "careful")
    result = cli("check-claims", str(path))
    assert result.exit_code == 1
    assert "fails" in result.output and "0 >= 0.9" in result.output


def test_unknown_arm_cannot_be_checked_and_exits_1(project_with_runs, cli):
    path = write_report(project_with_runs, "{{ claim: mean(arm=nobody) > 0.1 }}\n")
    result = cli("check-claims", str(path))
    assert result.exit_code == 1
    assert "cannot be checked" in result.output and "unknown arm 'nobody'" in result.output


def test_a_stale_pinned_value_fails_and_names_both_figures(project_with_runs, cli):
    path = write_report(project_with_runs, "careful scores {{ value: mean(arm=careful) = 0.95 }}.\n")
    result = cli("check-claims", str(path))
    assert result.exit_code == 1
    assert "runs give 0.93, the text quotes 0.95" in result.output


def test_unknown_cost_cannot_be_checked(project_with_runs, cli):
    path = write_report(project_with_runs, "{{ claim: cost_per_item(arm=careful) < 1 }}\n")
    result = cli("check-claims", str(path), "--json")
    (verdict,) = json.loads(result.output)
    assert verdict["status"] == "cannot be checked" and "cost unknown for 60 of 60 cases" in verdict["detail"]


def test_known_cost_claims_are_computed_from_tokens_and_price(project_with_runs, cli):
    path = write_report(project_with_runs, "{{ claim: cost_total(arm=sampler) > 0 }}\n")
    (verdict,) = json.loads(cli("check-claims", str(path), "--json").output)
    cases = [json.loads(line) for run in (project_with_runs / "runs").glob("*sampler*/cases.jsonl")
             for line in run.read_text().splitlines()]
    assert verdict["numbers"]["cost_total(arm=sampler)"] == pytest.approx(sum(c["cost_usd"] for c in cases))
    assert verdict["status"] == "holds"


def test_junit_and_step_summary_outputs_parse(project_with_runs, cli, tmp_path, monkeypatch):
    step_summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    write_report(project_with_runs, "{{ claim: mean(arm=nobody) > 0.1 }}\n{{ claim: n(arm=careful) == 60 }}\n")
    junit = tmp_path / "claims.xml"
    cli("check-claims", "--junit", str(junit), "--summary", str(tmp_path / "pr-comment.md"))
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert int(suite.get("tests")) >= 7 and suite.get("errors") == "1" and suite.get("failures") == "0"
    for summary in (step_summary, tmp_path / "pr-comment.md"):
        text = summary.read_text()
        assert text.startswith("### evalsite claims: ") and "| ? mean(arm=nobody) > 0.1 |" in text


def test_run_writes_a_step_summary_and_junit_per_item(example_project, cli, tmp_path, monkeypatch):
    step_summary = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    junit = tmp_path / "run.xml"
    result = cli("run", "experiments/arithmetic.yaml", "--repeat", "1", "--arm", "careful", "--junit", str(junit))
    assert result.exit_code == 1
    assert step_summary.read_text().startswith("### evalsite run: arithmetic")
    assert "| careful |" in step_summary.read_text()
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "60" and suite.get("failures") == "4" and suite.get("errors") == "0"
    failed = {case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None}
    rows = [json.loads(line) for line in (example_project / "data/arithmetic.jsonl").read_text().splitlines()]
    assert failed == {row["id"] for row in rows if int(row["expected"]) >= 1000}
