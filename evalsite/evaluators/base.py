"""The evaluator interface, the registry, and how a case's scores combine.

An evaluator spec in a manifest is ``{type, name?, weight?, threshold?, params...}``. A factory
registered under ``type`` builds the evaluator; its ``version`` hashes the type, the params and
the source code that scores, so a changed scorer makes runs not comparable.
"""

from __future__ import annotations

import inspect
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from evalsite.errors import EvaluatorError
from evalsite.hashing import short_hash

COMMON_KEYS = ("type", "name", "weight", "threshold")


@dataclass(frozen=True)
class CaseView:
    """What an evaluator sees of a finished generation."""

    input: Any
    output: Any
    expected: Any
    row: dict
    latency_ms: float | None = None
    cost_usd: float | None = None
    turn_outputs: list | None = None
    transcript: list | None = None


@dataclass
class Score:
    evaluator: str
    version: str
    score: float | None = None
    passed: bool | None = None
    label: str | None = None
    detail: str | None = None
    error: str | None = None
    skipped: bool = False

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Evaluator:
    """Base class: subclasses implement :meth:`judge` returning ``(score, passed, label, detail)``."""

    name: str
    params: dict = field(default_factory=dict)
    weight: float = 1.0
    threshold: float | None = None

    type_name = "evaluator"

    @property
    def version(self) -> str:
        return short_hash({"type": self.type_name, "params": self.params, "code": self.code_identity()})

    def code_identity(self) -> str:
        return inspect.getsource(type(self))

    def has_pass_rule(self) -> bool:
        return True

    def target(self, case: CaseView) -> Any:
        return self.params["value"] if "value" in self.params else case.expected

    def judge(self, case: CaseView) -> tuple[float | None, bool | None, str | None, str | None]:
        raise NotImplementedError

    async def aevaluate(self, case: CaseView) -> Score:
        """Async entry point the runner awaits; evaluators that call a model override it."""
        return self.evaluate(case)

    def evaluate(self, case: CaseView) -> Score:
        try:
            score, passed, label, detail = self.judge(case)
        except Exception as exc:  # a throwing evaluator records its error; the others still score
            return Score(self.name, self.version, error=f"{type(exc).__name__}: {exc}", passed=False)
        if score is None and passed is None and label is None:
            return Score(self.name, self.version, passed=False, detail=detail, skipped=True)
        if self.threshold is not None and score is not None:
            passed = score >= self.threshold
        return Score(self.name, self.version, score=score, passed=passed, label=label, detail=detail)


EvaluatorFactory = Callable[..., Evaluator]
_REGISTRY: dict[str, type[Evaluator]] = {}


def register_evaluator(type_name: str):
    """Register an :class:`Evaluator` subclass under ``type_name`` (built-ins use this too)."""

    def decorate(cls: type[Evaluator]) -> type[Evaluator]:
        cls.type_name = type_name
        _REGISTRY[type_name] = cls
        return cls

    return decorate


def evaluator_types() -> list[str]:
    return sorted(_REGISTRY)


def build_evaluator(spec: dict, index: int) -> Evaluator:
    where = f"evaluators[{index}]"
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        raise EvaluatorError(f"{where}: needs a mapping with a 'type'")
    cls = _REGISTRY.get(spec["type"])
    if cls is None:
        raise EvaluatorError(
            f"{where}.type: unknown evaluator {spec['type']!r} (known: {', '.join(evaluator_types())})"
        )
    params = {k: v for k, v in spec.items() if k not in COMMON_KEYS}
    if isinstance(spec.get("params"), dict):
        params = {**{k: v for k, v in params.items() if k != "params"}, **spec["params"]}
    return cls(
        name=spec.get("name") or spec["type"],
        params=params,
        weight=float(spec.get("weight", 1.0)),
        threshold=spec.get("threshold"),
    )


def build_evaluators(specs: list[dict]) -> list[Evaluator]:
    evaluators = [build_evaluator(spec, index) for index, spec in enumerate(specs)]
    names = [e.name for e in evaluators]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise EvaluatorError(f"evaluators: duplicate name {duplicates[0]!r}; give each a distinct 'name'")
    return evaluators


@dataclass(frozen=True)
class CaseScore:
    scores: list[Score]
    score: float | None
    passed: bool | None


async def score_case(evaluators: list[Evaluator], case: CaseView, generation_error: str | None) -> CaseScore:
    """Score one case. No evaluators → unscored; a failed generation scores 0 everywhere."""
    if not evaluators:
        return CaseScore([], None, None if generation_error is None else False)
    if generation_error is not None:
        scores = [
            Score(e.name, e.version, score=0.0, passed=False, detail=f"generation failed: {generation_error}")
            for e in evaluators
        ]
    else:
        scores = [await e.aevaluate(case) for e in evaluators]
    weights = {e.name: e.weight for e in evaluators}
    scored = [s for s in scores if s.score is not None and s.error is None and not s.skipped]
    total_weight = sum(weights[s.evaluator] for s in scored)
    score = sum(s.score * weights[s.evaluator] for s in scored) / total_weight if total_weight else None
    ruled = [s for s, e in zip(scores, evaluators) if e.has_pass_rule()]
    passed = None if not ruled else all(s.error is None and s.passed for s in ruled)
    return CaseScore(scores, score, passed)
