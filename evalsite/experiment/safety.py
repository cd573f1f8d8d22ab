"""Manifest rules that protect the user from values a schema lets through.

JSON Schema's ``minimum``/``maximum`` compare with ``<``, which is false for NaN, so
``limits.max_cost_usd: .nan`` met every bound and then switched the cost ceiling off. No manifest
value has a use for NaN or infinity (neither can even be written to a run's JSON), so any
non-finite number anywhere is refused, naming its key.
"""

from __future__ import annotations

import math
from typing import Any

MAX_CONCURRENCY = 1000  # the schema's maximum for `concurrency`, and --concurrency's
MAX_REPEAT = 10000  # the schema's maximum for `repeat`, and --repeat's


def number_problems(value: Any, where: str = "") -> list[str]:
    """A problem for every NaN or infinite number inside ``value``, as ``key.path: …``."""
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{where or 'the manifest'}: must be a finite number, got {value!r}"]
    if isinstance(value, dict):
        return [p for key, inner in value.items() for p in number_problems(inner, f"{where}.{key}" if where else str(key))]
    if isinstance(value, list):
        return [p for index, inner in enumerate(value) for p in number_problems(inner, f"{where}[{index}]")]
    return []
