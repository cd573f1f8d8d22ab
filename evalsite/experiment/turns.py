"""Multi-turn rows: ``{"turns": [...]}`` read as a list of chat messages, by the one rule both the
dataset check (``validate``, ``run --dry-run``) and the runner apply, so a row ``validate`` passes
is a row ``run`` replays.

A turn is a string (a user message) or a ``{role, content}`` message with role ``system``,
``user`` or ``assistant`` and text content.
"""

from __future__ import annotations

from typing import Any

from evalsite.jsonshape import JSONObject

ROLES = ("system", "user", "assistant")


class TurnsError(ValueError):
    """A row's ``turns`` cannot be read as a conversation; the message names the turn."""


def normalise_turns(turns: Any) -> list[JSONObject]:
    if not isinstance(turns, list) or not turns:
        raise TurnsError("turns: needs a non-empty list of messages")
    messages = []
    for index, turn in enumerate(turns):
        if isinstance(turn, str):
            messages.append({"role": "user", "content": turn})
        elif isinstance(turn, dict) and turn.get("role") in ROLES and isinstance(turn.get("content"), str):
            messages.append({"role": turn["role"], "content": turn["content"]})
        else:
            raise TurnsError(
                f"turns[{index}]: needs a string or a {{role, content}} message with role system, user or assistant"
                " and text content"
            )
    if not any(m["role"] == "user" for m in messages):
        raise TurnsError("turns: has no user turn")
    return messages
