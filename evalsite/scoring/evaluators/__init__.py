"""Evaluators: one module per family, registered by type name (built-ins as a user's would be)."""

from evalsite.runlog.records import Score
from evalsite.scoring.evaluators import (  # noqa: F401  (registers the built-ins)
    ceilings,
    code_tests,
    contains,
    exact,
    grounding,
    json_output,
    judge,
    length,
    numeric,
    pattern,
    python_code,
    similarity,
)
from evalsite.scoring.evaluators.base import (
    CaseView,
    Evaluator,
    Outcome,
    ScoringError,
    build_evaluators,
    describe_evaluators,
    evaluator_types,
    register_evaluator,
)

__all__ = [
    "CaseView",
    "Evaluator",
    "Outcome",
    "Score",
    "ScoringError",
    "build_evaluators",
    "describe_evaluators",
    "evaluator_types",
    "register_evaluator",
]
