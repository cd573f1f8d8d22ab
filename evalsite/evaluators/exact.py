"""``exact``: the output equals the target after optional normalisation."""

from __future__ import annotations

import re
import string

from evalsite.evaluators.base import CaseView, Evaluator, register_evaluator


def normalise(text: str, *, case: bool, whitespace: bool, punctuation: bool) -> str:
    if not case:
        text = text.casefold()
    if not punctuation:
        text = text.translate(str.maketrans("", "", string.punctuation))
    if not whitespace:
        text = " ".join(text.split())
    return text


@register_evaluator("exact")
class Exact(Evaluator):
    """Params: ``case_sensitive`` (true), ``ignore_whitespace`` (false → compares collapsed
    whitespace when true), ``ignore_punctuation`` (false), ``extract`` (a regex; its first group,
    else its match, is compared)."""

    def judge(self, case: CaseView):
        output = "" if case.output is None else str(case.output)
        target = self.target(case)
        if target is None:
            return None, None, None, "no expected value"
        if pattern := self.params.get("extract"):
            match = re.search(pattern, output)
            output = "" if match is None else (match.group(1) if match.groups() else match.group(0))
        options = dict(
            case=self.params.get("case_sensitive", True),
            whitespace=not self.params.get("ignore_whitespace", False),
            punctuation=not self.params.get("ignore_punctuation", False),
        )
        equal = normalise(output, **options) == normalise(str(target), **options)
        return (1.0 if equal else 0.0), equal, None, None if equal else f"expected {str(target)!r}"
