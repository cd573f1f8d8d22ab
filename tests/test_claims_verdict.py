"""``A beats B`` claims are questions to the dataset's verdict (issue 26, item 1): the same runs,
clusters and Holm family as the leaderboard, so check-claims never contradicts it; ``(unadjusted)``
asks the pair's own cluster-aware test and says so. The error rate under a clustered null is
checked by a seeded simulation, against the old item-level test as the reference of what goes
wrong without clusters."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest
from reference_support import holm_by_hand
from sitekit import case, write_run

from evalsite.analysis.claims import Beats, ClaimSyntaxError, check_claims, find_directives, parse_claim
from evalsite.experiment.datasets import Dataset, load_dataset
from evalsite.project import Project
from evalsite.stats import sign_flip_test


def write_dataset(root: Path, name: str, groups: list[int] | None, n_items: int) -> Dataset:
    """``data/<name>.jsonl``: ``n_items`` rows, each in cluster ``groups[i]`` (``metadata.group``) when given."""
    rows = [{"id": f"q{i:03d}", "input": f"question {i}", "expected": "yes",
             **({"metadata": {"group": f"c{groups[i]}"}} if groups is not None else {})} for i in range(n_items)]
    path = root / "data" / f"{name}.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return load_dataset(path)


def write_arm(root: Path, run_id: str, arm: str, dataset: Dataset, scores: np.ndarray) -> None:
    """One completed run of ``arm``: ``scores`` is items × repeats of 0/1 (the case score)."""
    cases = [dict(case(item.item_id, score=float(s), passed=bool(s), repeat=r), item_sha=item.sha)
             for item, row in zip(dataset.items, scores) for r, s in enumerate(row)]
    write_run(root / "runs", run_id, cases, arm=arm, dataset_id=dataset.dataset_id,
              dataset_path=f"data/{dataset.name}.jsonl")


def claim_results(root: Path, lines: list[str]) -> list[dict]:
    report = root / "reports" / "claims.md"
    report.parent.mkdir(exist_ok=True)
    report.write_text("".join(f"{{{{ claim: {line} }}}}\n" for line in lines))
    return [r.to_json() for r in check_claims(Project(root, {}), (report,))]


# ----------------------------------------------------------------------------- grammar


def test_unadjusted_is_asked_for_explicitly():
    plain = parse_claim("claim", "arm=a beats arm=b on dataset=d, p < 0.05")
    raw = parse_claim("claim", "arm=a beats arm=b on dataset=d, p < 0.05 (unadjusted)")
    assert isinstance(plain, Beats) and isinstance(raw, Beats)
    assert (plain.unadjusted, raw.unadjusted, raw.alpha) == (False, True, 0.05)
    assert parse_claim("claim", "arm=a beats arm=b (unadjusted)").unadjusted  # type: ignore[union-attr]


@pytest.mark.parametrize("body, message", [
    ("arm=a beats arm=b, p < 1.5", "the bound must be a number between 0 and 1"),
    ("arm=a beats arm=b, p < 0.05 (holm)", "expected 'unadjusted', found 'holm'"),
    ("arm=a, evaluator=x beats arm=b, evaluator=y", "both arms must read one evaluator"),
    ("arm=a, dataset=x beats arm=b, dataset=y", "both arms must be on one dataset"),
])
def test_bad_beats_claims_name_the_problem(body, message):
    with pytest.raises(ClaimSyntaxError, match=message):
        parse_claim("claim", body)


# ----------------------------------------------------------------------------- clustered null


def clustered_null_scores(rng: np.random.Generator, clusters: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Two arms identical in distribution, whose pass probability has a strong per-cluster,
    per-arm effect (so items of a cluster are not independent)."""
    logits = rng.normal(0.0, 1.5, size=(2, clusters))
    chance = (1 / (1 + np.exp(-logits))).repeat(size, axis=1)
    a, b = (rng.random(chance.shape) < chance).astype(float)
    return a[:, None], b[:, None]


