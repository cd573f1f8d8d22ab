"""Noise aligned by item and repeat, and the test of a difference against it (issue 14, defect 4).

References: scipy's two-sample t-test, a seeded simulation of the error rate, and runs written
by hand with a deterministic arm whose last repeat is incomplete."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from example_support import forget_project_modules
from scipy import stats as scipy_stats
from sitekit import case, write_run

from evalsite.stats import repeat_noise_test


def test_the_noise_test_is_scipys_two_sample_t_test_of_per_repeat_means():
    rng = np.random.default_rng(5)
    a, b = rng.random((30, 3)), rng.random((30, 4)) + 0.1
    a[4, 2] = np.nan  # item 4 lacks a repeat: left out of both sides
    test = repeat_noise_test(a, b)
    keep = np.ones(30, dtype=bool)
    keep[4] = False
    reference = scipy_stats.ttest_ind(a[keep].mean(axis=0), b[keep].mean(axis=0), equal_var=True)
    assert test.p_value == pytest.approx(reference.pvalue)
    assert (test.n_items, test.repeats, test.df) == (29, (3, 4), 5.0)
    assert repeat_noise_test(a[:, :1], b[:, :1]) is None  # two repeats in all: no spread to test against


def test_calling_a_rerun_of_the_same_arm_beyond_noise_happens_at_about_alpha():
    rng = np.random.default_rng(11)
    rejections = 0
    trials = 2000
    for _ in range(trials):
        item_effect = rng.random(40)[:, None]
        a = item_effect + rng.normal(0, 0.2, size=(40, 3))
        b = item_effect + rng.normal(0, 0.2, size=(40, 3))
        rejections += repeat_noise_test(a, b).p_value < 0.05
    assert 0.035 <= rejections / trials <= 0.065


@pytest.fixture
def deterministic_runs(tmp_path, monkeypatch):
    """A deterministic baseline (3 repeats, the last on 50 of 200 items) and a run better on 24 items."""
    runs = tmp_path / "runs"
    right = np.arange(200) % 3 != 0
    better = right | (np.arange(200) < 72) & ~right
    ids = {}
    for index, (name, passes) in enumerate((("base", right), ("new", better))):
        cases = [case(f"q{i:03d}", score=float(passes[i]), passed=bool(passes[i]), repeat=r)
                 for r in range(3) for i in range(200) if r < 2 or i < 50 or name == "new"]
        ids[name] = f"2026010{index + 1}T000000Z-arm-000{index}"
        write_run(runs, ids[name], cases, arm="arm")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    forget_project_modules()
    yield ids
    forget_project_modules()


def test_a_deterministic_arm_with_an_incomplete_last_repeat_has_no_noise(cli, deterministic_runs):
    result = cli("noise", deterministic_runs["base"], "--json")
    noise = json.loads(result.stdout)["noise"]
    assert noise["std"] == pytest.approx(0.0, abs=1e-12)
    assert (noise["n_items"], noise["items_left_out"]) == (50, 150)
    text = cli("noise", deterministic_runs["base"]).stdout
    assert "50 items; 150 lacking a repeat left out" in text and "flaky items (passed in some repeats, failed in others): 0 of 200" in text


def test_a_significant_change_is_never_called_within_noise_and_the_gate_agrees(cli, deterministic_runs):
    ids = deterministic_runs
    result = cli("compare", ids["new"], "--baseline", ids["base"], "--json")
    summary = json.loads(result.stdout)["regression"]["summary"]
    assert summary["mean_delta"] == pytest.approx(24 / 200) and summary["p_value"] < 1e-6
    assert summary["within_noise"] is False and summary["noise"] == pytest.approx(0.0, abs=1e-12)
    reverse = cli("compare", ids["base"], "--baseline", ids["new"], "--fail-on", "regression")
    assert reverse.exit_code == 1
    assert "gate (α = 0.05): fail: significant regression" in reverse.stdout
    assert "within noise" not in reverse.stdout
