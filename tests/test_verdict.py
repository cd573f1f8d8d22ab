"""The one verdict (evalsite.analysis.verdict): arms in the order of the value shown, separation by
paired sign-flip tests Holm-corrected over every pair shown, the same direction and p for a pair
in every command, and wording that never claims an order the tests do not support.

References are independent: the sign-flip p by brute-force enumeration of every sign pattern,
Holm by hand, the letter display by checking every pair."""

from __future__ import annotations

import itertools
import json
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
from example_support import forget_project_modules
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from sitekit import case, write_run

from evalsite.analysis.verdict import Metric, choose_metric, verdict_of
from evalsite.analysis.wording import p_clause
from evalsite.errors import EvalsiteError
from evalsite.stats.pairs import letter_groups


def brute_force_sign_flip(diffs: np.ndarray) -> float:
    """Two-sided p over all 2^n sign patterns."""
    observed = abs(diffs.sum())
    totals = [abs(np.dot(signs, diffs)) for signs in itertools.product((1, -1), repeat=diffs.size)]
    return float(np.mean([t >= observed - 1e-9 for t in totals]))


def issue_example() -> tuple[np.ndarray, np.ndarray]:
    """Two arms on 40 items: A wins 30 items by 0.05 and loses 10 by 0.5."""
    b = np.full(40, 0.6)
    a = b.copy()
    a[:30] += 0.05
    a[30:] -= 0.5
    return a, b


def issue_example_p() -> float:
    """Exact two-sided sign-flip p of the issue example from two binomials: the 30 differences
    of 0.05 sum to 0.05 (30 - 2i) and the 10 of 0.5 to 0.5 (10 - 2j), i ~ Bin(30, ½), j ~ Bin(10, ½)."""
    observed = abs(30 * 0.05 - 10 * 0.5)
    return sum(
        scipy_stats.binom.pmf(i, 30, 0.5) * scipy_stats.binom.pmf(j, 10, 0.5)
        for i in range(31) for j in range(11) if abs(0.05 * (30 - 2 * i) + 0.5 * (10 - 2 * j)) >= observed - 1e-9
    )


def test_the_issue_example_ranks_b_first_though_a_wins_more_items():
    a, b = issue_example()
    verdict = verdict_of(np.column_stack([a, b]), ["A", "B"])
    assert [place.label for place in verdict.arms] == ["B", "A"]
    assert verdict.arms[0].value == pytest.approx(b.mean()) and verdict.arms[0].value > verdict.arms[1].value
    (pair,) = verdict.pairs
    assert (pair.ahead_label, pair.behind_label) == ("B", "A")
    assert pair.difference.p_value == pytest.approx(issue_example_p(), rel=1e-9)
    assert pair.difference.mean_diff == pytest.approx(b.mean() - a.mean())
    assert verdict.friedman.mean_ranks[0] < verdict.friedman.mean_ranks[1]  # A wins more items
    assert "A has the better mean rank but B the better mean" in verdict.agreement
    assert "not the mean ranks" in verdict.agreement


def test_pair_p_values_match_brute_force_and_holm_by_hand():
    rng = np.random.default_rng(3)
    values = rng.normal(size=(12, 3)) + [0.0, 0.6, 1.2]
    verdict = verdict_of(values, ["x", "y", "z"])
    raw = {}
    for pair in verdict.pairs:
        expected = brute_force_sign_flip(values[:, pair.ahead] - values[:, pair.behind])
        assert pair.difference.p_value == pytest.approx(expected, abs=1e-12)
        raw[(pair.ahead, pair.behind)] = expected
    ordered = sorted(raw.items(), key=lambda kv: kv[1])
    running, by_hand = 0.0, {}
    for step, (key, p) in enumerate(ordered):
        running = max(running, min(1.0, (len(ordered) - step) * p))
        by_hand[key] = running
    for pair in verdict.pairs:
        assert pair.holm_p == pytest.approx(by_hand[(pair.ahead, pair.behind)])
        assert pair.separated is (pair.holm_p < 0.05)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 5), st.integers(5, 25), st.integers(0, 10_000), st.booleans())
