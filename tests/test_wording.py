"""The wording of issue 26, item 11: one p-value format everywhere (``< 0.001``, never ``0.000``, ``0``
or ``7.7e-11``), right plurals, no "noise"/"tied" claims the tests do not make, and the agreement
sentence and critical-difference line only when they say something."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from sitekit import case, write_run

from evalsite.analysis.verdict import verdict_of
from evalsite.analysis.wording import count_of, p_clause, p_text
from evalsite.cli.analysis_output import _noise_label
from evalsite.site.formatting import FILTERS

REPO = Path(__file__).resolve().parent.parent
#: A p-value printed as 0.000, as 0, or in scientific notation: what no surface may show.
BAD_P = re.compile(r"\bp(?: =|:)? ?(?:0\.0+(?![.\d])|0(?![.\d])|\d(?:\.\d+)?e-\d+)")


@pytest.mark.parametrize("value, shown", [
    (0.0, "< 0.001"), (7.7e-11, "< 0.001"), (0.000999, "< 0.001"), (0.001, "0.001"), (0.0712, "0.071"),
    (0.89, "0.890"), (1.0, "1.000"), (None, "—"), (float("nan"), "—"),
])
def test_one_p_value_format(value, shown):
    assert p_text(value) == shown
    assert FILTERS["pvalue"](value) == shown
    clause = "p < 0.001" if shown == "< 0.001" else f"p = {shown}"
    assert p_clause(value) == clause
    assert FILTERS["p_is"](value) == clause


def test_plurals():
    assert count_of(1, "pair") == "1 pair" and count_of(3, "pair") == "3 pairs"
    two_arms = verdict_of(np.random.default_rng(0).random((20, 2)), ["a", "b"])
    assert two_arms.correction == "Holm over the 1 pair shown"
    assert verdict_of(np.random.default_rng(0).random((20, 3)), ["a", "b", "c"]).correction == "Holm over the 3 pairs shown"


def test_beyond_noise_is_said_only_when_the_noise_test_rejects():
    """A separated pair whose noise test gives p = 0.89 was labelled "beyond σ"."""
    assert not _noise_label(0.05, 0.89, False, 0.05).startswith("beyond")
    assert _noise_label(0.05, 0.89, False, 0.05) == (
        "σ 0.050 (p = 0.890): not noise by the paired test, though the spread alone would not separate Δ")
    assert _noise_label(0.05, 0.0001, False, 0.05) == "beyond σ 0.050 (p < 0.001)"
    assert _noise_label(0.05, 0.4, True, 0.05) == "within σ 0.050 (p = 0.400)"


@pytest.mark.slow
def test_a_null_leaderboard_has_no_agreement_sentence():
    """Identical arms: whenever nothing is separated and Friedman does not reject, the "order follows the
    mean, not the mean ranks" sentence says nothing and is not printed — though mean ranks and means
    often disagree in order on such data (which printed it before)."""
    inverted = 0
    for seed in range(40):
        values = np.random.default_rng(seed).random((30, 3))
        verdict = verdict_of(values, ["a", "b", "c"])
        assert verdict.friedman is not None
        if any(p.separated for p in verdict.pairs) or verdict.friedman.p_value < verdict.alpha:
            continue
        ranks = verdict.friedman.mean_ranks
        inverted += any(ranks[p.behind] < ranks[p.ahead] - 1e-12 for p in verdict.pairs)
        assert verdict.agreement is None, seed
    assert inverted >= 5  # the old rule printed the sentence for each of these


@pytest.fixture
def null_project(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    (tmp_path / "evalsite.toml").write_text("")
    (tmp_path / "data").mkdir()
    for index, arm in enumerate(("a", "b", "c")):
        cases = [case(f"i{item:02d}", score=float(ok), passed=ok) for item in range(40) for ok in [bool(rng.random() < 0.5)]]
        write_run(tmp_path / "runs", f"20260101T00000{index}Z-{arm}-000{index}", cases, arm=arm)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_no_critical_difference_picture_when_friedman_does_not_reject(cli, null_project):
    board = cli.json("leaderboard")
    assert board["verdict"]["friedman"]["p_value"] >= 0.05
    text = cli("leaderboard").stdout
    assert "critical difference" not in text.replace("no critical-difference picture", "")
    assert "no critical-difference picture: Friedman does not reject" in text
    assert not BAD_P.search(text)


def test_family_test_prints_no_p_as_zero_or_in_scientific_notation(cli, null_project):
    runs = sorted(p.name for p in (null_project / "runs").iterdir())
    # a run against a copy of itself shifted: every item differs, p is tiny
    cases = [case(f"i{item:02d}", score=1.0) for item in range(40)]
    write_run(null_project / "runs", "20260101T000009Z-top-0009", cases, arm="top")
    text = cli("family-test", "20260101T000009Z-top-0009", *(a for run in runs for a in ("--vs", run))).stdout
    assert "< 0.001" in text
    assert not re.search(r"\d(?:\.\d+)?e-\d+", text), text
    assert not re.search(r"\s0\.000\s", text.split("groups")[0].split("\n", 3)[3]), text


@pytest.mark.parametrize("phrase", ["smaller than this is noise", " (tied)", "tied with others", "p 0.000",
                                    "{len(board.verdict.pairs)} pairs"])
def test_retired_phrases_are_gone_from_the_package_and_templates(phrase):
    files = [*REPO.joinpath("evalsite").rglob("*.py"), *REPO.joinpath("templates").rglob("*.html")]
    hits = [str(f.relative_to(REPO)) for f in files if phrase in f.read_text(encoding="utf-8")]
    assert not hits, f"{phrase!r} in {hits}"


def test_text_and_markdown_tables_print_p_columns_in_the_one_format():
    from evalsite.analysis.ci_files import markdown_table
    from evalsite.cli.output import format_cell

    row = {"p": 1.2e-9, "holm_p": 0.0712, "Holm p": 0.0004, "mean": 0.0004, "top_p": 0.0004}
    assert markdown_table([row], list(row)).splitlines()[-1] == "| < 0.001 | 0.071 | < 0.001 | 0.000 | 0.000 |"
    assert [format_cell(value, column) for column, value in row.items()] == ["< 0.001", "0.071", "< 0.001", "0.000", "0.000"]
