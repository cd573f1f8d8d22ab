"""``exact``: the output equals the target (or one of a list of targets) after normalisation."""

from __future__ import annotations

from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, register_evaluator
from evalsite.scoring.evaluators.text import (
    NORMALISE_PARAMS,
    PATTERN_PARAMS,
    Extractor,
    as_text,
    normalise,
    normalise_options,
)


@register_evaluator("exact")
class Exact(Evaluator):
    """Params: ``value``, ``ignore_case``, ``ignore_whitespace``, ``ignore_punctuation``, ``extract``
    (a pattern applied to the output first), ``timeout`` and ``max_chars`` (for ``extract``)."""

    param_names = ("value", *NORMALISE_PARAMS, *PATTERN_PARAMS)
    helper_modules = ("evalsite.scoring.evaluators.text",)

    def check(self) -> None:
        self.normalisation = normalise_options(self)
        self.extract = Extractor(self)

    def measure(self, case: CaseView) -> Outcome:
        target = self.target(case)
        if target is None:
            return Outcome.skip("no expected value")
        output = self.extract(as_text(case.output))
        if output is None:
            return self.extract.miss
        accepted = target if isinstance(target, list) else [target]
        wanted = {normalise(as_text(t), **self.normalisation) for t in accepted}
        equal = normalise(output, **self.normalisation) in wanted
        shown = as_text(target) if isinstance(target, list) else repr(as_text(target))
        return Outcome.check(equal, f"expected {shown}")
