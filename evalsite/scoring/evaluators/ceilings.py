"""``latency`` and ``cost``: ceilings on what a case took. Unknown values are skipped, which
counts against the pass rate: a ceiling cannot pass on a number nobody measured."""

from __future__ import annotations

from typing import ClassVar

from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, register_evaluator


class Ceiling(Evaluator):
    param_names: ClassVar[tuple[str, ...]] = ()
    scopes = ("thread",)
    key: ClassVar[str] = ""
    unit: ClassVar[str] = ""

    def check(self) -> None:
        self.limit = self.option(self.key, (int, float))
        if self.limit is None or self.limit < 0:
            raise ValueError(f"{self.key}: needs a number of at least 0, got {self.limit!r}")

    def measured(self, case: CaseView) -> float | None:
        raise NotImplementedError

    def measure(self, case: CaseView) -> Outcome:
        value = self.measured(case)
        if value is None:
            return Outcome.skip(f"{self.kind} unknown")
        ok = value <= self.limit
        return Outcome(1.0 if ok else 0.0, ok, detail=f"{value:g} {self.unit} (ceiling {self.limit:g})")


@register_evaluator("latency")
class Latency(Ceiling):
    """Passes when the case's latency is at most ``max_ms`` milliseconds."""

    param_names = ("max_ms",)
    key, unit = "max_ms", "ms"

    def measured(self, case: CaseView) -> float | None:
        return case.latency_ms


@register_evaluator("cost")
class Cost(Ceiling):
    """Passes when the case's cost is at most ``max_usd`` dollars."""

    param_names = ("max_usd",)
    key, unit = "max_usd", "USD"

    def measured(self, case: CaseView) -> float | None:
        return case.cost_usd
