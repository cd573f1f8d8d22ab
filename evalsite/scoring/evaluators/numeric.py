"""``numeric``: the output is a number within a tolerance of the target number."""

from __future__ import annotations

import math
import re
from typing import Any

from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, ScoringError, register_evaluator
from evalsite.scoring.evaluators.text import PATTERN_PARAMS, Extractor, as_text

# A whole text that is one number: sign, digits with optional thousands commas, decimals,
# exponent, and an optional trailing percent sign (kept as written: "50%" is 50).
NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?%?|[+-]?\.\d+(?:[eE][+-]?\d+)?%?")


def parse_number(value: Any) -> float | None:
    """A number from a JSON number or from text that is nothing but one number; else None.

    Deliberately strict: "In 2024 the answer is 7" is not a number. Use ``extract`` to pick
    the number out of a longer answer.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = as_text(value).strip()
    if not NUMBER.fullmatch(text):
        return None
    return float(text.rstrip("%").replace(",", ""))


@register_evaluator("numeric")
class Numeric(Evaluator):
    """Params: ``value``, ``tolerance`` (absolute, default 0), ``relative_tolerance`` (a share
    of the target, default 0; the looser of the two applies), ``extract`` (a pattern picking the
    number out of the output), ``timeout``, ``max_chars``."""

    param_names = ("value", "tolerance", "relative_tolerance", *PATTERN_PARAMS)
    helper_modules = ("evalsite.scoring.evaluators.text",)

    def check(self) -> None:
        self.tolerance = self.option("tolerance", (int, float), 0)
        self.relative = self.option("relative_tolerance", (int, float), 0)
        if self.tolerance < 0 or self.relative < 0:
            raise ValueError("tolerance and relative_tolerance: need numbers of at least 0")
        self.extract = Extractor(self)

    def measure(self, case: CaseView) -> Outcome:
        target = self.target(case)
        if target is None:
            return Outcome.skip("no expected value")
        wanted = parse_number(target)
        if wanted is None:
            raise ScoringError(f"the target {target!r} is not a number")
        text = self.extract(as_text(case.output))
        if text is None:
            return self.extract.miss
        got = parse_number(text)
        if got is None:
            return Outcome.check(False, f"output {text[:80]!r} is not a number")
        allowed = max(self.tolerance, self.relative * abs(wanted))
        close = math.isclose(got, wanted, rel_tol=0, abs_tol=allowed) if allowed else got == wanted
        return Outcome.check(close, f"{got:g} is not within {allowed:g} of {wanted:g}")
