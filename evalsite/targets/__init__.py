"""Targets: how an arm produces an output. One module per kind, all behind one async interface.

A target spec is ``<kind>`` or ``<kind>:<rest>`` (e.g. ``python:arms.math:solve``). Built-in kinds
register themselves with :func:`register_target` exactly as a plugin would.
"""

from evalsite.targets.base import (
    Target,
    TargetRequest,
    TargetResult,
    make_target,
    register_target,
    target_kinds,
)
from evalsite.targets import none_target, python_target  # noqa: F401  (registers the built-ins)

__all__ = [
    "Target",
    "TargetRequest",
    "TargetResult",
    "make_target",
    "register_target",
    "target_kinds",
]
