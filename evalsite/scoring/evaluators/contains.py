"""``contains``, ``contains_all``, ``contains_any`` and ``starts_with``: whole words or phrases.

A phrase matches only as whole words (``cat`` is not found in ``concatenate``) unless
``whole_words: false``; whitespace inside a phrase matches any run of whitespace.
"""

from __future__ import annotations

from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, ScoringError, register_evaluator
from evalsite.scoring.evaluators.text import as_phrases, as_text, phrase_pattern

PHRASE_PARAMS = ("value", "ignore_case", "whole_words")


class PhraseEvaluator(Evaluator):
    """Shared by the phrase family: finds each phrase of the target in the output."""

    param_names = PHRASE_PARAMS
    helper_modules = ("evalsite.scoring.evaluators.text",)
    anchored = False

    def check(self) -> None:
        self.ignore_case = self.option("ignore_case", bool, False)
        self.whole_words = self.option("whole_words", bool, True)

    def found(self, phrase: str, output: str) -> bool:
        pattern = phrase_pattern(phrase, ignore_case=self.ignore_case, whole_words=self.whole_words)
        return (pattern.match if self.anchored else pattern.search)(output) is not None

    def measure(self, case: CaseView) -> Outcome:
        target = self.target(case)
        if target is None:
            return Outcome.skip("no expected value")
        phrases = as_phrases(target, "the target")
        output = as_text(case.output).lstrip() if self.anchored else as_text(case.output)
        hits = [phrase for phrase in phrases if self.found(phrase, output)]
        return self.judge_hits(phrases, hits)

    def judge_hits(self, phrases: list[str], hits: list[str]) -> Outcome:
        raise NotImplementedError


@register_evaluator("contains")
class Contains(PhraseEvaluator):
    """Passes when the output contains the target phrase. A list target is refused: say
    ``contains_all`` or ``contains_any``."""

    def measure(self, case: CaseView) -> Outcome:
        if isinstance(self.target(case), list):
            raise ScoringError("contains takes one phrase but the target is a list; use contains_all or contains_any")
        return super().measure(case)

    def judge_hits(self, phrases: list[str], hits: list[str]) -> Outcome:
        return Outcome.check(bool(hits), f"{phrases[0]!r} not found")


@register_evaluator("contains_all")
class ContainsAll(PhraseEvaluator):
    """Score = the share of phrases found; passes when all are found (or the share reaches
    ``threshold``)."""

    def judge_hits(self, phrases: list[str], hits: list[str]) -> Outcome:
        missing = [p for p in phrases if p not in hits]
        detail = None if not missing else "missing " + ", ".join(map(repr, missing))
        return Outcome(len(hits) / len(phrases), not missing, detail=detail)


@register_evaluator("contains_any")
class ContainsAny(PhraseEvaluator):
    """Passes when at least one phrase is found."""

    def judge_hits(self, phrases: list[str], hits: list[str]) -> Outcome:
        return Outcome.check(bool(hits), "none of " + ", ".join(map(repr, phrases)) + " found")


@register_evaluator("starts_with")
class StartsWith(PhraseEvaluator):
    """Passes when the output, ignoring leading whitespace, starts with the target phrase (or
    one of a list of them), as whole words: ``Yes`` does not start ``Yesterday``."""

    anchored = True

    def judge_hits(self, phrases: list[str], hits: list[str]) -> Outcome:
        return Outcome.check(bool(hits), "does not start with " + " or ".join(map(repr, phrases)))
