"""Multi-turn rows as the targets see them (:mod:`evalsite.experiment.turns` reads a row's turns).

When a target replays the row, every user turn gets the target's own reply and recorded
``assistant`` turns are left out (they are a previous system's answers); the ``none`` target
instead scores the recorded assistant turns.
"""

from __future__ import annotations

from typing import Any


def assistant_replies(messages: list[Any]) -> list[Any]:
    """The contents of the assistant messages, in order."""
    return [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