def test_claims_under_a_clustered_null_hold_at_about_alpha(tmp_path):
    clusters, size, datasets = 30, 8, 40
    rng = np.random.default_rng(26)
    groups = np.repeat(np.arange(clusters), size).tolist()
    lines, item_level = [], 0
    for k in range(datasets):
        dataset = write_dataset(tmp_path, f"null{k:02d}", groups, clusters * size)
        a, b = clustered_null_scores(rng, clusters, size)
        write_arm(tmp_path, f"20260101T00{k:02d}00Z-A-{k:02d}00", "A", dataset, a)
        write_arm(tmp_path, f"20260101T00{k:02d}01Z-B-{k:02d}01", "B", dataset, b)
        lines += [f"arm=A beats arm=B on dataset=null{k:02d}", f"arm=B beats arm=A on dataset=null{k:02d}"]
        old = sign_flip_test(a[:, 0], b[:, 0], n_resamples=2000)  # what claims ran before: items, no clusters
        item_level += old.p_value < 0.05
    results = claim_results(tmp_path, lines)
    assert {r["status"] for r in results} <= {"holds", "fails"}
    assert all(r["numbers"]["unit"] == "cluster" and r["numbers"]["n_units"] == clusters for r in results)
    false_beats = sum(r["status"] == "holds" for r in results)
    assert false_beats / len(results) <= 0.06  # each claim asks one direction: about α/2 expected
    assert item_level / datasets > 0.15  # the old claims' item-level test separates far more often than α


# ----------------------------------------------------------------------------- four arms


ARMS = {"strong": 0.77, "weak": 0.60, "twin1": 0.72, "twin2": 0.72}


@dataclass
class FourArms:
    root: Path
    dataset: Dataset
    groups: list[int] | None
    scores: dict[str, np.ndarray]


@pytest.fixture(params=[False, True], ids=["items", "clusters"])
def four_arms(request, tmp_path, monkeypatch) -> FourArms:
    """Two truly different arms and two identical twins, 200 items × 3 repeats (with clusters:
    40 clusters of 5 items declared by ``metadata.group``)."""
    n_items = 200
    groups = np.repeat(np.arange(40), 5).tolist() if request.param else None
    dataset = write_dataset(tmp_path, "four", groups, n_items)
    rng = np.random.default_rng(7)
    difficulty = rng.normal(0, 1.0, n_items)
    scores = {}
    for index, (arm, accuracy) in enumerate(ARMS.items()):
        logit = np.log(accuracy / (1 - accuracy)) - difficulty
        scores[arm] = (rng.random((n_items, 3)) < 1 / (1 + np.exp(-logit[:, None]))).astype(float)
        write_arm(tmp_path, f"20260101T0000{index:02d}Z-{arm}-000{index}", arm, dataset, scores[arm])
    monkeypatch.chdir(tmp_path)
    return FourArms(tmp_path, dataset, groups, scores)


def test_check_claims_and_the_leaderboard_agree_on_every_pair(cli, four_arms):
    board = cli.json("leaderboard")
    pairs = {(p["ahead_label"], p["behind_label"]): p for p in board["verdict"]["pairs"]}
    assert len(pairs) == 6
    raw = [p["difference"]["p_value"] for p in pairs.values()]
    assert [p["holm_p"] for p in pairs.values()] == pytest.approx(holm_by_hand(raw), rel=1e-12)
    ordered = list(permutations(ARMS, 2))
    results = claim_results(four_arms.root, [f"arm={a} beats arm={b}" for a, b in ordered]
                            + [f"arm={a} beats arm={b}, p < 0.05 (unadjusted)" for a, b in ordered])
    adjusted, unadjusted = results[:len(ordered)], results[len(ordered):]
    for (a, b), claim, raw_claim in zip(ordered, adjusted, unadjusted):
        pair = pairs.get((a, b)) or pairs[(b, a)]
        leads = (pair["ahead_label"], pair["behind_label"]) == (a, b)
        sign = 1 if leads else -1
        assert claim["status"] == ("holds" if leads and pair["separated"] else "fails"), (a, b, claim["detail"])
        numbers = claim["numbers"]
        assert numbers["p_value"] == pair["holm_p"] and numbers["adjustment"] == board["verdict"]["correction"]
        assert numbers["mean_diff"] == sign * pair["difference"]["mean_diff"]
        for asked, interval in ((numbers, pair["interval"]), (raw_claim["numbers"], pair["difference"]["interval"])):
            # the Holm-level interval beside the Holm p; the raw bootstrap one beside the raw p
            assert sorted((asked["low"], asked["high"])) == sorted((sign * interval["low"], sign * interval["high"]))
            assert asked["confidence"] == interval["confidence"]
        assert (numbers["low"] > 0) == (claim["status"] == "holds")  # the claim's interval agrees with its verdict
        assert f"({100 * pair['interval']['confidence']:.3g}% Holm-level interval)" in claim["detail"]
        assert "raw bootstrap interval" in raw_claim["detail"]
        shown_p = "p < 0.001" if pair["holm_p"] < 0.001 else f"p = {pair['holm_p']:.3f}"  # never 0.000 nor 7.7e-11
        assert f"{shown_p} {board['verdict']['correction']}" in claim["detail"]
        assert (numbers["unit"], numbers["n_units"], numbers["n"]) == (
            pair["difference"]["unit"], pair["difference"]["n_units"], board["n_items"])
        assert set(claim["runs"]) == {arm["summary"]["arm"]["run_id"] for arm in board["arms"] if arm["label"] in (a, b)}
        assert raw_claim["numbers"]["p_value"] == pair["difference"]["p_value"]
        assert raw_claim["status"] == ("holds" if leads and pair["difference"]["p_value"] < 0.05 else "fails")
        assert "unadjusted" in raw_claim["detail"] and "Holm" in claim["detail"]
    assert {p["difference"]["unit"] for p in pairs.values()} == {"item" if four_arms.groups is None else "cluster"}
    assert any("p < 0.001" in c["detail"] for c in adjusted)
    # the case: a pair the raw test would call "beats" that the Holm family does not separate
    assert any(r["status"] == "holds" and c["status"] == "fails" for c, r in zip(adjusted, unadjusted))


