"""Evaluators: one module per family, registered by type name (built-ins as a user's would be)."""

from evalsite.evaluators.base import (
    CaseScore,
    CaseView,
    Evaluator,
    Score,
    build_evaluators,
    evaluator_types,
    register_evaluator,
    score_case,
)
from evalsite.evaluators import exact  # noqa: F401  (registers the built-ins)

__all__ = [
    "CaseScore",
    "CaseView",
    "Evaluator",
    "Score",
    "build_evaluators",
    "evaluator_types",
    "register_evaluator",
    "score_case",
]
