"""``evalsite leaderboard`` and ``rank-stability`` on the example: numbers recomputed from the
run logs by hand, the refusal to print an order the data does not support, left-out runs."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
from analysis_support import ARMS, cases, edit_manifest, item_repeat_matrix, new_run, run_id, unpin_dataset
from example_support import forget_project_modules
from scipy import stats as scipy_stats

from evalsite.stats import rank_stability


def by_label(board: dict) -> dict[str, dict]:
    return {arm["summary"]["arm"]["label"]: arm for arm in board["arms"]}


def test_each_arm_figure_matches_its_cases(cli, example_with_runs):
    arms = by_label(cli.json("leaderboard"))
    assert set(arms) == set(ARMS)
    for arm in ARMS:
        run = run_id(example_with_runs, arm)
        records = cases(example_with_runs, run)
        _, scores = item_repeat_matrix(example_with_runs, run)
        _, passed = item_repeat_matrix(example_with_runs, run, "passed")
        summary = arms[arm]["summary"]
        assert summary["arm"]["run_id"] == run
        assert (summary["n_items"], summary["n_cases"], summary["n_repeats"]) == (60, 180, 3)
        assert summary["mean"] == pytest.approx(scores.mean(axis=1).mean())
        assert summary["pass_rate"] == pytest.approx(sum(c["passed"] for c in records) / len(records))
        reference = scipy_stats.bootstrap(
            (scores.mean(axis=1),), np.mean, n_resamples=9999, method="BCa", rng=np.random.default_rng(0)
        ).confidence_interval
        interval = summary["mean_interval"]
        assert (interval["low"], interval["high"]) == pytest.approx((reference.low, reference.high))
        assert interval["method"] == "BCa"
        latencies = sorted(c["latency_ms"] for c in records)
        assert summary["latency"]["p50_ms"] == latencies[math.ceil(0.50 * 180) - 1]
        assert summary["latency"]["p95_ms"] == latencies[math.ceil(0.95 * 180) - 1]
        repeat_means = scores.mean(axis=0)
        assert summary["noise"]["std"] == pytest.approx(np.std(repeat_means, ddof=1), abs=1e-12)


def test_cost_is_unknown_never_zero_when_an_arm_has_no_price(cli, example_with_runs):
    arms = by_label(cli.json("leaderboard"))
    assert arms["careful"]["summary"]["cost"] == {
        "total": None, "per_case": None, "per_item": None, "per_correct": None, "cases": 180, "unknown_cases": 180,
        "passed_cases": 168, "known": None,
    }
    records = cases(example_with_runs, run_id(example_with_runs, "sampler"))
    total = sum(c["cost_usd"] for c in records)
    cost = arms["sampler"]["summary"]["cost"]
    assert cost["total"] == pytest.approx(total)
    assert cost["per_case"] == pytest.approx(total / 180)  # one answer to one item
    assert cost["per_item"] == pytest.approx(total / len({c["item_id"] for c in records}))  # an item with its 3 repeats
    assert cost["per_correct"] == pytest.approx(total / sum(c["passed"] for c in records))
    text = cli("leaderboard").stdout
    careful_row = next(line for line in text.splitlines() if " careful " in line)
    assert "unknown" in careful_row and "$0 " not in careful_row


def test_the_two_close_arms_are_not_separated_and_careful_is(cli, example_with_runs):
    board = cli.json("leaderboard")
    arms = by_label(board)
    assert (arms["careful"]["rank"], arms["careful"]["rank_text"], arms["careful"]["letters"]) == (1, "1", "a")
    for arm in ("left_to_right", "sampler"):
        assert arms[arm]["rank_text"] == "2–3 (not separated)" and arms[arm]["letters"] == "b"
    assert [arm["rank"] for arm in board["arms"]] == [1, 2, 3]
    assert board["verdict"]["order_supported"] is False
    assert board["verdict"]["headline"].startswith("careful is ahead of every other arm: +0.27 ")
    assert board["verdict"]["headline"].endswith("vs left_to_right, p = 0.003 Holm")
    text = cli("leaderboard").stdout
    rows = [line for line in text.splitlines() if "Z-" in line and "·" not in line]
    assert [row.split("  ")[0] for row in rows] == ["1", "2–3 (not separated)", "2–3 (not separated)"]
    assert "left_to_right − sampler  +0.050" in text and "not separated (could detect |Δ| ≥ " in text


def test_friedman_and_nemenyi_agree_with_independent_formulas(cli, example_with_runs):
    board = cli.json("leaderboard")
    item_means = np.column_stack([item_repeat_matrix(example_with_runs, run_id(example_with_runs, arm))[1].mean(axis=1) for arm in ARMS])
    friedman = board["verdict"]["friedman"]
    assert friedman["statistic"] == pytest.approx(scipy_stats.friedmanchisquare(*item_means.T).statistic)
    assert friedman["kind"] == "permutation" and 100 <= friedman["n_resamples"] <= 5000  # stops early once clear of 0.05
    ranks = scipy_stats.rankdata(-item_means, axis=1).mean(axis=0)
    labels = [arm["summary"]["arm"]["label"] for arm in board["arms"]]
    assert [arm["mean_rank"] for arm in board["arms"]] == pytest.approx([ranks[ARMS.index(label)] for label in labels])
    q = scipy_stats.studentized_range.ppf(0.95, 3, np.inf) / math.sqrt(2)
    assert board["verdict"]["nemenyi"]["critical_difference"] == pytest.approx(q * math.sqrt(3 * 4 / (6 * 60)))


def fresh_project(cli, example_runs, tmp_path, monkeypatch, *arms: str) -> None:
    """A project with no runs but those of ``arms``."""
    monkeypatch.chdir(tmp_path)
    for folder in ("data", "arms", "experiments"):
        shutil.copytree(example_runs / folder, tmp_path / folder)
    forget_project_modules()
    arm_options = [option for arm in arms for option in ("--arm", arm)]
    assert cli("run", "experiments/arithmetic.yaml", *arm_options, "--allow-failures").exit_code == 0
    forget_project_modules()


def test_two_arms_the_paired_test_cannot_separate_share_a_group(cli, example_runs, tmp_path, monkeypatch):
    fresh_project(cli, example_runs, tmp_path, monkeypatch, "left_to_right", "sampler")
    board = cli.json("leaderboard")
    (pair,) = board["verdict"]["pairs"]
    assert pair["holm_p"] >= 0.05 and pair["separated"] is False
    assert [arm["rank_text"] for arm in board["arms"]] == ["1–2 (not separated)", "1–2 (not separated)"]
    assert [arm["letters"] for arm in board["arms"]] == ["a", "a"]
    assert board["stability"]["min_size_order"] is None and board["stability"]["pairs"] == []
    text = cli("leaderboard").stdout
    assert "verdict: no arm is ahead of every other at α = 0.05: left_to_right is not separated from sampler" in text
    assert "supported" not in text.replace("not supported", "")


def test_one_arm_is_listed_without_a_ranking(cli, example_runs, tmp_path, monkeypatch):
    fresh_project(cli, example_runs, tmp_path, monkeypatch, "careful")
    board = cli.json("leaderboard")
    assert [arm["rank"] for arm in board["arms"]] == [1]
    assert board["verdict"]["friedman"] is None and board["stability"] is None
    assert "verdict: one arm: nothing to compare" in cli("leaderboard").stdout
    result = cli("rank-stability")
    assert result.exit_code == 1 and "rank stability needs two arms" in result.stderr


def test_rank_stability_checks_only_the_pairs_the_paired_tests_separate(cli, example_with_runs):
    items = np.stack([item_repeat_matrix(example_with_runs, run_id(example_with_runs, arm))[1] for arm in ARMS], axis=1)
    careful, l2r, sampler = (ARMS.index(arm) for arm in ARMS)
    expected = rank_stability(items, pairs=[(careful, l2r), (careful, sampler)], seed=0)
    board = cli.json("leaderboard")
    assert board["stability"]["min_size_pairs"] == expected.min_size_pairs
    assert board["stability"]["min_size_order"] is None  # left_to_right vs sampler is not separated
    line = (f"the separated pairs (careful > left_to_right, careful > sampler; the rest of the order is not supported) "
            f"keep their direction in 95% of bootstrap samples of ~{expected.min_size_pairs} items; you have 60 items")
    assert line in cli("leaderboard").stdout
    report = cli.json("rank-stability")
    assert report["stability"]["p_order"] == pytest.approx(list(expected.p_order))
    assert report["stability"]["min_size_order"] is None
    assert report["labels"] == list(ARMS)
    assert [(arm["label"], arm["rank"]) for arm in report["arms"]] == [("careful", 1), ("left_to_right", 2), ("sampler", 3)]


def test_runs_that_may_not_be_compared_are_left_out_with_the_reason(cli, example_with_runs):
    original = {arm: run_id(example_with_runs, arm) for arm in ARMS}
    dataset_id = cli.json("show", original["careful"])["dataset_id"]
    newer = new_run(cli, example_with_runs, "experiments/arithmetic.yaml", "--arm", "careful", "--repeat", "1")
    rescored = new_run(cli, example_with_runs, edit_manifest(example_with_runs, evaluators=[{"type": "exact"}]), "--arm", "careful")
    data = example_with_runs / "data" / "arithmetic.jsonl"
    data.write_text(data.read_text().replace('"expected": "480"', '"expected": "481"'))
    unpin_dataset(example_with_runs)
    other_dataset = new_run(cli, example_with_runs, "experiments/arithmetic.yaml", "--arm", "sampler", "--repeat", "1")

    board = cli.json("leaderboard", "--dataset", dataset_id)

    reasons = {entry["run_id"]: entry["reason"] for entry in board["selection"]["left_out"]}
    assert reasons.pop(rescored).startswith(f"not comparable with {newer}: evaluator 'exact' version ")
    assert reasons.pop(other_dataset) == (
        f"on dataset {cli.json('show', other_dataset)['dataset_id']}, not {dataset_id} (same name, other rows)"
    )
    assert reasons == {original["careful"]: f"an older run of the same config; {newer} is newer"}
    chosen = {arm["summary"]["arm"]["run_id"] for arm in board["arms"]}
    assert chosen == {newer, original["left_to_right"], original["sampler"]}
    text = cli("leaderboard", "--dataset", dataset_id).stdout
    assert "runs left out (3):" in text and rescored in text


def test_an_interrupted_run_of_the_dataset_is_left_out(cli, example_with_runs):
    run = new_run(cli, example_with_runs, "experiments/arithmetic.yaml", "--arm", "sampler", "--repeat", "1")
    (example_with_runs / "runs" / run / "end.json").unlink()
    reasons = {e["run_id"]: e["reason"] for e in cli.json("leaderboard")["selection"]["left_out"]}
    assert reasons == {run: "status interrupted"}


def test_items_missing_from_an_arm_are_dropped_and_counted(cli, example_with_runs):
    path = example_with_runs / "runs" / run_id(example_with_runs, "sampler") / "cases.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(line for line in lines if json.loads(line)["item_id"] != "q005"))
    board = cli.json("leaderboard")
    assert board["n_items"] == 59
    assert board["dropped"] == [{"item_id": "q005", "reason": "no case in sampler"}]
    assert "items left out (1): q005 (no case in sampler)" in cli("leaderboard").stdout


def test_sweep_configs_of_one_arm_are_separate_rows_labelled_by_their_values(cli, example_with_runs):
    sweep = {"mode": "grid", "variables": {"temperature": [0.0, 0.7]}}
    new_run_all(cli, example_with_runs, edit_manifest(example_with_runs, sweep=sweep, arms=[{"id": "careful", "target": "python:arms.arithmetic:careful"}]))
    labels = set(by_label(cli.json("leaderboard")))
    assert {"careful temperature=0.0", "careful temperature=0.7", "careful"} <= labels


def new_run_all(cli, project, manifest: str) -> None:
    forget_project_modules()
    assert cli("run", manifest, "--repeat", "1", "--allow-failures").exit_code == 0


def test_several_datasets_need_a_choice(cli, example_with_runs):
    (example_with_runs / "data" / "copy.jsonl").write_text((example_with_runs / "data" / "arithmetic.jsonl").read_text())
    new_run(cli, example_with_runs, edit_manifest(example_with_runs, dataset={"path": "data/copy.jsonl"}), "--arm", "careful", "--repeat", "1")
    result = cli("leaderboard")
    assert result.exit_code == 2
    assert "2 datasets have runs; choose one with --dataset:" in result.stderr
    assert "arithmetic@" in result.stderr and "copy@" in result.stderr
    assert cli.json("leaderboard", "--dataset", "copy")["selection"]["dataset_id"].startswith("copy@")
    unknown = cli("leaderboard", "--dataset", "nope")
    assert unknown.exit_code == 2 and "--dataset 'nope' matches no dataset with runs" in unknown.stderr


def test_evaluator_option_ranks_on_that_evaluator(cli, example_with_runs):
    board = cli.json("leaderboard", "--evaluator", "exact")
    assert board["evaluator"] == "exact"
    assert by_label(board)["careful"]["summary"]["mean"] == pytest.approx(168 / 180)
    result = cli("leaderboard", "--evaluator", "judge")
    assert result.exit_code == 1
    assert "no completed, scored run on dataset arithmetic@" in result.stderr and "has no evaluator 'judge'" in result.stderr


def test_scores_without_a_pass_rule_have_no_pass_rate_and_no_mcnemar(cli, example_with_runs):
    (example_with_runs / "arms" / "closeness.py").write_text(
        "def digits(output, expected):\n"
        "    return sum(a == b for a, b in zip(output, expected)) / max(len(output), len(expected))\n"
    )
    manifest = edit_manifest(example_with_runs, evaluators=[{"type": "python:arms.closeness:digits", "name": "digits"}])
    new_run_all(cli, example_with_runs, manifest)
    board = cli.json("leaderboard")
    assert list(board["selection"]["evaluators"]) == ["digits"]  # three configs each: the newer group wins
    newest = max((arm["summary"]["arm"] for arm in board["arms"]), key=lambda run: run["started_at"])["run_id"]
    assert {e["reason"].split(":")[0] for e in board["selection"]["left_out"]} == {f"not comparable with {newest}"}
    for arm in board["arms"]:
        assert arm["summary"]["pass_rate"] is None and arm["summary"]["cost"]["per_correct"] is None
    runs = {arm["summary"]["arm"]["label"]: arm["summary"]["arm"]["run_id"] for arm in board["arms"]}
    (comparison,) = cli.json("family-test", runs["careful"], "--vs", runs["sampler"])["comparisons"]
    assert comparison["mcnemar"] is None and comparison["sign_flip"]["p_value"] < 1
    assert cli.json("noise", runs["sampler"])["items"] == []
    assert "no pass rule: pass/fail flakiness does not apply" in cli("noise", runs["sampler"]).stdout
