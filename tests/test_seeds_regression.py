"""Seed 002/003: net_delta in the regression summary; run --baseline prints the diff and gates the exit."""

from __future__ import annotations

import json

import pytest
from compare_support import run_arm, write_manifest

from evalsite.analysis.compare import compare_runs
from evalsite.project import find_project

WRONG = ["g01", "g02", "g04", "g05", "g06", "g07", "g08", "g09"]


def test_net_delta_is_the_sum_of_item_deltas(golden_project, cli):
    base = run_arm(cli, golden_project, params={"wrong": ["g01"]})
    current = run_arm(cli, golden_project, params={"wrong": ["g02", "g03", "g04"]})
    report = compare_runs(find_project(), current, baseline=base)
    deltas = [item.delta for item in report.regression.items]
    assert report.regression.summary.net_delta == pytest.approx(sum(deltas)) == pytest.approx(1 - 3)
    assert report.regression.summary.net_delta == pytest.approx(report.regression.summary.mean_delta * 12)
    shown = cli("compare", current, "--baseline", base).output
    assert "(net -2.000)" in shown


def test_run_baseline_promoted_prints_the_diff_and_fails_on_regression(golden_project, cli, tmp_path):
    base = run_arm(cli, golden_project)
    assert cli("promote", base, "--reason", "reference", "--allow-dirty").exit_code == 0
    manifest = write_manifest(golden_project, params={"wrong": WRONG})
    summary = tmp_path / "summary.md"
    result = cli("run", manifest, "--baseline", "promoted", "--allow-failures", "--summary", str(summary))
    assert result.exit_code == 0, "without --fail-on the diff is printed, the exit code unchanged"
    assert f"baseline  {base}" in result.output and "(the promoted baseline)" in result.output
    assert "gate (α = 0.05): fail: significant regression" in result.output
    assert "evalsite compare:" in summary.read_text()

    gated = cli("run", manifest, "--baseline", "promoted", "--allow-failures", "--fail-on", "regression", "--json")
    assert gated.exit_code == 1
    (row,) = json.loads(gated.stdout)
    diff = row["baseline_diff"]
    assert diff["baseline"]["run_id"] == base and diff["baseline_source"] == "promoted"
    assert diff["gate"]["failed"] is True and diff["regression"]["summary"]["net_delta"] == pytest.approx(-8)


def test_run_baseline_with_a_run_id_and_no_regression_passes_the_gate(golden_project, cli):
    base = run_arm(cli, golden_project)
    result = cli("run", write_manifest(golden_project), "--baseline", base, "--fail-on", "regression")
    assert result.exit_code == 0, result.output
    assert "(given with --baseline)" in result.output and "gate (α = 0.05): pass" in result.output


def test_promoted_means_only_a_promoted_baseline(golden_project, cli):
    run_arm(cli, golden_project)
    result = cli("run", write_manifest(golden_project), "--baseline", "promoted", "--json")
    (row,) = json.loads(result.stdout)
    assert row["baseline_diff"]["baseline"] is None and row["baseline_diff"]["baseline_source"] == "none"
