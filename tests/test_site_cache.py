"""The build reads each run at most once, and a later build reads only what changed: per-run figures,
matrix columns and bootstrap intervals come back from .evalsite/site-cache, and the pages are the
same bytes as a build without the cache."""

from __future__ import annotations

import base64
import json
import math
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from example_support import run_example
from sitekit import tree_bytes

from evalsite.analysis import arms, verdict
from evalsite.analysis.arms import summarise_arms
from evalsite.analysis.interval_memo import (
    DRAWS,
    INTERVALS,
    PAIRS,
    SUMMARIES,
    SummaryMemo,
    column_key,
    kept_intervals,
    pair_key,
    recall_kept_intervals,
)
from evalsite.analysis.items import ItemMatrix
from evalsite.analysis.selection import ArmRun
from evalsite.execute.runner import execute_plan
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.plan import build_plan
from evalsite.project import find_project
from evalsite.site import build, build_site
from evalsite.stats import _counts, intervals, stability


@pytest.fixture()
def cache_project(tmp_path):
    """The example project (one repeat) with its runs, as a Project, for builds with a cache."""
    return find_project(run_example(tmp_path / "p", repeat=1))


@pytest.fixture()
def reads(monkeypatch) -> list[str]:
    """The run folders whose cases.jsonl the build reads."""
    seen: list[str] = []
    original = build.scan_cases

    def counting(directory: Path, **options):
        seen.append(directory.name)
        return original(directory, **options)

    monkeypatch.setattr(build, "scan_cases", counting)
    return seen


@pytest.fixture()
def bootstraps(monkeypatch) -> list[int]:
    """One entry per bootstrap interval actually computed (not answered from the memo)."""
    done: list[int] = []
    original = intervals._one_level_interval

    def counting(*args, **kwargs):
        done.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(intervals, "_one_level_interval", counting)
    return done


def test_a_build_reads_each_run_once_and_the_next_only_the_new_run(cache_project, reads):
    build_site(cache_project)
    assert sorted(reads) == sorted(p.name for p in cache_project.runs_dir.iterdir() if p.is_dir())
    reads.clear()
    rerun = build_plan(cache_project, load_manifest(cache_project.root / "experiments/arithmetic.yaml"), arm_ids=("sampler",), repeat=1)
    new_run = execute_plan(cache_project, rerun).runs[0].run_id
    report = build_site(cache_project)
    assert reads == [new_run]  # the runs table, home, matrix and item pages read the others' cached figures
    assert report.kept > 0  # the other runs' pages are kept
    cached = tree_bytes(cache_project.root / "site")
    shutil.rmtree(cache_project.root / ".evalsite" / "site-cache")
    reads.clear()
    build_site(cache_project, cache_project.root / "fresh")
    assert len(reads) == len([p for p in cache_project.runs_dir.iterdir() if p.is_dir()])  # no cache: every run is read
    assert tree_bytes(cache_project.root / "fresh") == cached


def test_the_bootstrap_intervals_of_a_build_are_kept_for_the_next_process(cache_project, bootstraps):
    INTERVALS.clear()  # as in a new process
    build_site(cache_project, full=True)
    computed = len(bootstraps)
    assert computed > 0 and (cache_project.root / ".evalsite/site-cache/intervals.json").is_file()
    first = tree_bytes(cache_project.root / "site")
    INTERVALS.clear()
    bootstraps.clear()
    build_site(cache_project, full=True)
    assert len(bootstraps) < computed  # the mean intervals came from the cache
    assert tree_bytes(cache_project.root / "site") == first


@pytest.fixture()
def pair_tests(monkeypatch) -> list[str]:
    """One entry per paired test or inverted interval the verdict actually computed."""
    done: list[str] = []
    difference, inverted = verdict.paired_difference, verdict.inverted_pair_interval
    monkeypatch.setattr(verdict, "paired_difference", lambda *a, **k: done.append("difference") or difference(*a, **k))
    monkeypatch.setattr(verdict, "inverted_pair_interval", lambda *a, **k: done.append("inverted") or inverted(*a, **k))
    return done


def test_the_paired_tests_of_a_build_are_kept_for_the_next_process(cache_project, pair_tests):
    INTERVALS.clear()  # as in a new process
    PAIRS.clear()
    build_site(cache_project, full=True)
    assert "difference" in pair_tests and "inverted" in pair_tests
    first = tree_bytes(cache_project.root / "site")
    INTERVALS.clear()
    PAIRS.clear()
    pair_tests.clear()
    build_site(cache_project, full=True)
    assert pair_tests == []  # every pair's test and interval came from the cache
    assert tree_bytes(cache_project.root / "site") == first


def test_the_stability_draws_of_a_build_are_kept_for_the_next_process(cache_project, monkeypatch):
    """Rank stability's resample means of each arm come back from the cache: the next process draws
    none again (the example's matrices are small, so every arm is kept here), same pages."""
    gathered: list[int] = []
    original = stability._full_size_means
    monkeypatch.setattr(stability, "KEPT_FROM_DRAWS", 0)
    monkeypatch.setattr(stability, "_full_size_means",
                        lambda values, *a, **k: gathered.append(values.shape[1]) or original(values, *a, **k))
    _kept_for_the_next_process(cache_project, DRAWS, gathered)