def test_no_arm_is_ranked_ahead_of_one_with_a_better_displayed_value(n_arms, n_items, seed, lower):
    values = np.random.default_rng(seed).integers(0, 4, size=(n_items, n_arms)) / 3
    metric = Metric("cost" if lower else "score", lower, "name")
    verdict = verdict_of(values, [f"arm{i}" for i in range(n_arms)], metric=metric)
    shown = [place.value for place in verdict.arms]
    assert shown == sorted(shown, reverse=not lower)
    assert [place.rank for place in verdict.arms] == list(range(1, n_arms + 1))
    for pair in verdict.pairs:  # the arm listed first is never worse on the value shown
        ahead, behind = values[:, pair.ahead].mean(), values[:, pair.behind].mean()
        assert (ahead <= behind + 1e-12) if lower else (ahead >= behind - 1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.data())
def test_two_arms_share_a_letter_exactly_when_the_tests_do_not_separate_them(n_arms, data):
    separated = np.zeros((n_arms, n_arms), dtype=bool)
    for a, b in itertools.combinations(range(n_arms), 2):
        separated[a, b] = separated[b, a] = data.draw(st.booleans())
    groups = letter_groups(tuple(range(n_arms)), separated)
    for a, b in itertools.combinations(range(n_arms), 2):
        share = any(a in group and b in group for group in groups.groups)
        assert share is not bool(separated[a, b])
        assert bool(set(groups.letters[a]) & set(groups.letters[b])) is share
    assert groups.strict_order_supported is bool(separated[~np.eye(n_arms, dtype=bool)].all())


def test_hundreds_of_arms_none_separated_are_one_group_found_at_once():
    """The cliques were searched without a pivot: n arms that no test separates (a small dataset, many
    arms alike) took 2^n steps, 22 arms 5 s, so `leaderboard` and `build` of 30 such arms ran for
    hours; and the search recursed once per arm of a clique."""
    def too_slow(*_: object) -> None:
        raise TimeoutError("letter_groups of 300 tied arms took over 20 s")

    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(20)
    try:
        tied = letter_groups(tuple(range(300)), np.zeros((300, 300), dtype=bool))
        chain = letter_groups(tuple(range(40)), ~np.eye(40, dtype=bool) ^ (np.eye(40, k=1, dtype=bool) | np.eye(40, k=-1, dtype=bool)))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert tied.groups == (tuple(range(300)),) and set(tied.letters) == {"a"}
    assert chain.groups == tuple((arm, arm + 1) for arm in range(39))


def test_the_headline_quotes_the_weakest_separated_pair_and_never_says_tied():
    rng = np.random.default_rng(0)
    values = rng.random((80, 3)) * 0.6 + [0.5, 0.1, 0.08]
    verdict = verdict_of(values, ["careful", "left_to_right", "sampler"])
    weakest = max((p for p in verdict.pairs if p.ahead == 0), key=lambda p: p.holm_p)
    assert verdict.headline.startswith("careful is ahead of every other arm: +")
    assert f"vs {weakest.behind_label}, {p_clause(weakest.holm_p)} Holm" in verdict.headline and verdict.headline.endswith("Holm")
    close = verdict.pair(1, 2)
    assert not close.separated
    assert verdict.arms[1].rank_text == "2–3 (not separated)"
    assert not verdict.order_supported
    assert "tied" not in verdict.headline


def test_metric_direction_comes_from_the_flag_then_the_project_then_the_name():
    assert choose_metric("cost") == Metric("cost", True, "name")
    assert choose_metric("score") == Metric("score", False, "name")
    settings_ = {"analysis": {"direction": {"score": "lower"}}}
    assert choose_metric("score", None, settings_) == Metric("score", True, "evalsite.toml [analysis.direction]")
    assert choose_metric("score", "higher", settings_) == Metric("score", False, "flag")
    with pytest.raises(EvalsiteError, match="--metric 'speed'"):
        choose_metric("speed")
    with pytest.raises(EvalsiteError, match="must be 'lower' or 'higher'"):
        choose_metric("score", None, {"analysis": {"direction": {"score": "down"}}})


