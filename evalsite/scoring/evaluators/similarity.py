"""``similarity``: normalised Levenshtein similarity between output and target (rapidfuzz)."""

from __future__ import annotations

from rapidfuzz.distance import Levenshtein

from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, register_evaluator
from evalsite.scoring.evaluators.text import NORMALISE_PARAMS, as_text, normalise, normalise_options


@register_evaluator("similarity")
class Similarity(Evaluator):
    """Score = 1 − edit distance / length of the longer text, in 0..1 (two empty texts: 1);
    against a list of targets, the best. Passes at ``threshold`` (default 0.8). Params: ``value``,
    ``ignore_case``, ``ignore_whitespace``, ``ignore_punctuation``."""

    param_names = ("value", *NORMALISE_PARAMS)
    helper_modules = ("evalsite.scoring.evaluators.text",)
    default_threshold = 0.8

    def check(self) -> None:
        self.normalisation = normalise_options(self)

    def measure(self, case: CaseView) -> Outcome:
        target = self.target(case)
        if target is None or target == []:
            return Outcome.skip("no expected value")
        output = normalise(as_text(case.output), **self.normalisation)
        candidates = target if isinstance(target, list) else [target]
        best, closest = max(
            (Levenshtein.normalized_similarity(output, normalise(as_text(t), **self.normalisation)), as_text(t))
            for t in candidates
        )
        return Outcome(best, detail=f"similarity {best:.3f} to {closest!r}")