def _kept_for_the_next_process(project, memo, computed: list[int]) -> None:
    """A full build fills ``memo`` (``computed`` counts what it computed); the next process, given the
    kept payload alone, computes none of it again and writes the same pages."""
    memo.clear()  # as in a new process
    build_site(project, full=True)
    assert computed and memo.rows()
    first = tree_bytes(project.root / "site")
    memo.clear()
    computed.clear()
    build_site(project, full=True)
    assert computed == [] and tree_bytes(project.root / "site") == first


@pytest.mark.parametrize("counted", [False, True])
def test_kept_draws_are_recalled_bit_for_bit_and_means_of_another_shape_are_refused(cache_project, monkeypatch, counted):
    """Both kinds of kept means: items drawn one by one ("stability") and index draws tallied as
    counts of the distinct item rows ("tallied", ``counted``: every matrix drawn as counts)."""
    monkeypatch.setattr(stability, "KEPT_FROM_DRAWS", 0)
    if counted:
        monkeypatch.setattr(_counts, "COUNTS_FROM_DRAWS", 0)
        monkeypatch.setattr(_counts, "UNITS_PER_DISTINCT", 1)
    DRAWS.clear()
    build_site(cache_project, full=True)
    kept = {key: value.copy() for key, value in DRAWS.items()}
    assert kept and {key[3] for key in kept} == {"tallied" if counted else "stability"}
    payload = kept_intervals("code")
    DRAWS.clear()
    assert recall_kept_intervals(payload, "code")
    assert {key: value.tobytes() for key, value in DRAWS.items()} == {key: value.tobytes() for key, value in kept.items()}
    DRAWS.clear()
    short = [[*row[:-1], base64.b64encode(base64.b64decode(row[-1])[:-8]).decode()] for row in payload["draws"]]  # a mean short
    assert not recall_kept_intervals({**payload, "draws": short}, "code")


def test_kept_pairs_are_recalled_only_by_the_code_that_kept_them_and_a_bad_row_is_ignored(cache_project):
    PAIRS.clear()
    build_site(cache_project, full=True)
    payload = kept_intervals("code")
    assert payload["pairs"]
    PAIRS.clear()
    assert not recall_kept_intervals(payload, "other code") and PAIRS.rows() == []
    assert recall_kept_intervals(payload, "code") and PAIRS.rows() == payload["pairs"]
    PAIRS.clear()
    broken = [[*row[:-1], {**row[-1], "unknown": 1}] for row in payload["pairs"]]
    assert not recall_kept_intervals({**payload, "pairs": broken}, "code")
    differences = [row for row in payload["pairs"] if row[0] == "difference"]
    assert differences
    other_unit = [[*row[:-1], {**row[-1], "unit": "arm"}] for row in differences]  # not one of unit's values
    assert not recall_kept_intervals({**payload, "pairs": other_unit}, "code")
    text_p = [[*row[:-1], {**row[-1], "p_value": "0.5"}] for row in differences]  # a number as text
    assert not recall_kept_intervals({**payload, "pairs": text_p}, "code")


def test_a_verdict_from_kept_pair_tests_is_the_verdict_computed_afresh(pair_tests):
    """A new arm changes every pair's Holm levels and MDE level: the kept tests are brought up to
    date (only the new arm's pairs are tested) and the verdict is the one computed without them."""
    rng = np.random.default_rng(7)
    values = (rng.random((300, 4)) < [0.5, 0.62, 0.7, 0.55]).astype(float)
    labels = ["a", "b", "c", "d"]
    INTERVALS.clear()
    PAIRS.clear()
    verdict.verdict_of(values[:, :3], labels[:3])
    pair_tests.clear()
    kept = verdict.verdict_of(values, labels)
    assert pair_tests.count("difference") == 3  # the pairs with d
    INTERVALS.clear()
    PAIRS.clear()
    assert repr(kept) == repr(verdict.verdict_of(values, labels))


def test_a_pair_is_keyed_by_its_two_columns_in_order():
    """Each column is digested once (column_key) and a pair keyed by the two digests: the same values
    in another array give the same key; a changed value in either column, or the columns swapped, another."""
    rng = np.random.default_rng(3)
    values = (rng.random((500, 3)) < 0.6).astype(float)
    copy = np.array(values, order="F")
    keys = [column_key(values[:, arm]) for arm in range(3)]
    assert pair_key(keys[0], keys[1]) == pair_key(column_key(copy[:, 0]), column_key(copy[:, 1]))
    assert pair_key(keys[0], keys[1])[1:] == ((500, 2), "<f8")
    changed = values[:, 1].copy()
    changed[-1] = 1 - changed[-1]
    assert pair_key(keys[0], column_key(changed)) != pair_key(keys[0], keys[1])
    assert pair_key(keys[1], keys[0]) != pair_key(keys[0], keys[1])
    assert pair_key(keys[0], keys[2]) != pair_key(keys[0], keys[1])


