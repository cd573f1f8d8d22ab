"""The rules of the one run summary (evalsite.analysis.summary.summarise_run), case by case, and
the same critical rows for `evalsite show` and the site when the cases did not record them."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sitekit import case as site_case
from sitekit import write_run

from evalsite.analysis.summary import summarise_run
from evalsite.project import find_project
from evalsite.site import build_site, paths


def case(item, *, repeat=0, score=1.0, passed=True, error=None, critical=False, score_error=None, scores=None):
    entries = scores if scores is not None else [{"evaluator": "e", "version": "v", "score": score, "passed": passed,
                                                  "label": None, "error": score_error, "skipped": False}]
    return {"item_id": item, "repeat": repeat, "score": score, "passed": passed, "error": error,
            "critical": critical, "scores": entries}


@pytest.mark.parametrize(("row", "fails"), [
    (case("c", passed=None, score=0.3, critical=True), False),               # no pass rule: neither passes nor fails
    (case("c", passed=None, score=0.0, critical=True, error="boom"), True),  # ... unless it errored
    (case("c", passed=None, score=0.3, critical=True, score_error="bad"), True),  # an evaluator raised
    (case("c", passed=False, score=0.0, critical=True), True),              # a pass rule failed
    (case("c", passed=True, critical=True), False),
    (case("c", passed=False, score=0.0), False),                            # not critical
])
def test_which_critical_rows_fail(row, fails):
    summary = summarise_run([row, case("other")])
    assert summary.critical_failures == (("c",) if fails else ())


def test_a_failed_generation_gives_no_pass_rule_to_an_evaluator_that_has_none():
    measured = {"evaluator": "m", "version": "v", "score": 0.4, "passed": None, "label": None, "error": None,
                "skipped": False}
    generation_failed = dict(measured, score=0.0, passed=False)
    cases = [case("a", passed=None, score=0.4, scores=[measured]),
             case("b", passed=False, score=0.0, error="HTTP 500", scores=[generation_failed])]
    summary = summarise_run(cases)
    assert summary.pass_rate is None and summary.evaluators["m"].pass_rate is None
    assert summary.passed is False  # the run had an error
    assert summary.mean_score == pytest.approx(0.2)


def test_means_weigh_every_item_once_whatever_its_repeats():
    cases = [case("a", repeat=r, score=1.0) for r in range(3)] + [case("b", score=0.0, passed=False)]
    summary = summarise_run(cases)
    assert summary.mean_score == 0.5 and summary.pass_rate == 0.5 and summary.repeats == (0, 1, 2)


def test_a_run_where_some_scored_row_has_no_verdict_has_no_pass_rate():
    summary = summarise_run([case("a"), case("b", passed=None, score=0.5)])
    assert summary.pass_rate is None and summary.passed_cases is None
    assert summary.evaluators["e"].pass_rate == 0.5  # the evaluator's: passes / scores


cell = st.tuples(st.sampled_from(["q1", "q2", "q10", "x"]), st.integers(0, 2), st.sampled_from([0.0, 0.25, 1.0]),
                 st.booleans(), st.booleans(), st.one_of(st.none(), st.floats(0.0001, 0.01)))


@settings(max_examples=60, deadline=None)
@given(st.lists(cell, min_size=1, max_size=20, unique_by=lambda c: (c[0], c[1])), st.randoms(use_true_random=False))
def test_the_summary_does_not_depend_on_the_order_of_the_cases(cells, shuffler: random.Random):
    cases = [dict(case(item, repeat=repeat, score=score, passed=score == 1.0, critical=critical,
                       error="boom" if errored else None), cost_usd=cost, latency_ms=10.0 + score)
             for item, repeat, score, critical, errored, cost in cells]
    shuffled = list(cases)
    shuffler.shuffle(shuffled)
    assert summarise_run(shuffled).to_json() == summarise_run(cases).to_json()


def test_show_and_the_site_read_critical_rows_from_the_dataset_while_it_matches(cli, tmp_path, monkeypatch):
    """Cases written before the `critical` flag existed: the dataset file stands in while it
    still holds the rows the run scored, for `show` and the site alike; then it is unknown."""
    from evalsite.experiment.datasets import load_dataset

    root = tmp_path / "old"
    (root / "data").mkdir(parents=True)
    rows = [{"id": "a", "input": "q", "expected": "x", "metadata": {"critical": True}}, {"id": "b", "input": "q", "expected": "x"}]
    data = root / "data/d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_id = "20260101T000000Z-a-0001"
    write_run(root / "runs", run_id, [site_case("a", passed=False, score=0.0), site_case("b")],
              dataset_id=load_dataset(data).dataset_id, dataset_path="data/d.jsonl")
    monkeypatch.chdir(root)

    def figures():
        build_site(find_project(root))
        shown = cli.json("show", run_id)
        (listed,) = json.loads((root / "site" / f"{paths.RUNS.removesuffix('.html')}.runs.json").read_text())
        return shown["critical_failures"], listed["critical_failures"]

    assert figures() == (["a"], 1)
    data.write_text(data.read_text().replace('"x"}', '"y"}', 1))  # the dataset changed since the run
    assert figures() == (None, None)


@pytest.mark.parametrize(("figures", "ok"), [
    ({"errors": 0, "critical_failures": [], "passed": True}, True),
    ({"errors": 0, "critical_failures": [], "passed": None}, True),  # no pass rule: nothing failed
    ({"errors": 1, "critical_failures": [], "passed": None}, False),
    ({"errors": 0, "critical_failures": ["c"], "passed": None}, False),
    ({"errors": 0, "critical_failures": None, "passed": True}, True),  # critical rows unknown
    ({"errors": 0, "critical_failures": [], "passed": False}, False),
])
def test_run_and_rescore_exit_by_one_rule(figures, ok):
    from evalsite.execute.outcomes import BatchOutcome, RunOutcome
    from evalsite.execute.rescore import RescoreOutcome
    from evalsite.runlog.records import RunStatus
    from evalsite.runlog.totals import RunTotals

    totals = RunTotals.from_json(figures, "figures")
    run = RunOutcome("r", "a", RunStatus.COMPLETED, totals)
    batch = BatchOutcome([run], [], None, None, 0.0)
    rescored = RescoreOutcome("r2", "r", RunStatus.COMPLETED, totals, [])
    assert run.ok is batch.ok is rescored.ok is ok


def test_summarising_a_run_loads_no_masked_arrays():
    """`evalsite run` summarises every run it writes: numpy's unique() would load numpy.ma for it."""
    code = ("import sys\nfrom evalsite.analysis.summary import summarise_run\n"
            "rows = [{'item_id': f'i{n % 7}', 'repeat': n // 7, 'score': 1.0, 'passed': True, 'error': None,\n"
            "         'critical': False, 'scores': []} for n in range(21)]\n"
            "summary = summarise_run(rows)\nassert summary.totals(planned=21).cases == 21, summary\n"
            "print('numpy.ma' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@given(st.lists(st.integers(-(2**62), 2**62)))
def test_the_summarys_distinct_codes_are_numpys_unique(values):
    import numpy as np

    from evalsite.analysis.summary import _distinct

    codes = np.array(values, dtype=np.int64)
    assert _distinct(codes) == np.unique(codes).tolist()
