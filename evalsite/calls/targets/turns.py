"""Multi-turn rows: ``{"turns": [...]}`` as a list of chat messages.

A turn is a string (a user message) or a ``{role, content}`` message with role ``system``,
``user`` or ``assistant``. When a target replays the row, every user turn gets the target's own
reply and recorded ``assistant`` turns are left out (they are a previous system's answers); the
``none`` target instead scores the recorded assistant turns.
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
            )
    if not any(m["role"] == "user" for m in messages):
        raise TurnsError("turns: has no user turn")
    return messages


def assistant_replies(messages: list[Any]) -> list[Any]:
    """The contents of the assistant messages, in order."""
    return [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