def _arm_matrix(values: np.ndarray, rng: np.random.Generator) -> ItemMatrix:
    """Items × arms × 2 repeats of scores in quarters, verdicts, costs (one unknown in arm 1) and
    latencies, every case recorded."""
    n_items, n_arms, _ = values.shape
    cost = np.round(rng.random(values.shape) * 1e-3, 6)
    cost[5, 1, 0] = np.nan
    arms = tuple(ArmRun(f"arm{arm}", f"run{arm}", f"arm{arm}", None, "completed", None, None) for arm in range(n_arms))
    return ItemMatrix(arms, tuple(f"q{item}" for item in range(n_items)), (None,) * n_items, values,
                      (values >= 0.5).astype(float), cost, np.round(rng.lognormal(5, 0.5, values.shape), 3),
                      np.full(values.shape, 30.0), np.ones(values.shape, dtype=bool), (), None, ((0, 1),) * n_arms)


def test_kept_arm_summaries_are_the_ones_computed_afresh_and_only_a_changed_arm_is_summarised(monkeypatch):
    """The leaderboard's figures of an arm, kept by its cells, equal the figures computed without a
    memo (also after the JSON round trip the site cache makes); an arm whose cells change is
    summarised again, the others are not."""
    rng = np.random.default_rng(11)
    matrix = _arm_matrix(np.round(rng.random((400, 3, 2)) * 4) / 4, rng)
    fresh = summarise_arms(matrix, memo=None)
    summarised: list[int] = []
    original = arms._summary
    monkeypatch.setattr(arms, "_summary", lambda m, arm, *a: summarised.append(arm) or original(m, arm, *a))
    memo = SummaryMemo()
    assert repr(summarise_arms(matrix, memo=memo)) == repr(fresh) and summarised == [0, 1, 2]
    summarised.clear()
    for rows in (memo.rows(), json.loads(json.dumps(memo.rows()))):  # as kept_intervals gives them, and from the file
        recalled = SummaryMemo()
        recalled.recall(rows)
        assert repr(summarise_arms(matrix, memo=recalled)) == repr(fresh) and summarised == []
    changed = replace(matrix, score=matrix.score.copy())
    changed.score[7, 1, 1] = 1.0 - changed.score[7, 1, 1]
    kept = summarise_arms(changed, memo=recalled)
    assert summarised == [1]  # the changed arm alone
    assert repr(kept) == repr(summarise_arms(changed, memo=None))
    with pytest.raises(TypeError):  # figures with a field of another type are refused
        SummaryMemo().recall([[*row[:-1], {**row[-1], "n_items": "400"}] for row in memo.rows()])


def test_a_kept_arm_summary_agrees_with_plain_formulas():
    """Each kept figure against its definition written out: means over items of per-item means,
    sums of costs, nearest-rank percentiles of latencies, the spread of per-repeat means."""
    rng = np.random.default_rng(5)
    matrix = _arm_matrix(np.round(rng.random((300, 2, 2)) * 2) / 2, rng)
    memo = SummaryMemo()
    summarise_arms(matrix, memo=memo)
    for arm, kept in enumerate(summarise_arms(matrix, memo=memo)):
        scores, latencies = matrix.score[:, arm, :].tolist(), sorted(matrix.latency_ms[:, arm, :].ravel().tolist())
        assert kept.mean == pytest.approx(sum(sum(row) / 2 for row in scores) / 300, abs=1e-12)
        assert kept.pass_rate == pytest.approx(sum(sum(v >= 0.5 for v in row) / 2 for row in scores) / 300, abs=1e-12)
        assert (kept.n_items, kept.n_cases, kept.n_repeats) == (300, 600, 2)
        assert kept.latency.p50_ms == latencies[math.ceil(0.5 * 600) - 1]
        assert kept.latency.p95_ms == latencies[math.ceil(0.95 * 600) - 1]
        costs = matrix.cost_usd[:, arm, :].ravel().tolist()
        assert kept.cost.total == (None if arm == 1 else pytest.approx(sum(costs), rel=1e-12))
        repeat_means = [sum(row[r] for row in scores) / 300 for r in (0, 1)]
        assert kept.noise is not None and kept.noise.std == pytest.approx(abs(repeat_means[0] - repeat_means[1]) / math.sqrt(2))
        assert kept.mean_interval == intervals.bootstrap_ci(np.mean(matrix.score[:, arm, :], axis=1), seed=0)


def test_the_arm_summaries_of_a_build_are_kept_for_the_next_process(cache_project, monkeypatch):
    summarised: list[int] = []
    original = arms._summary
    monkeypatch.setattr(arms, "_summary", lambda m, arm, *a: summarised.append(arm) or original(m, arm, *a))
    _kept_for_the_next_process(cache_project, SUMMARIES, summarised)