def test_a_pinned_run_off_the_leaderboard_needs_unadjusted(cli, four_arms):
    root = four_arms.root
    board = cli.json("leaderboard")
    run_of = {arm["label"]: arm["summary"]["arm"]["run_id"] for arm in board["arms"]}
    shown = claim_results(root, [f"run={run_of['strong']} beats arm=weak"])[0]
    assert shown["status"] == "holds" and "on the leaderboard of four@" in shown["detail"]
    older = "20251231T000000Z-strong-ffff"  # an older run of strong (other answers): not on the leaderboard
    old_scores = 1 - four_arms.scores["weak"]
    write_arm(root, older, "strong", four_arms.dataset, old_scores)
    asked, alone = claim_results(root, [f"run={older} beats arm=weak", f"run={older} beats arm=weak, p < 0.05 (unadjusted)"])
    assert asked["status"] == "cannot be checked"
    assert f"run {older} (run={older}) is not on the leaderboard" in asked["detail"]
    assert "an older run of the same config" in asked["detail"] and "add (unadjusted)" in asked["detail"]
    assert "alone" in alone["detail"] and "unadjusted" in alone["detail"] and alone["runs"] == [older, run_of["weak"]]
    differences = old_scores.mean(axis=1) - four_arms.scores["weak"].mean(axis=1)
    if four_arms.groups is not None:  # the unit is the cluster: its total difference
        differences = np.bincount(four_arms.groups, weights=differences)
    reference = sign_flip_test(differences, np.zeros_like(differences))
    assert alone["numbers"]["p_value"] == pytest.approx(reference.p_value, rel=1e-9)
    assert alone["status"] == ("holds" if differences.sum() > 0 and reference.p_value < 0.05 else "fails")


# ----------------------------------------------------------------------------- the documented examples


DOCS = Path(__file__).resolve().parent.parent / "docs" / "reference" / "claims.md"
REPO = DOCS.parent.parent.parent


def test_the_documented_examples_hold_on_the_example_project(cli, example_with_runs):
    text = DOCS.read_text()
    examples = [f"{{{{ {d.kind}:{d.body}}}}}" for d in find_directives(text)]
    assert len(examples) == 4 and any("(unadjusted)" in e for e in examples)
    report = example_with_runs / "reports" / "docs.md"
    report.parent.mkdir(exist_ok=True)
    report.write_text("\n".join(examples) + "\n")
    results = json.loads(cli("check-claims", str(report), "--json").stdout)
    assert [r["status"] for r in results] == ["holds"] * 4, results
    shutil.copytree(REPO / "reports", example_with_runs / "reports", dirs_exist_ok=True)
    printed = cli("check-claims", "reports/arithmetic.md").stdout.splitlines()
    documented = text.split("prints one line per directive, for example\n\n```\n")[1].split("\n```")[0]
    assert documented in printed
    (example_with_runs / "evalsite.toml").write_text('[analysis]\ncluster_key = "kind"\n')
    clustered = cli("check-claims", "reports/arithmetic.md")
    assert clustered.exit_code == 1
    beats = next(line for line in clustered.stdout.splitlines() if "beats" in line)
    assert "fails" in beats and "p = 1.000 Holm over the 3 pairs shown" in beats and "in 4 clusters" in beats
    assert "not separated" in beats
