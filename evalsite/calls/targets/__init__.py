"""Targets: how an arm produces an output. One module per kind, all behind one async interface.

A target spec is ``<kind>`` or ``<kind>:<rest>`` (e.g. ``python:arms.math:solve``). Built-in kinds
register themselves with :func:`register_target` exactly as a plugin would.
"""

# importing the built-ins registers them
from evalsite.calls.targets import anthropic, command, none_target, openai, python_target  # noqa: F401
from evalsite.calls.targets.base import (
    PRICE_KEYS,
    THREAD_HEADER,
    Target,
    TargetRequest,
    TargetResult,
    TransientTargetError,
    call_cost,
    make_target,
    register_target,
    replays_turns,
    target_kinds,
    total_or_none,
    with_model,
)

__all__ = [
    "PRICE_KEYS",
    "THREAD_HEADER",
    "Target",
    "TargetRequest",
    "TargetResult",
    "TransientTargetError",
    "call_cost",
    "make_target",
    "register_target",
    "replays_turns",
    "target_kinds",
    "total_or_none",
    "with_model",
]
