"""Reports as JSON-ready data: dataclasses become objects, numpy values numbers and lists.

Fields marked ``metadata={"internal": True}`` (a run's whole header) are left out, tuples become
lists, and a number that is not finite (an undefined p-value, an effect no sample size can
detect) becomes ``null``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


def json_ready(value: Any) -> Any:
    """``value`` as data ``json.dumps`` writes as is (see the module docstring)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: json_ready(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.metadata.get("internal")
        }
    if isinstance(value, dict):
        return {str(key): json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if isinstance(value, np.ndarray):
        return json_ready(value.tolist())
    if isinstance(value, np.generic):
        return json_ready(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
