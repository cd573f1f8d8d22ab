"""``length``: the output's length in characters or words lies within ``min``..``max``."""

from __future__ import annotations

from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, register_evaluator
from evalsite.scoring.evaluators.text import as_text

UNITS = ("chars", "words")


@register_evaluator("length")
class Length(Evaluator):
    """Params: ``unit`` (``chars``, the default, or ``words``: runs of non-whitespace), ``min``,
    ``max`` (inclusive; at least one of them)."""

    param_names = ("unit", "min", "max")

    def check(self) -> None:
        self.unit = self.option("unit", str, "chars")
        if self.unit not in UNITS:
            raise ValueError(f"unit: needs one of {', '.join(UNITS)}, got {self.unit!r}")
        self.low = self.option("min", int)
        self.high = self.option("max", int)
        if self.low is None and self.high is None:
            raise ValueError("needs 'min', 'max' or both")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"min {self.low} is above max {self.high}")

    def measure(self, case: CaseView) -> Outcome:
        text = as_text(case.output)
        size = len(text.split()) if self.unit == "words" else len(text)
        if self.low is not None and size < self.low:
            return Outcome.check(False, f"{size} {self.unit}, below min {self.low}")
        if self.high is not None and size > self.high:
            return Outcome.check(False, f"{size} {self.unit}, above max {self.high}")
        return Outcome(1.0, True, detail=f"{size} {self.unit}")
