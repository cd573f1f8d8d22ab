"""Evaluators: one module per family, registered by type name (built-ins as a user's would be),
each family imported when one of its types is first looked up (:data:`~evalsite.scoring.evaluators.base.BUILT_IN_FAMILIES`)."""

from evalsite.runlog.records import Score
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
