"""Issue 26 item 4 (commands): one cluster rule — ``[analysis] cluster_key`` (else
``metadata.group``) through ``analysis.items.cluster_labels`` — for ``bootstrap``, McNemar, the
family-test power figures and rank stability; and a seeded clustered null (30 clusters × 8
items, strong cluster effects) on which the verdict's paired tests stay near α."""

from __future__ import annotations

import numpy as np
from analysis_support import run_id

from evalsite.analysis.verdict import verdict_of
from evalsite.stats import mcnemar_exact, sign_flip_test
from evalsite.stats.inversion import holm_levels
from evalsite.stats.pairs import unit_totals
from evalsite.stats.stability import rank_stability

ARMS = ("careful", "left_to_right", "sampler")
KIND = '[analysis]\ncluster_key = "kind"\n'


def test_bootstrap_reads_the_declared_cluster_key(cli, example_with_runs):
    careful = run_id(example_with_runs, "careful")
    assert cli.json("bootstrap", careful)["resampled"] == "items"
    (example_with_runs / "evalsite.toml").write_text(KIND)
    report = cli.json("bootstrap", careful)
    assert (report["resampled"], report["clusters"], report["group_key"]) == ("clusters", 4, "kind")
    board = cli.json("leaderboard")
    arm = next(a for a in board["arms"] if a["label"] == "careful")
    assert report["mean"]["interval"]["low"] == arm["interval"]["low"]  # the leaderboard's cluster interval
    assert "4 clusters of metadata.kind" in cli("bootstrap", careful).stdout
    assert cli.json("bootstrap", careful, "--group", "nothing")["resampled"] == "items"  # the flag still wins


def test_family_test_leaves_mcnemar_out_and_counts_power_in_clusters(cli, example_with_runs):
    careful, l2r = run_id(example_with_runs, "careful"), run_id(example_with_runs, "left_to_right")
    plain = cli.json("family-test", careful, "--vs", l2r)["comparisons"][0]
    assert plain["mcnemar"] is not None and plain["detectable"]["n"] == 60
    (example_with_runs / "evalsite.toml").write_text(KIND)
    clustered = cli.json("family-test", careful, "--vs", l2r, "--effect", "0.1")["comparisons"][0]
    assert clustered["mcnemar"] is None and "McNemar left out" in clustered["mcnemar_note"]
    assert clustered["unit"] == "cluster" and clustered["detectable"]["n"] == 4 and clustered["needed"]["n"] >= 6
    text = cli("family-test", careful, "--vs", l2r, "--effect", "0.1").stdout
    assert "4 clusters (~60 items) detect" in text and "McNemar left out" in text


def test_rank_stability_resamples_clusters_and_reports_clusters_and_items(cli, example_with_runs):
    (example_with_runs / "evalsite.toml").write_text(KIND)
    report = cli.json("rank-stability")
    assert (report["stability"]["unit"], report["stability"]["n_units"]) == ("cluster", 4)
    assert report["stability"]["sizes"][-1] == 4
    text = cli("rank-stability").stdout
    assert "bootstrap samples of clusters per size" in text and "of bootstrap samples over clusters at full size" in text


def test_resampling_whole_clusters_needs_more_items_than_resampling_items():
    """The issue's "~72 items where resampling whole clusters needs ~144": with strong cluster
    effects the share of resamples keeping a real gap grows with clusters, not items."""
    rng = np.random.default_rng(4)
    groups = np.repeat(np.arange(40), 8)
    values = rng.normal(0, 0.1, (320, 2)) + rng.normal(0, 0.4, (40, 2))[groups] + [0.12, 0.0]
    by_items = rank_stability(values, pairs=[(0, 1)], seed=0)
    by_clusters = rank_stability(values, pairs=[(0, 1)], seed=0, groups=groups.tolist())
    assert by_clusters.unit == "cluster" and by_clusters.n_units == 40
    assert by_items.min_size_pairs is not None
    cluster_items = None if by_clusters.min_size_pairs is None else by_clusters.min_size_pairs * 8
    assert cluster_items is None or cluster_items > 1.5 * by_items.min_size_pairs


def clustered_null(rng: np.random.Generator, arms: int, binary: bool = False) -> tuple[np.ndarray, list[int]]:
    """Arms with the same distribution whose scores share a strong per-cluster, per-arm effect."""
    groups = np.repeat(np.arange(30), 8)
    effects = rng.normal(0, 0.5, (30, arms))[groups]
    if binary:
        return (rng.random((240, arms)) < 1 / (1 + np.exp(-2 * effects))).astype(float), groups.tolist()
    return rng.random((240, 1)) + effects + rng.normal(0, 0.1, (240, arms)), groups.tolist()


def cluster_p(a: np.ndarray, b: np.ndarray, groups: list[int]) -> float:
    """The verdict's raw p: the sign-flip test of the cluster totals (``stats.pairs.paired_difference``)."""
    totals = unit_totals(a - b, groups)
    return sign_flip_test(totals, np.zeros_like(totals)).p_value


def test_the_paired_tests_over_clusters_rarely_separate_arms_of_a_clustered_null():
    rng = np.random.default_rng(26)
    datasets, any_separated, pairs_separated = 600, 0, 0
    for _ in range(datasets):
        values, groups = clustered_null(rng, 3)
        p_values = [cluster_p(values[:, a], values[:, b], groups) for a, b in ((0, 1), (0, 2), (1, 2))]
        rejected = holm_levels(p_values, 0.05).rejected
        any_separated += any(rejected)
        pairs_separated += sum(rejected)
    assert any_separated / datasets <= 0.06  # Holm: the chance of any false separation among 3 pairs
    assert pairs_separated / (3 * datasets) <= 0.06


def test_the_verdict_separates_no_arm_of_a_few_clustered_nulls_and_its_intervals_hold_0():
    rng = np.random.default_rng(27)
    separated = 0
    for _ in range(10):
        values, groups = clustered_null(rng, 3)
        verdict = verdict_of(values, list("abc"), groups=groups)
        assert verdict.unit == "cluster" and verdict.n_clusters == 30
        separated += sum(p.separated for p in verdict.pairs)
        assert all((p.interval.low <= 0 <= p.interval.high) != p.separated for p in verdict.pairs)
    assert separated <= 1


def test_item_level_mcnemar_is_too_liberal_on_clustered_pass_fail_items_so_it_is_left_out():
    rng = np.random.default_rng(28)
    item_rejections = cluster_rejections = 0
    for _ in range(200):
        values, groups = clustered_null(rng, 2, binary=True)
        item_rejections += mcnemar_exact(values[:, 0], values[:, 1]).p_value < 0.05
        cluster_rejections += cluster_p(values[:, 0], values[:, 1], groups) < 0.05
    assert item_rejections / 200 > 0.10  # why family-test drops McNemar where clusters are declared
    assert cluster_rejections / 200 <= 0.06  # the sign-flip over clusters the verdict reads
