"""Clustered items (issue 14, defect 5): the paired tests flip whole clusters, intervals resample
them, and the JSON says so. The error rate is checked by a seeded simulation against the
item-level test as the reference of what goes wrong without clusters."""

from __future__ import annotations

import json

import numpy as np

from evalsite.stats import sign_flip_test
from evalsite.stats.pairs import paired_difference, unit_totals


def clustered_null(rng: np.random.Generator, clusters: int = 30, size: int = 8) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Two arms with the same distribution whose scores share a strong per-cluster, per-arm effect."""
    groups = np.repeat(np.arange(clusters), size)
    base = rng.random(clusters * size)
    a = base + rng.normal(0, 0.5, clusters)[groups] + rng.normal(0, 0.1, groups.size)
    b = base + rng.normal(0, 0.5, clusters)[groups] + rng.normal(0, 0.1, groups.size)
    return a, b, groups.tolist()


def test_flipping_whole_clusters_rejects_a_true_null_at_about_alpha():
    rng = np.random.default_rng(14)
    trials, cluster_rejections, item_rejections = 300, 0, 0
    for _ in range(trials):
        a, b, groups = clustered_null(rng)
        cluster_rejections += paired_difference(a, b, groups=groups, n_resamples=199).p_value < 0.05
        item_rejections += sign_flip_test(a, b, n_resamples=2000).p_value < 0.05
    assert 0.02 <= cluster_rejections / trials <= 0.085
    assert item_rejections / trials > 0.25  # the item-level test is far too liberal here


def test_the_cluster_test_is_the_sign_flip_test_of_cluster_totals():
    rng = np.random.default_rng(3)
    a, b, groups = clustered_null(rng, clusters=12, size=5)
    result = paired_difference(a, b, groups=groups, n_resamples=999)
    totals = np.array([(a - b)[np.array(groups) == g].sum() for g in range(12)])
    assert np.allclose(unit_totals(a - b, groups), totals)
    # brute force over the 2^12 sign patterns of the cluster totals
    signs = np.array(np.meshgrid(*[[1, -1]] * 12)).reshape(12, -1).T
    expected = np.mean(np.abs(signs @ totals) >= abs(totals.sum()) - 1e-9)
    assert result.p_value == expected
    assert (result.unit, result.n_units, result.n_items) == ("cluster", 12, 60)
    assert result.mean_diff == (a - b).mean()
    assert result.interval.method == "cluster BCa"


def test_the_leaderboard_uses_the_declared_cluster_key_and_says_so(cli, example_with_runs):
    (example_with_runs / "evalsite.toml").write_text('[analysis]\ncluster_key = "kind"\n')
    board = json.loads(cli("leaderboard", "--json").stdout)
    verdict = board["verdict"]
    assert (verdict["unit"], verdict["n_clusters"], verdict["n_units"]) == ("cluster", 4, 4)
    for pair in verdict["pairs"]:
        assert pair["difference"]["unit"] == "cluster" and pair["difference"]["n_units"] == 4
        assert pair["separated"] is False  # 4 clusters: the smallest two-sided p is 2/16
    assert {arm["interval"]["method"] for arm in board["arms"]} <= {"cluster BCa", "cluster percentile (BCa undefined for this data)"}
    text = cli("leaderboard").stdout
    assert "unit: cluster (4 clusters; tests flip and intervals resample whole clusters)" in text
    assert "too few units to detect any difference" in text
    (example_with_runs / "evalsite.toml").unlink()
    assert json.loads(cli("leaderboard", "--json").stdout)["verdict"]["unit"] == "item"


def test_compare_flips_clusters_too_and_gives_the_leaderboard_its_p(cli, example_with_runs):
    (example_with_runs / "evalsite.toml").write_text('[analysis]\ncluster_key = "kind"\n')
    board = json.loads(cli("leaderboard", "--json").stdout)
    ids = {arm["label"]: arm["summary"]["arm"]["run_id"] for arm in board["arms"]}
    pair = next(p for p in board["verdict"]["pairs"] if {p["ahead_label"], p["behind_label"]} == {"careful", "sampler"})
    report = json.loads(cli("compare", ids["careful"], "--baseline", ids["sampler"], "--json").stdout)
    summary = report["regression"]["summary"]
    assert (summary["unit"], summary["n_units"]) == ("cluster", 4)
    assert summary["p_value"] == pair["difference"]["p_value"]
    assert "whole clusters flipped: 4 clusters" in cli("compare", ids["careful"], "--baseline", ids["sampler"]).stdout


def test_the_site_leaderboard_uses_the_same_clusters(cli, example_with_runs):
    (example_with_runs / "evalsite.toml").write_text('[analysis]\ncluster_key = "kind"\n')
    assert cli("build").exit_code == 0
    page = next((example_with_runs / "site" / "datasets").glob("*.html")).read_text()
    assert "not separated (too few units to detect any difference)" in page
