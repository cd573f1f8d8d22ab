"""family-test renders the one verdict (issue 26, item 5): it says which family Holm corrects over,
agrees with the leaderboard when the family is the leaderboard's, and draws letters only from pairs
that were actually tested."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from sitekit import case, write_run

#: Pass rates of a 4-arm project: two clearly different arms and two similar ones.
RATES = {"strong": 0.8, "weak": 0.3, "twin1": 0.7, "twin2": 0.7}


def holm_by_hand(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out: sort, multiply by (m - rank), running max, cap at 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


@pytest.fixture
def family_runs(tmp_path, monkeypatch) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)
    return write_four_arms(tmp_path, seed=1)


def write_four_arms(tmp_path, seed: int) -> dict[str, str]:
    """A project whose runs are written directly: 60 items × 2 repeats per arm, seeded; arm → run id."""
    rng = np.random.default_rng(seed)
    (tmp_path / "evalsite.toml").write_text("")
    (tmp_path / "data").mkdir()
    runs = {}
    for index, (arm, rate) in enumerate(RATES.items()):
        cases = [case(f"i{item:03d}", score=float(ok), passed=ok, repeat=repeat)
                 for item in range(60) for repeat in range(2) for ok in [bool(rng.random() < rate)]]
        runs[arm] = f"20260101T00000{index}Z-{arm}-000{index}"
        write_run(tmp_path / "runs", runs[arm], cases, arm=arm)
    return runs


def leaderboard_pairs(cli) -> dict[frozenset[str], dict]:
    board = cli.json("leaderboard")
    return {frozenset((p["ahead_label"], p["behind_label"])): p for p in board["verdict"]["pairs"]}


def family(cli, runs: dict[str, str], *extra: str) -> dict:
    return cli.json("family-test", runs["strong"], *(a for arm in ("weak", "twin1", "twin2") for a in ("--vs", runs[arm])),
                    *extra)


def test_with_all_pairs_every_comparison_is_the_leaderboards_verdict(cli, family_runs):
    board = leaderboard_pairs(cli)
    report = family(cli, family_runs, "--all-pairs")
    assert report["family"] == "every pair of these 4 runs (6 pairs), as the leaderboard corrects"
    for comparison in report["comparisons"]:
        pair = board[frozenset(("strong", comparison["other"]["label"]))]
        assert comparison["holm_p"] == pytest.approx(pair["holm_p"], rel=1e-12)
        assert (comparison["holm_p"] < 0.05) == pair["separated"]


def test_the_declared_family_is_named_and_holm_is_over_exactly_its_pairs(cli, family_runs):
    board = leaderboard_pairs(cli)
    report = family(cli, family_runs)
    assert report["family"] == ("the 3 pairs strong vs weak, twin1, twin2 (declared with --vs; the leaderboard of "
                                "these runs corrects over all 6)")
    raw = [c["sign_flip"]["p_value"] for c in report["comparisons"]]
    assert [c["holm_p"] for c in report["comparisons"]] == pytest.approx(holm_by_hand(raw), rel=1e-12)
    # the same pair over every pair of the runs: Holm by hand over the leaderboard's six raw p-values
    labels = list(RATES)
    every = {frozenset(pair): board[frozenset(pair)]["difference"]["test"]["p_value"] for pair in combinations(labels, 2)}
    adjusted = dict(zip(every, holm_by_hand(list(every.values()))))
    for comparison in report["comparisons"]:
        key = frozenset(("strong", comparison["other"]["label"]))
        assert comparison["all_pairs_holm_p"] == pytest.approx(adjusted[key], rel=1e-12)
        assert comparison["all_pairs_separated"] == board[key]["separated"]


def test_letters_never_group_two_arms_a_test_separates(cli, family_runs):
    """Before, the letters came from the declared pairs only: weak and twin1 were never tested against
    each other and shared a letter although their paired p is below 1e-6."""
    board = leaderboard_pairs(cli)
    report = family(cli, family_runs)
    letters = {place["label"]: set(place["letters"]) for place in report["arms"]}
    assert board[frozenset(("weak", "twin1"))]["difference"]["test"]["p_value"] < 1e-6
    for a, b in combinations(RATES, 2):
        shares = bool(letters[a] & letters[b])
        assert shares == (not board[frozenset((a, b))]["separated"]), (a, b)


def test_the_text_names_the_family_prints_the_groups_and_notes_a_disagreement(cli, family_runs):
    args = [family_runs["strong"], *(a for arm in ("weak", "twin1", "twin2") for a in ("--vs", family_runs[arm]))]
    text = cli("family-test", *args).stdout
    assert "Holm over the 3 pairs strong vs weak, twin1, twin2 (declared with --vs" in text.splitlines()[0]
    assert "groups (letters from every pair of these runs, the leaderboard's family): " in text
    report = family(cli, family_runs)
    for comparison in report["comparisons"]:
        differs = (comparison["holm_p"] < 0.05) != comparison["all_pairs_separated"]
        assert (f"note: over every pair of these runs strong and {comparison['other']['label']} are" in text) == differs


def test_a_pair_the_declared_family_separates_and_the_leaderboard_does_not_is_named(cli, tmp_path, monkeypatch):
    """Seed 3: strong vs twin2 is separated by Holm over the 3 declared pairs (p ≈ 0.044) and not over
    all 6 (p ≈ 0.088) — the issue's "strong better than twin2" beside a leaderboard saying not separated."""
    monkeypatch.chdir(tmp_path)
    runs = write_four_arms(tmp_path, seed=3)
    board = leaderboard_pairs(cli)
    (declared,) = [c for c in family(cli, runs)["comparisons"] if c["other"]["label"] == "twin2"]
    assert declared["holm_p"] < 0.05 <= board[frozenset(("strong", "twin2"))]["holm_p"]
    assert declared["all_pairs_holm_p"] == pytest.approx(board[frozenset(("strong", "twin2"))]["holm_p"], rel=1e-12)
    args = [runs["strong"], *(a for arm in ("weak", "twin1", "twin2") for a in ("--vs", runs[arm]))]
    text = cli("family-test", *args).stdout
    held = board[frozenset(("strong", "twin2"))]["holm_p"]
    assert (f"note: over every pair of these runs strong and twin2 are not separated (Holm p = {held:.3f}); the "
            "declared family is smaller, so Holm corrects less") in text
    (with_all,) = [c for c in family(cli, runs, "--all-pairs")["comparisons"] if c["other"]["label"] == "twin2"]
    assert with_all["holm_p"] >= 0.05 and "no significant difference" in with_all["verdict"]
