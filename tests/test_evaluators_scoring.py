"""How a case's scores combine, multi-turn scopes, the registry, and the run aggregates."""

from __future__ import annotations

import asyncio

import pytest

from evalsite.analysis.summary import summarise_run
from evalsite.errors import EvaluatorError
from evalsite.scoring.case import score_case
from evalsite.scoring.evaluators import CaseView, Evaluator, Outcome, base, build_evaluators, register_evaluator


class Explodes(Evaluator):
    """A test evaluator that always throws."""

    param_names = ()

    def measure(self, case):
        raise RuntimeError("kaboom")


class LabelOnly(Evaluator):
    """A categorical evaluator with no pass rule: labels the output's first word."""

    param_names = ()

    def measure(self, case):
        return Outcome(label=str(case.output).split()[0])


class TurnProbe(Evaluator):
    """Labels what a view carries, to check the per-turn views."""

    def measure(self, case):
        return Outcome(label=f"{case.turn}|{case.input}|{case.output}|{len(case.transcript)}|{case.expected}")


@pytest.fixture(autouse=True)
def test_evaluators():
    """Register the test evaluators exactly as a user's would be, in a registry restored afterwards."""
    with base.EVALUATORS.isolated():
        register_evaluator("test_explodes")(Explodes)
        register_evaluator("test_label")(LabelOnly)
        register_evaluator("test_turn_probe")(TurnProbe)
        yield


def case_score(specs, output="Paris", expected="Paris", error=None, **fields):
    evaluators = build_evaluators(specs)
    view = CaseView(input="q", output=output, expected=expected, row=fields.pop("row", {}), **fields)
    return asyncio.run(score_case(evaluators, view, error))


def test_case_score_is_the_weighted_mean_of_evaluators_that_scored():
    result = case_score([
        {"type": "exact"},
        {"type": "contains", "value": "London", "weight": 3},
        {"type": "test_explodes"},
    ])
    assert result.score == pytest.approx((1 * 1 + 0 * 3) / 4)
    assert result.passed is False


def test_a_throwing_evaluator_records_its_error_and_the_others_still_score():
    result = case_score([{"type": "exact"}, {"type": "test_explodes"}])
    exact, explodes = result.scores
    assert (exact.score, exact.passed, exact.error) == (1.0, True, None)
    assert (explodes.score, explodes.passed, explodes.error) == (None, False, "RuntimeError: kaboom")
    assert result.score == 1.0 and result.passed is False


def test_no_evaluators_is_unscored_never_perfect():
    result = case_score([])
    assert (list(result.scores), result.score, result.passed) == ([], None, None)
    assert case_score([], error="timeout").passed is False


def test_failed_generation_scores_zero_everywhere_with_the_reason():
    result = case_score([{"type": "exact"}, {"type": "test_label"}], output=None, error="HTTP 500")
    assert [(s.score, s.passed, s.detail) for s in result.scores] == [(0.0, False, "generation failed: HTTP 500")] * 2
    assert (result.score, result.passed) == (0.0, False)


def test_evaluators_without_a_pass_rule_do_not_decide_passed():
    result = case_score([{"type": "test_label"}], output="Paris is the capital")
    assert (result.scores[0].label, result.score, result.passed) == ("Paris", None, None)
    assert case_score([{"type": "test_label"}, {"type": "exact"}]).passed is True


def test_zero_weight_scores_but_does_not_count():
    assert case_score([{"type": "exact", "weight": 0}]).score is None
    assert case_score([{"type": "exact", "weight": 0}, {"type": "contains", "value": "x"}]).score == 0.0


THREAD = dict(
    row={"turns": ["Hi", {"role": "user", "content": "Order #1234"}, "Refund?"]},
    turn_outputs=["Hello!", "Found #1234", "No"],
    transcript=[
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Order #1234"}, {"role": "assistant", "content": "Found #1234"},
        {"role": "user", "content": "Refund?"}, {"role": "assistant", "content": "No"},
    ],
)


def test_single_turn_scope_scores_each_turn_against_its_expected_entry():
    result = case_score([{"type": "exact", "scope": "single_turn"}], output="No",
                        expected=["Hello!", "Found #1234", "Yes"], **THREAD)
    assert [(s.turn, s.passed) for s in result.scores] == [(1, True), (2, True), (3, False)]
    assert result.score == pytest.approx(2 / 3) and result.passed is False


def test_single_turn_views_carry_the_turns_message_and_the_conversation_so_far():
    result = case_score([{"type": "test_turn_probe", "scope": "single_turn"}], output="No", expected="same", **THREAD)
    assert [s.label for s in result.scores] == [
        "1|Hi|Hello!|2|same", "2|Order #1234|Found #1234|4|same", "3|Refund?|No|6|same",
    ]


def test_single_turn_with_a_wrong_length_expected_list_is_an_error():
    result = case_score([{"type": "exact", "scope": "single_turn"}], expected=["a", "b"], **THREAD)
    (only,) = result.scores
    assert only.error == "expected has 2 entries for 3 turns"


def test_thread_scope_scores_the_conversation_once():
    result = case_score([{"type": "contains", "value": "No"}], output="No", expected=None, **THREAD)
    (only,) = result.scores
    assert (only.turn, only.passed) == (None, True)


def test_single_turn_scope_on_a_single_turn_row_scores_once():
    (only,) = case_score([{"type": "exact", "scope": "single_turn"}]).scores
    assert (only.turn, only.passed) == (None, True)