# The commands ------------------------------------------------------------------------------------


@pytest.fixture
def two_arm_project(tmp_path, monkeypatch):
    """Runs of arms A and B with the issue's scores, A's cases cheaper."""
    a, b = issue_example()
    runs = tmp_path / "runs"
    ids = {}
    for index, (arm, scores, cost) in enumerate((("A", a, 0.001), ("B", b, 0.01))):
        ids[arm] = f"2026010{index + 1}T000000Z-{arm}-000{index}"
        cases = [case(f"q{i:02d}", score=float(s), passed=bool(s >= 0.5), cost_usd=cost) for i, s in enumerate(scores)]
        write_run(runs, ids[arm], cases, arm=arm)
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    forget_project_modules()
    yield ids
    forget_project_modules()


def test_every_command_gives_the_issue_example_the_same_order_direction_and_p(cli, two_arm_project):
    ids = two_arm_project
    board = cli.json("leaderboard")
    assert [(arm["arm_id"], arm["rank"]) for arm in board["arms"]] == [("B", 1), ("A", 2)]
    assert board["arms"][0]["value"] > board["arms"][1]["value"]
    assert {"low", "high"} <= set(board["arms"][0]["interval"])
    (pair,) = board["verdict"]["pairs"]
    p = pair["difference"]["p_value"]
    assert p == pytest.approx(issue_example_p(), rel=1e-9)
    family = cli.json("family-test", ids["B"], "--vs", ids["A"])
    (comparison,) = family["comparisons"]
    assert comparison["mean_diff"] > 0 and comparison["verdict"].startswith("B ")
    assert comparison["sign_flip"]["p_value"] == p and comparison["holm_p"] == pair["holm_p"]
    assert [arm["arm_id"] for arm in family["arms"]] == ["B", "A"]
    reverse = cli.json("family-test", ids["A"], "--vs", ids["B"])["comparisons"][0]
    assert reverse["mean_diff"] < 0 and reverse["sign_flip"]["p_value"] == p
    compared = cli.json("compare", ids["B"], "--baseline", ids["A"])["regression"]["summary"]
    assert compared["mean_delta"] > 0 and compared["p_value"] == p
    stability = cli.json("rank-stability")
    assert [arm["arm_id"] for arm in stability["arms"]] == ["B", "A"]
    report = Path("reports/claims.md")
    report.parent.mkdir()
    report.write_text("{{ claim: arm=B beats arm=A }}\n")
    (claim,) = json.loads(cli("check-claims", str(report), "--json").output)
    assert claim["status"] == "holds" and claim["numbers"]["p_value"] == p and claim["numbers"]["mean_diff"] > 0
    text = cli("leaderboard").stdout
    assert "A has the better mean rank but B the better mean" in text
    assert "the order is supported" not in text


def test_leaderboard_metric_cost_ranks_the_cheapest_first(cli, two_arm_project):
    board = cli.json("leaderboard", "--metric", "cost")
    assert [arm["arm_id"] for arm in board["arms"]] == ["A", "B"]
    assert [arm["value"] for arm in board["arms"]] == pytest.approx([0.001, 0.01])
    assert board["verdict"]["metric"] == {"name": "cost", "lower_is_better": True, "direction_from": "name"}
    assert board["verdict"]["headline"].startswith("A is ahead of the other arm on cost (lower is better): -0.009")
    higher = cli.json("leaderboard", "--metric", "cost", "--direction", "higher")
    assert [arm["arm_id"] for arm in higher["arms"]] == ["B", "A"]
    tokens = cli.json("leaderboard", "--metric", "tokens")
    assert [arm["value"] for arm in tokens["arms"]] == [4.0, 4.0]
