"""The verdict of runs that stopped by ``stop_when``: anytime-valid sequences decide every pair,
on every surface (leaderboard --json, compare, a claim, the CI summary), never a fixed-n p-value.

The end-to-end test runs three ``openai`` arms against three fake providers on 127.0.0.1 (one
per arm, so each arm's requests are counted apart): ``best`` always answers right, ``mid`` is
wrong on 30% of the items and ``worst`` on 60% (a superset)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from fakeserver import FakeServer
from runner_support import all_runs
from sitekit import parse
from stop_when_support import seeded_order, write_project

from evalsite.analysis import verdict as verdict_module
from evalsite.stats import sign_flip_test
from evalsite.stats.confseq import confidence_sequence, family_alpha

ITEMS = 400
WRONG = {"best": 0, "mid": 3, "worst": 6}  # wrong where i % 10 < WRONG[arm]


@pytest.fixture
def providers():
    servers = {arm: FakeServer() for arm in WRONG}
    for arm, wrong in WRONG.items():
        servers[arm].script = {f"question {i}": [{"reply": "no idea"}] for i in range(ITEMS) if i % 10 < wrong}
    for server in servers.values():
        server.__enter__()
    yield servers
    for server in servers.values():
        server.__exit__(None, None, None)


def write_openai_project(root, servers) -> str:
    rows = [{"id": f"q{i}", "input": f"question {i}", "expected": f"echo: question {i}"} for i in range(ITEMS)]
    (root / "data" / "qa.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    manifest = {
        "name": "qa", "dataset": {"path": "data/qa.jsonl"},
        "arms": [{"id": arm, "target": "openai:fake-model", "settings": {"base_url": server.url + "/v1"}}
                 for arm, server in servers.items()],
        "evaluators": [{"type": "exact"}], "schedule": {"backoff_s": 0.01, "max_backoff_s": 0.05},
    }
    (root / "experiments" / "qa.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (root / "reports").mkdir()
    (root / "reports" / "qa.md").write_text(
        "# QA\n\n{{ claim: arm=best beats arm=mid on dataset=qa, p < 0.05 }}\n")
    return "experiments/qa.yaml"


def test_three_arms_stop_early_and_every_surface_agrees_on_the_decision(runner_project, cli, providers):
    manifest = write_openai_project(runner_project, providers)
    ran = cli("run", manifest, "--until", "decided", "--allow-failures", "--json")
    assert ran.exit_code == 0, ran.output
    requests = sum(len(server.calls) for server in providers.values())
    runs = {run.header.arm_id: run for run in all_runs(runner_project)}
    used = runs["best"].footer.stop_when["items_used"]
    assert requests == 3 * used <= 0.5 * 3 * ITEMS  # stopped early: at least half the calls saved
    assert used == 120  # seeded order, scripted answers: the figure README.md quotes
    assert runs["best"].footer.stop_when["reason"] == "separated"
    assert runs["best"].footer.stop_when["calls_saved"] == ITEMS - used

    board = cli.json("leaderboard", "--dataset", "qa")
    verdict = board["verdict"]
    assert [arm["arm_id"] for arm in verdict["arms"]] == ["best", "mid", "worst"]
    assert verdict["headline"].startswith(f"best is ahead of every other arm: decided after {used} of 400 items "
                                          "(anytime-valid, α 0.05)")
    final = runs["best"].footer.stop_when["looks"][-1]["pairs"]
    for pair in verdict["pairs"]:
        assert pair["separated"] and pair["holm_p"] is None and pair["difference"]["p_value"] is None
        recorded = next(p for p in final if {p["a"], p["b"]} == {pair["ahead_label"], pair["behind_label"]})
        assert recorded["decision"] == "separated"
        assert (pair["interval"]["low"], pair["interval"]["high"]) == pytest.approx((recorded["low"], recorded["high"]))

    compared = cli("compare", runs["mid"].header.run_id, "--baseline", runs["best"].header.run_id)
    best_mid = next(p for p in verdict["pairs"] if p["ahead_label"] == "best" and p["behind_label"] == "mid")
    low, high = best_mid["interval"]["low"], best_mid["interval"]["high"]
    phrase = f"decided after {used} of 400 items (anytime-valid, α 0.05): the baseline > this run by"
    assert phrase in compared.stdout and f"[{low:.2f}, {high:.2f}]" in compared.stdout
    assert "sign-flip" not in compared.stdout

    claims = cli("check-claims")
    assert claims.exit_code == 0, claims.output
    assert f"holds: arm=best beats arm=mid on dataset=qa, p < 0.05 — decided after {used} of 400 items" in claims.stdout

    summary = runner_project / "summary.md"
    assert cli("ci", "summary", *(run.header.run_id for run in runs.values()), "-o", str(summary)).exit_code == 0
    text = summary.read_text()
    assert "### evalsite verdict: " in text and f"best > mid by +{best_mid['difference']['mean_diff']:.2f} [{low:.2f}, {high:.2f}]" in text
    assert "✓ " in text and "arm=best beats arm=mid" in text


def test_a_budget_stop_is_not_decided_even_where_a_fixed_n_test_would_separate(runner_project, cli):
    manifest = write_project(runner_project, stop_when={"decided": True, "min_items": 10, "max_items": 40,
                                                        "check_every": 40})
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    board = cli.json("leaderboard")
    a_b = next(p for p in board["verdict"]["pairs"] if {p["ahead_label"], p["behind_label"]} == {'echo tail=" a"', 'echo tail=" b"'})
    runs = {run.header.config["prompt_variables"]["tail"]: run for run in all_runs(runner_project)}
    order = seeded_order([f"q{i}" for i in range(300)], 0)[:40]
    scores = {tail: {c["item_id"]: c["score"] for c in run.cases} for tail, run in runs.items()}
    differences = np.array([scores[" a"][i] - scores[" b"][i] for i in order])
    fixed_n = sign_flip_test(differences, np.zeros_like(differences)).p_value
    assert fixed_n < 0.05 / 3  # the stopped sample would pass a fixed-n test even after Bonferroni …
    low, high = confidence_sequence(differences, alpha=family_alpha(0.05, 3), horizon=40)
    assert low[-1] <= 0  # … but the anytime-valid sequence does not exclude 0
    assert not a_b["separated"] and a_b["holm_p"] is None and a_b["difference"]["p_value"] is None
    assert a_b["interval"]["low"] == pytest.approx(low[-1]) and a_b["interval"]["high"] == pytest.approx(high[-1])
    text = cli("leaderboard").stdout
    assert "not decided after 40 of 300 items (anytime-valid, α 0.05)" in text
    assert f"could still detect |Δ| ≥ {(high[-1] - low[-1]) / 2:.2g}" in text


@pytest.mark.parametrize("stop_when", [{"decided": True, "check_every": 20}, None])
def test_ranked_by_latency_a_stopped_batch_tests_no_pair_while_a_full_one_does(runner_project, cli, stop_when,
                                                                              monkeypatch):
    """The items a stopped batch holds were chosen by watching its scores: neither a fixed-n test of
    latency over them nor the scores' sequences decides latency, so no pair is tested at all (and
    Friedman, which nothing would read, is not run)."""
    manifest = write_project(runner_project, stop_when=stop_when)
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    if stop_when is not None:
        monkeypatch.setattr(verdict_module, "_omnibus_tests", lambda *args: pytest.fail("Friedman run after a stop"))
    verdict = cli.json("leaderboard", "--metric", "latency")["verdict"]
    if stop_when is None:
        assert len(verdict["pairs"]) == 3 and verdict["friedman"] is not None
        return
    assert verdict["pairs"] == [] and verdict["friedman"] is None and verdict["nemenyi"] is None
    reason = ("no pair is tested on latency: the runs stopped by stop_when on their scores, so a fixed-n test of "
              "latency over the items they hold is not valid")
    assert verdict["headline"].endswith(reason) and verdict["correction"] == reason
    text = cli("leaderboard", "--metric", "latency").stdout
    assert reason in text and "sign-flip" not in text and "Friedman χ²" not in text


def test_the_experiment_page_draws_each_pairs_sequence_look_by_look_with_the_stop(runner_project, cli):
    manifest = write_project(runner_project, stop_when={"decided": True, "check_every": 20})
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    assert cli("build").exit_code == 0
    record = all_runs(runner_project)[0].footer.stop_when
    section = parse(runner_project / "site" / "experiments" / "exp.html").find("section", class_="stop-when")
    figures = section.find_all("figure")
    assert len(figures) == 3  # one per pair
    verdict = cli.json("leaderboard")["verdict"]
    for figure, pair in zip(figures, verdict["pairs"]):
        svg = figure.find("svg")
        assert len(svg.find_all("line", class_="chart-interval")) == len(record["looks"])  # one bar per look
        assert len(svg.find_all("line", class_="chart-stop")) == 1
        assert "stopped: separated" in svg.text()
        caption = " ".join(figure.find("figcaption").text().split())
        assert caption.startswith(f"decided after {record['items_used']} of 300 items (anytime-valid, α 0.05):")
        assert f"[{pair['interval']['low']:.2f}, {pair['interval']['high']:.2f}]" in caption
