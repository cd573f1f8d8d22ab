"""``type: shouted``: the share of the output's letters that are capitals; passes at ``min`` (default 1)."""

from evalsite.scoring.evaluators import Evaluator, Outcome, register_evaluator


@register_evaluator("shouted")
class Shouted(Evaluator):
    param_names = ("min",)

    def check(self) -> None:
        self.option("min", (int, float), 1.0)

    def measure(self, case):
        letters = [c for c in str(case.output) if c.isalpha()]
        share = sum(c.isupper() for c in letters) / len(letters) if letters else 0.0
        return Outcome(share, share >= self.option("min", (int, float), 1.0))
