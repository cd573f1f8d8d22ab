"""``regex``: the output matches a user's pattern, run with a timeout and an input length cap."""

from __future__ import annotations

from functools import lru_cache

import regex

from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, ScoringError, register_evaluator
from evalsite.scoring.evaluators.text import PatternLimits, as_text, compile_user_pattern


@register_evaluator("regex")
class Regex(Evaluator):
    """Params: ``pattern`` (else the target — ``value`` or the row's expected — is the pattern),
    ``ignore_case``, ``full`` (the whole output must match; default: a match anywhere),
    ``timeout`` (seconds, default 1) and ``max_chars`` (default 100000)."""

    param_names = ("pattern", "value", "ignore_case", "full", "timeout", "max_chars")
    helper_modules = ("evalsite.scoring.evaluators.text",)

    def check(self) -> None:
        self.ignore_case = self.option("ignore_case", bool, False)
        self.full = self.option("full", bool, False)
        self.limits = PatternLimits(self)
        source = self.params.get("pattern")
        self.pattern = None if source is None else compile_user_pattern(source, ignore_case=self.ignore_case)

    def measure(self, case: CaseView) -> Outcome:
        pattern = self.pattern or self._row_pattern(case)
        if pattern is None:
            return Outcome.skip("no pattern: set 'pattern' or give the row an expected pattern")
        match = self.limits.search(pattern, as_text(case.output), full=self.full)
        return Outcome.check(match is not None, f"no match for {pattern.pattern!r}")

    def _row_pattern(self, case: CaseView) -> regex.Pattern | None:
        source = self.target(case)
        if source is None:
            return None
        if not isinstance(source, str):
            raise ScoringError(f"the target pattern must be a string, got {source!r}")
        try:
            return _compiled(source, self.ignore_case)
        except ValueError as exc:
            raise ScoringError(str(exc)) from None


@lru_cache(maxsize=1024)
def _compiled(source: str, ignore_case: bool) -> regex.Pattern:
    return compile_user_pattern(source, ignore_case=ignore_case, key="expected")
