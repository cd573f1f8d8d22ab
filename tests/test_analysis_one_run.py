"""``evalsite bootstrap``, ``noise`` and ``holdout``: intervals, spread and flakiness checked
against scipy and hand computations from the run logs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from analysis_support import ARMS, cases, item_repeat_matrix, new_run, run_id, unpin_dataset
from scipy import stats as scipy_stats


def test_one_repeat_gives_bca_over_items_like_scipy(cli, example_with_runs):
    run = new_run(cli, example_with_runs, "experiments/arithmetic.yaml", "--arm", "sampler", "--repeat", "1")
    report = cli.json("bootstrap", run, "--group", "none", "--seed", "3", "--confidence", "0.9")
    _, scores = item_repeat_matrix(example_with_runs, run)
    reference = scipy_stats.bootstrap(
        (scores[:, 0],), np.mean, n_resamples=9999, confidence_level=0.9, method="BCa", rng=np.random.default_rng(3)
    ).confidence_interval
    assert report["resampled"] == "items" and report["mean"]["interval"]["method"] == "BCa"
    assert report["mean"]["value"] == pytest.approx(scores.mean())
    assert (report["mean"]["interval"]["low"], report["mean"]["interval"]["high"]) == pytest.approx(
        (reference.low, reference.high)
    )
    assert "no item has metadata.none; one repeat" in cli("bootstrap", run, "--group", "none").stdout


def test_repeats_are_averaged_per_item_and_the_items_resampled_like_scipy(cli, example_with_runs):
    run = run_id(example_with_runs, "sampler")
    report = cli.json("bootstrap", run)
    assert report["resampled"] == "items"
    _, scores = item_repeat_matrix(example_with_runs, run)
    reference = scipy_stats.bootstrap((scores.mean(axis=1),), np.mean, n_resamples=9999, method="BCa",
                                      rng=np.random.default_rng(0)).confidence_interval
    interval = report["mean"]["interval"]
    assert interval["method"] == "BCa"
    assert (interval["low"], interval["high"]) == pytest.approx((reference.low, reference.high))
    text = cli("bootstrap", run).stdout
    assert "resampled: items — no item has metadata.group; each item's 3 repeats averaged first" in text


def test_items_sharing_a_metadata_key_are_resampled_as_clusters(cli, example_with_runs):
    run = run_id(example_with_runs, "careful")
    report = cli.json("bootstrap", run, "--group", "kind")
    assert report["resampled"] == "clusters" and report["clusters"] == 4
    assert report["mean"]["interval"]["method"] == "cluster BCa"
    rows = [json.loads(line) for line in (example_with_runs / "data" / "arithmetic.jsonl").read_text().splitlines()]
    kind = {row["id"]: row["metadata"]["kind"] for row in rows}
    items, scores = item_repeat_matrix(example_with_runs, run)
    item_means = scores.mean(axis=1)
    clusters = [np.array([i for i, item in enumerate(items) if kind[item] == k]) for k in dict.fromkeys(kind[i] for i in items)]
    sums = np.array([item_means[c].sum() for c in clusters])
    sizes = np.array([c.size for c in clusters])
    reference = scipy_stats.bootstrap(
        (np.arange(len(clusters)),), lambda chosen, axis=-1: sums[chosen].sum(axis=axis) / sizes[chosen].sum(axis=axis),
        n_resamples=9999, method="BCa", rng=np.random.default_rng(0),
    ).confidence_interval
    interval = report["mean"]["interval"]
    assert (interval["low"], interval["high"]) == pytest.approx((reference.low, reference.high))
    assert "each item's 3 repeats averaged first" in report["why"]


def test_noise_reports_the_spread_and_each_items_flakiness(cli, example_with_runs):
    run = run_id(example_with_runs, "sampler")
    report = cli.json("noise", run)
    items, passed = item_repeat_matrix(example_with_runs, run, "passed")
    _, scores = item_repeat_matrix(example_with_runs, run)
    assert report["noise"]["repeat_means"] == pytest.approx(list(scores.mean(axis=0)))
    assert report["noise"]["std"] == pytest.approx(np.std(scores.mean(axis=0), ddof=1))
    assert report["k"] == 3
    for item, entry in zip(items, report["items"]):
        c = int(passed[items.index(item)].sum())
        wilson = scipy_stats.binomtest(c, 3).proportion_ci(0.95, method="wilson")
        assert (entry["item_id"], entry["passed"], entry["runs"]) == (item, c, 3)
        assert entry["wilson"] == pytest.approx([wilson.low, wilson.high])
        assert entry["pass_at_k"] == pytest.approx(1 - math.comb(3 - c, 3) / math.comb(3, 3))
        assert entry["pass_hat_k"] == pytest.approx(math.comb(c, 3) / math.comb(3, 3))
        assert entry["flaky"] is (0 < c < 3)
    flaky = sum(0 < passed[i].sum() < 3 for i in range(len(items)))
    text = cli("noise", run).stdout
    assert f"flaky items (passed in some repeats, failed in others): {flaky} of 60" in text
    assert f"run-to-run spread σ = {np.std(scores.mean(axis=0), ddof=1):.3f}" in text


def test_pass_at_k_uses_the_requested_k(cli, example_with_runs):
    report = cli.json("noise", run_id(example_with_runs, "sampler"), "--k", "2")
    assert report["k"] == 2
    entry = next(e for e in report["items"] if e["passed"] == 1)
    assert (entry["pass_at_k"], entry["pass_hat_k"]) == pytest.approx((1 - math.comb(2, 2) / math.comb(3, 2), 0.0))


def test_one_repeat_has_no_measurable_noise(cli, example_with_runs):
    run = new_run(cli, example_with_runs, "experiments/arithmetic.yaml", "--arm", "careful", "--repeat", "1")
    assert cli.json("noise", run)["noise"] is None
    assert "one repeat: the run-to-run spread cannot be measured" in cli("noise", run).stdout


def test_holdout_compares_the_pilot_order_with_the_holdout_order(cli, example_with_runs):
    data = example_with_runs / "data" / "arithmetic.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    for index, row in enumerate(rows):
        row["metadata"]["split"] = "pilot" if index % 2 == 0 else "holdout"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    unpin_dataset(example_with_runs)
    # the ids new_run returns: the example's runs may share this second, so "newest id" is no rule
    runs = {arm: new_run(cli, example_with_runs, "experiments/arithmetic.yaml", "--arm", arm, "--repeat", "1") for arm in ARMS}
    dataset = cli.json("show", runs["careful"])["dataset_id"]
    report = cli.json("holdout", "--dataset", dataset)
    assert (report["pilot_items"], report["holdout_items"], report["other_items"]) == (30, 30, 0)
    split = {row["id"]: row["metadata"]["split"] for row in rows}
    for name, means in (("pilot", report["check"]["pilot_means"]), ("holdout", report["check"]["holdout_means"])):
        expected = [np.mean([c["score"] for c in cases(example_with_runs, runs[arm]) if split[c["item_id"]] == name]) for arm in ARMS]
        assert means == pytest.approx(expected)
    order = sorted(range(3), key=lambda a: -report["check"]["pilot_means"][a])
    assert report["check"]["pilot_order"] == order
    assert "order holds: " in cli("holdout", "--dataset", dataset).stdout


def test_holdout_without_split_metadata_says_what_it_found(cli, example_with_runs):
    result = cli("holdout")
    assert result.exit_code == 1
    assert "no compared item of data/arithmetic.jsonl has metadata.split 'pilot' (splits found: none)" in result.stderr