@pytest.mark.parametrize(
    "specs, message",
    [
        ([{"type": "nope"}], r"evaluators\[0\]\.type: unknown evaluator 'nope' \(known: code_tests, contains, .*python:…"),
        (["exact"], r"evaluators\[0\]: needs a mapping with a 'type'"),
        ([{"type": "exact", "weight": -1}], "weight: needs a number of at least 0, got -1"),
        ([{"type": "exact", "threshold": 7}], "threshold: needs a number from 0 to 1, got 7"),
        ([{"type": "exact", "scope": "turns"}], "scope: needs one of thread, single_turn, got 'turns'"),
        ([{"type": "exact"}, {"type": "exact"}], "duplicate name 'exact'"),
    ],
)
def test_bad_specs_are_one_line_errors(specs, message):
    with pytest.raises(EvaluatorError, match=message):
        build_evaluators(specs)


def test_every_bad_spec_is_reported_at_once():
    with pytest.raises(EvaluatorError) as raised:
        build_evaluators([{"type": "nope"}, {"type": "length"}, {"type": "exact"}])
    assert raised.value.message.count("evaluators[") == 2


def test_version_hashes_type_params_threshold_and_scope():
    specs = [
        {"type": "similarity"},
        {"type": "similarity", "ignore_case": True},
        {"type": "similarity", "threshold": 0.5},
        {"type": "similarity", "scope": "single_turn"},
        {"type": "exact"},
    ]
    versions = [build_evaluators([spec])[0].version for spec in specs]
    assert len(set(versions)) == len(specs)
    assert build_evaluators([{"type": "similarity", "name": "other", "weight": 2}])[0].version == versions[0]


# Run aggregates, computed by hand from the case records below.


def summarise_cases(cases):
    return summarise_run(cases).to_json()


def case(item, scores, critical=False, error=None, **extra):
    ruled = [s["passed"] for s in scores if s.get("passed") is not None]
    return {"item_id": item, "repeat": 0, "error": error, "critical": critical, "scores": scores,
            "score": extra.get("score"), "passed": all(ruled) if ruled else None}


def s(evaluator, score=None, passed=None, label=None, error=None, skipped=False, turn=None):
    return {"evaluator": evaluator, "version": "v1", "score": score, "passed": passed, "label": label,
            "error": error, "skipped": skipped, "turn": turn}


CASES = [
    case("a", [s("exact", 1.0, True), s("tone", label="polite"), s("judge", 0.9, True)], score=0.95),
    case("b", [s("exact", 0.0, False), s("tone", label="rude"), s("judge", error="unparseable", passed=False)],
         critical=True, score=0.0),
    case("c", [s("exact", skipped=True, passed=False), s("tone", label="polite"), s("judge", 0.5, False)], score=0.5),
    case("d", [s("exact", 0.0, False), s("tone", label="polite"), s("judge", 0.0, False)], error="HTTP 500", score=0.0),
]


def test_per_evaluator_aggregates():
    evaluators = summarise_cases(CASES)["evaluators"]
    assert evaluators["exact"] == {
        "version": "v1", "n": 4, "ok": 3, "errors": 0, "skipped": 1, "pass_rate": 0.25,
        "mean": pytest.approx(1 / 3), "label_counts": {}, "critical_failures": ["b"], "passed": False,
    }
    assert evaluators["judge"] | {"mean": None} == {
        "version": "v1", "n": 4, "ok": 3, "errors": 1, "skipped": 0, "pass_rate": 0.25, "mean": None,
        "label_counts": {}, "critical_failures": ["b"], "passed": False,
    }
    assert evaluators["judge"]["mean"] == pytest.approx((0.9 + 0.5 + 0.0) / 3)
    assert evaluators["tone"] == {
        "version": "v1", "n": 4, "ok": 4, "errors": 0, "skipped": 0, "pass_rate": None, "mean": None,
        "label_counts": {"polite": 3, "rude": 1}, "critical_failures": [], "passed": None,
    }


def test_run_verdict_and_critical_failures():
    summary = summarise_cases(CASES)
    assert (summary["passed"], summary["critical_failures"], summary["unscored"]) == (False, ["b"], False)
    assert summary["errors"] == 1 and summary["mean_score"] == pytest.approx((0.95 + 0 + 0.5 + 0) / 4)


def test_verdict_passes_only_when_every_ruled_score_passed_and_is_null_without_rules():
    passing = [case("a", [s("exact", 1.0, True), s("tone", label="x")]), case("b", [s("exact", 1.0, True)])]
    assert summarise_cases(passing)["passed"] is True
    labels_only = [case("a", [s("tone", label="x")])]
    assert summarise_cases(labels_only)["passed"] is None
    errored_label = [case("a", [s("tone", error="boom", passed=False)])]
    assert summarise_cases(errored_label)["passed"] is False


def test_unscored_run():
    summary = summarise_cases([case("a", []), case("b", [])])
    assert (summary["unscored"], summary["mean_score"], summary["passed"], summary["evaluators"]) == (True, None, None, {})


def test_per_turn_scores_count_per_turn_and_name_critical_turns():
    cases = [case("q1", [s("exact", 1.0, True, turn=1), s("exact", 0.0, False, turn=2)], critical=True)]
    exact = summarise_cases(cases)["evaluators"]["exact"]
    assert (exact["n"], exact["pass_rate"], exact["critical_failures"]) == (2, 0.5, ["q1.t2"])
