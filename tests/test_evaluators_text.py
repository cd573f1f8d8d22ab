"""The text evaluators: exact, the contains family, starts_with, regex, similarity, length, numeric."""

from __future__ import annotations

import asyncio

import pytest

from evalsite.errors import EvaluatorError
from evalsite.scoring.evaluators import CaseView, Score, build_evaluators


def score(spec: dict, output, expected=None) -> Score:
    (evaluator,) = build_evaluators([spec])
    (result,) = asyncio.run(evaluator.ascore(CaseView(input="q", output=output, expected=expected, row={})))
    return result


# exact


def test_exact_is_exact_by_default():
    assert score({"type": "exact"}, "Paris", "Paris").passed is True
    failed = score({"type": "exact"}, "paris", "Paris")
    assert (failed.score, failed.passed, failed.detail) == (0.0, False, "expected 'Paris'")
    assert score({"type": "exact"}, "Paris ", "Paris").passed is False


@pytest.mark.parametrize(
    "option, output",
    [("ignore_case", "PARIS"), ("ignore_whitespace", "  Paris\n"), ("ignore_punctuation", "Paris.")],
)
def test_exact_normalisation_options(option, output):
    assert score({"type": "exact"}, output, "Paris").passed is False
    assert score({"type": "exact", option: True}, output, "Paris").passed is True


def test_exact_extracts_before_comparing_and_fails_when_nothing_is_extracted():
    spec = {"type": "exact", "extract": r"answer: (\w+)"}
    assert score(spec, "I think... answer: 42", "42").passed is True
    missed = score(spec, "no idea", "42")
    assert missed.passed is False and missed.error is None and "found nothing" in missed.detail


def test_exact_value_param_overrides_expected_and_lists_mean_any_of():
    assert score({"type": "exact", "value": "yes"}, "yes", "no").passed is True
    assert score({"type": "exact"}, "Paris", ["paris", "Paris"]).passed is True
    assert score({"type": "exact"}, 480, "480").passed is True


def test_exact_without_expected_is_skipped_and_counts_as_not_passed():
    skipped = score({"type": "exact"}, "x", None)
    assert skipped.skipped and skipped.passed is False and skipped.score is None


# contains family and starts_with


def test_contains_matches_whole_words_not_substrings():
    assert score({"type": "contains", "value": "cat"}, "the cat sat", None).passed is True
    assert score({"type": "contains", "value": "cat"}, "concatenate", None).passed is False
    assert score({"type": "contains", "value": "cat"}, "Cat.", None).passed is False
    assert score({"type": "contains", "value": "cat", "ignore_case": True}, "Cat.", None).passed is True
    assert score({"type": "contains", "value": "cat", "whole_words": False}, "concatenate", None).passed is True


def test_contains_matches_phrases_across_whitespace_and_symbols_at_edges():
    assert score({"type": "contains"}, "please  refund\nthe shipping", "refund the shipping").passed is True
    assert score({"type": "contains"}, "your order #1234.", "#1234").passed is True
    assert score({"type": "contains"}, "order #12345", "#1234").passed is False


def test_contains_refuses_a_list_target_with_a_pointer_to_the_right_evaluator():
    result = score({"type": "contains"}, "a b", ["a", "b"])
    assert result.error and "contains_all or contains_any" in result.error and result.passed is False


def test_contains_all_scores_the_share_found_and_names_what_is_missing():
    result = score({"type": "contains_all"}, "red and blue", ["red", "blue", "green", "bluegreen"])
    assert (result.score, result.passed) == (0.5, False)
    assert result.detail == "missing 'green', 'bluegreen'"
    assert score({"type": "contains_all", "threshold": 0.5}, "red and blue", ["red", "blue", "green", "x"]).passed


def test_contains_any_passes_on_one_whole_word_hit():
    assert score({"type": "contains_any"}, "I like dogs", ["cat", "dogs"]).passed is True
    assert score({"type": "contains_any"}, "concatenated hotdogs", ["cat", "dogs"]).passed is False


def test_starts_with_is_a_whole_word_prefix_after_leading_whitespace():
    assert score({"type": "starts_with"}, "  Yes, because", "Yes").passed is True
    assert score({"type": "starts_with"}, "Yesterday", "Yes").passed is False
    assert score({"type": "starts_with"}, "No. Yes", "Yes").passed is False
    assert score({"type": "starts_with"}, '{"a": 1}', "{").passed is True


# regex


def test_regex_searches_by_default_and_full_matches_on_request():
    assert score({"type": "regex", "pattern": r"\d{3}"}, "code 123 ok", None).passed is True
    assert score({"type": "regex", "pattern": r"\d{3}", "full": True}, "code 123 ok", None).passed is False
    assert score({"type": "regex", "pattern": "ok", "ignore_case": True}, "OK", None).passed is True


