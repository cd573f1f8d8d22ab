"""``-o/--output FILE`` on run, leaderboard, compare, check-claims and show: the format from the
extension, the same figures as ``--json``, refusals before any work, atomic writes; and the
leaderboard's errors column."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ElementTree

import pytest

BROKEN_ARM = '''
def broken(input, params):
    raise RuntimeError("upstream 503")
'''



@pytest.fixture
def two_arms(cli, example_project):
    """careful and a broken arm whose every case errors, once over the 60 items."""
    (example_project / "arms" / "broken.py").write_text(BROKEN_ARM)
    manifest = (example_project / "experiments" / "arithmetic.yaml").read_text()
    manifest = manifest.replace("repeat: 3", "repeat: 1").replace(
        "  - id: careful\n", "  - id: broken\n    target: python:arms.broken:broken\n  - id: careful\n")
    (example_project / "experiments" / "two.yaml").write_text(manifest.replace("name: arithmetic", "name: two"))
    done = cli("run", "experiments/two.yaml", "--arm", "broken", "--arm", "careful", "--allow-failures")
    assert "broken: 60 of 60 cases failed to generate" in done.stderr
    return example_project


def test_leaderboard_writes_csv_with_the_json_figures_and_the_errors_column(cli, two_arms):
    result = cli("leaderboard", "-o", "board.csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((two_arms / "board.csv").open()))
    arms = json.loads(cli("leaderboard", "--json").stdout)["arms"]
    assert [r["arm"] for r in rows] == [a["label"] for a in arms] == ["careful", "broken"]
    for row, arm in zip(rows, arms):
        assert float(row["value"]) == arm["value"] and float(row["ci_low"]) == arm["interval"]["low"]
        assert int(row["errors"]) == arm["errors"]
    assert [a["errors"] for a in arms] == [0, 60]
    header, careful, broken = result.stdout.splitlines()[3:6]
    assert "errors" in header.split()
    column = header.index("errors")
    assert careful[column:].split()[0] == "0" and broken[column:].split()[0] == "60"


@pytest.mark.parametrize("extension", [".json", ".md", ".html"])
def test_leaderboard_writes_every_format_it_lists(cli, two_arms, extension):
    result = cli("leaderboard", "-o", f"board{extension}")
    assert result.exit_code == 0, result.output
    text = (two_arms / f"board{extension}").read_text()
    if extension == ".json":
        assert json.loads(text) == json.loads(cli("leaderboard", "--json").stdout)
    elif extension == ".md":
        assert text.startswith("### leaderboard · dataset arithmetic@") and "| careful |" in text
    else:
        assert text.startswith("<!doctype html>") and "<td>careful</td>" in text


def test_an_unknown_or_unsupported_extension_is_one_error_line_before_any_work(cli, example_project):
    for name, why in (("board.pdf", "unknown output format"), ("board.junit.xml", "leaderboard does not write .junit.xml")):
        result = cli("leaderboard", "-o", name)
        assert result.exit_code == 1
        assert result.stderr == f"Error: {name}: {why}; leaderboard -o writes .json, .csv, .md, .html\n"
    refused = cli("run", "experiments/arithmetic.yaml", "-o", "runs.txt")
    assert refused.exit_code == 1 and refused.stderr.startswith("Error: runs.txt: unknown output format")
    assert not (example_project / "runs").exists() or not any((example_project / "runs").iterdir())
    missing = cli("run", "experiments/arithmetic.yaml", "-o", "nowhere/runs.csv")
    assert missing.stderr == "Error: nowhere/runs.csv: the folder nowhere does not exist\n"


def test_a_failed_write_leaves_no_partial_or_temporary_file(cli, two_arms):
    (two_arms / "board.csv").mkdir()  # os.replace cannot put a file over a folder
    result = cli("leaderboard", "-o", "board.csv")
    assert result.exit_code == 1 and result.stderr.startswith("Error: board.csv: cannot write:")
    assert [p.name for p in two_arms.iterdir() if p.name.startswith(".board.csv")] == []
    assert list((two_arms / "board.csv").iterdir()) == []


def test_run_writes_junit_and_the_summary_markdown(cli, example_project):
    done = cli("run", "experiments/arithmetic.yaml", "--arm", "careful", "--repeat", "1", "--allow-failures",
                  "-o", "runs.junit.xml")
    assert done.exit_code == 0, done.output
    suite = ElementTree.parse(example_project / "runs.junit.xml").getroot().find("testsuite")
    assert suite.get("name") == "evalsite.run.arithmetic" and suite.get("tests") == "60"
    assert int(suite.get("failures")) == len(suite.findall("testcase/failure")) > 0
    cli("run", "experiments/arithmetic.yaml", "--arm", "careful", "--repeat", "1", "--allow-failures",
           "-o", "runs.md", "--summary", "summary.md")
    assert (example_project / "runs.md").read_text().strip() == (example_project / "summary.md").read_text().strip()
    estimate = cli("run", "experiments/arithmetic.yaml", "--dry-run", "-o", "estimate.json")
    assert json.loads((example_project / "estimate.json").read_text()) == json.loads(
        cli("run", "experiments/arithmetic.yaml", "--dry-run", "--json").stdout)
    assert estimate.exit_code == 0
    refused = cli("run", "experiments/arithmetic.yaml", "--dry-run", "-o", "estimate.junit.xml")
    assert refused.exit_code == 1 and refused.stderr.startswith("Error: estimate.junit.xml: run --dry-run has no test cases")


def test_compare_show_and_check_claims_write_the_json_figures(cli, example_project):
    for _ in range(2):
        cli("run", "experiments/arithmetic.yaml", "--arm", "sampler", "--repeat", "1", "--allow-failures")
    assert cli("compare", "sampler@latest", "-o", "compare.csv", "--summary", "summary.md").exit_code == 0
    rows = list(csv.DictReader((example_project / "compare.csv").open()))
    report = json.loads(cli("compare", "sampler@latest", "--json").stdout)
    assert [r["item_id"] for r in rows] == [i["item_id"] for i in report["regression"]["items"]]
    assert {r["classification"] for r in rows} == {"unchanged"}
    cli("compare", "sampler@latest", "-o", "compare.md")
    assert (example_project / "compare.md").read_text().strip() == (example_project / "summary.md").read_text().strip()

    assert cli("show", "sampler@latest", "-o", "show.csv").exit_code == 0
    (row,) = csv.DictReader((example_project / "show.csv").open())
    summary = json.loads(cli("show", "sampler@latest", "--json").stdout)
    assert row["run_id"] == summary["run_id"] and float(row["mean_score"]) == summary["mean_score"]
    assert float(row["evaluators.exact.pass_rate"]) == summary["evaluators"]["exact"]["pass_rate"]

    (example_project / "reports").mkdir()
    (example_project / "reports" / "r.md").write_text("{{ claim: mean(arm=sampler) > 0.1 }}\n")
    assert cli("check-claims", "-o", "claims.junit.xml").exit_code == 0
    suite = ElementTree.parse(example_project / "claims.junit.xml").getroot().find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "0"
    cli("check-claims", "-o", "claims.json")
    assert json.loads((example_project / "claims.json").read_text()) == json.loads(
        cli("check-claims", "--json").stdout)
