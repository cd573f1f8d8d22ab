"""Reading JSON whose shape nobody promised (provider replies, other tools' logs)."""

from __future__ import annotations

from typing import Any


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one: a missing or malformed block reads
    as having no keys."""
    return value if isinstance(value, dict) else {}