def test_regex_takes_its_pattern_from_the_row_when_none_is_given():
    assert score({"type": "regex"}, "order 42", r"order \d+").passed is True
    broken = score({"type": "regex"}, "x", "(")
    assert broken.error and "invalid regular expression" in broken.error


def test_catastrophic_regex_finishes_with_an_error_score():
    result = score({"type": "regex", "pattern": r"(a|aa)+$", "timeout": 0.05}, "a" * 60 + "b", None)
    assert result.error and "ran longer than 0.05s" in result.error
    assert result.score is None and result.passed is False


def test_regex_refuses_outputs_over_the_length_cap():
    result = score({"type": "regex", "pattern": "a", "max_chars": 10}, "a" * 11, None)
    assert result.error == "output has 11 characters, more than max_chars 10; raise max_chars"


def test_invalid_pattern_is_a_build_error_naming_the_evaluator():
    with pytest.raises(EvaluatorError, match=r"evaluators\[0\] \(regex\): pattern: invalid regular expression '\('"):
        build_evaluators([{"type": "regex", "pattern": "("}])


# similarity


def test_similarity_is_normalised_levenshtein_with_default_threshold_0_8():
    close = score({"type": "similarity"}, "kitten", "sitting")
    assert close.score == pytest.approx(1 - 3 / 7) and close.passed is False
    assert score({"type": "similarity"}, "colour", "color").score == pytest.approx(1 - 1 / 6)
    assert score({"type": "similarity"}, "colour", "color").passed is True
    assert score({"type": "similarity", "threshold": 0.9}, "colour", "color").passed is False


def test_similarity_takes_the_best_of_several_targets():
    result = score({"type": "similarity"}, "Paris", ["London", "paris"])
    assert result.score == pytest.approx(0.8)
    assert score({"type": "similarity", "ignore_case": True}, "Paris", ["London", "paris"]).score == 1.0


# length


def test_length_counts_chars_or_words_within_bounds():
    assert score({"type": "length", "max": 5}, "hello", None).passed is True
    too_long = score({"type": "length", "max": 4}, "hello", None)
    assert (too_long.passed, too_long.detail) == (False, "5 chars, above max 4")
    words = score({"type": "length", "unit": "words", "min": 3}, "two words", None)
    assert (words.passed, words.detail) == (False, "2 words, below min 3")


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"type": "length"}, "needs 'min', 'max' or both"),
        ({"type": "length", "min": 5, "max": 2}, "min 5 is above max 2"),
        ({"type": "length", "max": "10"}, "max: needs a whole number, got '10'"),
        ({"type": "length", "max": 3, "unit": "lines"}, "unit: needs one of chars, words, got 'lines'"),
    ],
)
def test_length_params_are_checked_at_build(spec, message):
    with pytest.raises(EvaluatorError, match=message):
        build_evaluators([spec])


# numeric


@pytest.mark.parametrize("output", ["480", " 480\n", "480.0", "+480", "4.8e2", 480])
def test_numeric_parses_a_number(output):
    assert score({"type": "numeric"}, output, "480").passed is True


def test_numeric_reads_thousands_separators_and_honours_tolerances():
    assert score({"type": "numeric"}, "1,234", 1234).passed is True
    assert score({"type": "numeric", "tolerance": 0.5}, "10.4", 10).passed is True
    assert score({"type": "numeric", "tolerance": 0.5}, "10.6", 10).passed is False
    assert score({"type": "numeric", "relative_tolerance": 0.1}, "108", 100).passed is True


def test_numeric_never_takes_a_number_out_of_prose_unless_told_where():
    prose = score({"type": "numeric"}, "In 2024 the answer is 7", 7)
    assert prose.passed is False and "is not a number" in prose.detail
    extracted = score({"type": "numeric", "extract": r"answer is (\S+)"}, "In 2024 the answer is 7", 7)
    assert extracted.passed is True


def test_numeric_with_a_non_numeric_target_is_an_error():
    assert "is not a number" in score({"type": "numeric"}, "3", "three").error


# params in general


def test_unknown_param_is_refused_with_the_allowed_list():
    with pytest.raises(EvaluatorError, match=r"evaluators\[0\] \(exact\): unknown key 'ignore_cse' \(allowed: .*ignore_case"):
        build_evaluators([{"type": "exact", "ignore_cse": True}])


def test_a_null_param_means_its_default():
    assert score({"type": "regex", "pattern": "a", "timeout": None, "ignore_case": None}, "a", None).passed is True


def test_params_may_be_nested_under_params():
    assert score({"type": "exact", "params": {"ignore_case": True}}, "PARIS", "paris").passed is True


def test_bad_param_types_are_refused():
    with pytest.raises(EvaluatorError, match="ignore_case: needs true or false, got 'yes'"):
        build_evaluators([{"type": "exact", "ignore_case": "yes"}])
