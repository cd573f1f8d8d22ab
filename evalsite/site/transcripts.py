"""A case's conversation as the site shows it: every message (system, user, assistant, tool) with
its text, its tool calls (name and arguments) or the call its result answers, and the figures the
message records (latency, tokens, cost), in one shape whatever wrote it.

Where it comes from: the case's ``transcript`` (a replayed or recorded multi-turn row), else its
input when that is a list of chat messages, followed by the output as the assistant's last reply.
A single-text input has no transcript (the listing shows its input and output). A replayed
conversation's per-call figures (the case's ``turn_figures``) go on the replies they produced. Message shapes
read: OpenAI chat (``tool_calls`` with ``function.name`` / ``function.arguments``, ``role: tool``
with ``tool_call_id``), Anthropic content blocks (``text``, ``tool_use``, ``tool_result``) and
plain ``{role, content}``. Every text is cut to the site's ``max_field_chars`` with the omitted
length kept, never silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: Figures a message may record, as the site names them.
FIGURES = (("latency_ms", "latency_ms"), ("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
           ("cost_usd", "cost_usd"))


def conversation(raw: Mapping[str, Any], limit: int) -> list[dict[str, Any]] | None:
    """The messages of a case (its line as read: ``case.raw``) in the site's shape, or None when it
    has no conversation."""
    recorded = raw.get("transcript")
    if isinstance(recorded, list) and _messages(recorded):
        messages = list(recorded)
    elif _messages(raw.get("input")):
        messages = list(raw["input"])
        if raw.get("output") is not None:
            messages.append({"role": "assistant", "content": raw["output"]})
    else:
        return None
    shown = [_message(m, limit) for m in messages]
    _turn_figures(shown, raw.get("turn_figures"))
    return shown


def _turn_figures(shown: list[dict[str, Any]], figures: Any) -> None:
    """A replay's per-call figures (``turn_figures``) on the replies they produced, in order: each
    call's is the last assistant message before the next user turn (a turn that called tools holds
    several, each with its own round trip's figures)."""
    if not isinstance(figures, list):
        return
    for message, recorded in zip(_turn_replies(shown), figures):
        if isinstance(recorded, dict):
            found = {name: recorded[key] for key, name in FIGURES if _number(recorded.get(key))}
            if found:
                message["figures"] = {**found, **message.get("figures", {})}


def _turn_replies(shown: list[dict[str, Any]]) -> list[dict[str, Any]]:
    replies: list[dict[str, Any]] = []
    pending = None
    for message in shown:
        if message["role"] == "assistant":
            pending = message
        elif message["role"] == "user" and pending is not None:
            replies.append(pending)
            pending = None
    return replies + ([pending] if pending is not None else [])


def _messages(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) and "role" in m for m in value)


def _message(message: dict[str, Any], limit: int) -> dict[str, Any]:
    texts, calls, answers = _content(message.get("content"))
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict):
            inner = call.get("function")
            function = inner if isinstance(inner, dict) else call
            calls.append((call.get("id"), function.get("name"), function.get("arguments")))
    shown: dict[str, Any] = {"role": str(message.get("role"))}
    _text(shown, "text", "\n\n".join(texts) if texts else None, limit)
    answered = message.get("tool_call_id") or (answers[0] if answers else None)
    if answered is not None:
        shown["answers"] = str(answered)
    if message.get("name") is not None:
        shown["name"] = str(message["name"])
    if calls:
        shown["calls"] = [_call(call_id, name, arguments, limit) for call_id, name, arguments in calls]
    figures = {name: message[key] for key, name in FIGURES if _number(message.get(key))}
    if figures:
        shown["figures"] = figures
    return shown


def _content(content: Any) -> tuple[list[str], list[tuple[Any, Any, Any]], list[str]]:
    """A message's texts, tool calls (id, name, arguments) and the tool calls its results answer."""
    if content is None:
        return [], [], []
    if isinstance(content, str):
        return [content], [], []
    if not isinstance(content, list):
        return [_json(content)], [], []
    texts: list[str] = []
    calls: list[tuple[Any, Any, Any]] = []
    answers: list[str] = []
    for part in content:
        if not isinstance(part, dict):
            texts.append(str(part))
        elif part.get("type") == "tool_use":
            calls.append((part.get("id"), part.get("name"), part.get("input")))
        elif part.get("type") == "tool_result":
            answers.append(str(part.get("tool_use_id")))
            inner, _, _ = _content(part.get("content"))
            texts.extend(inner)
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            texts.append(_json(part))
    return texts, calls, answers


def _call(call_id: Any, name: Any, arguments: Any, limit: int) -> dict[str, Any]:
    shown: dict[str, Any] = {"name": str(name) if name is not None else "?"}
    if call_id is not None:
        shown["id"] = str(call_id)
    _text(shown, "arguments", arguments if isinstance(arguments, str) or arguments is None else _json(arguments), limit)
    return shown


def _text(into: dict[str, Any], key: str, text: str | None, limit: int) -> None:
    if text is None:
        return
    into[key] = text[:limit]
    if len(text) > limit:
        into[f"{key}_omitted"] = len(text) - limit


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2, default=str)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) != float("inf")
