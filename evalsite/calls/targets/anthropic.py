"""The ``anthropic`` target: the Messages API (``POST /v1/messages``) over httpx.

System messages of the input become the request's ``system`` field; ``params`` go into the
body as they are (``max_tokens`` defaults to 1024 because the API requires it; ``tools`` declares
the tools). Stop reasons are recorded in the OpenAI vocabulary, so ``max_tokens`` reads ``length``
like every target. Settings: ``model`` (or ``anthropic:<model>``), ``base_url`` (default
Anthropic's), ``api_key_env`` (default ``ANTHROPIC_API_KEY``), ``anthropic_version``, ``headers``,
``headers_env``, ``max_connections``, ``max_reply_bytes``, and for tool calls ``tool_handlers`` and
``max_tool_rounds``.

Tool calls go through :mod:`evalsite.calls.targets.tools`, as the ``openai`` target's do, so the
transcript has that one shape: a reply's ``tool_use`` blocks ``{id, name, input}`` are recorded as
the assistant message's ``tool_calls`` (``input`` as a JSON text), and on the way out
(:func:`wire_messages`) those become ``tool_use`` blocks again and the tool results one user turn
of ``tool_result`` blocks ``{tool_use_id, content, is_error}``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from evalsite.calls.targets.base import (
    THREAD_HEADER,
    TargetRequest,
    TargetResult,
    check_settings,
    register_target,
    text_or_none,
    token_count,
    total_or_none,
)
from evalsite.calls.targets.http import (
    HTTP_SETTINGS,
    chat_messages,
    client_from_settings,
    model_name,
)
from evalsite.calls.targets.tools import (
    ERROR_KEY,
    TOOL_SETTINGS,
    TRANSCRIPT_KEYS,
    ChatOverHttp,
    Round,
    call_with_tools,
    sent,
    tool_calls,
    tool_handlers,
)
from evalsite.jsonshape import JSONObject, mapping

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}


class AnthropicMessages(ChatOverHttp):
    kind = "anthropic"

    async def generate(self, request: TargetRequest) -> TargetResult:
        thread = {THREAD_HEADER: request.thread_id} if request.thread_id else None

        async def complete(conversation: list[Any]) -> Round | str:
            system = "\n\n".join(m["content"] for m in conversation if m.get("role") == "system")
            body = {"max_tokens": DEFAULT_MAX_TOKENS, **request.params, "model": self.model,
                    "messages": wire_messages(conversation)}
            if system:
                body["system"] = system
            clock = time.perf_counter()
            reply = await self.client.post("/v1/messages", body, thread)
            if isinstance(reply, str):
                return reply
            data = reply[0]
            return Round(parse_message(data), assistant_message(data), (time.perf_counter() - clock) * 1000)

        return await call_with_tools(complete, chat_messages(request.input), self.tools)


def parse_message(data: JSONObject) -> TargetResult:
    blocks = data.get("content")
    if not isinstance(blocks, list):
        return TargetResult(error=f"the response has no content: {str(data)[:200]}")
    usage = mapping(data.get("usage"))
    read, written = cached_count(usage, "cache_read_input_tokens"), cached_count(usage, "cache_creation_input_tokens")
    reason = text_or_none(data.get("stop_reason"))
    return TargetResult(
        output=reply_output(blocks),
        input_tokens=total_or_none([token_count(usage.get("input_tokens")), read, written]),
        output_tokens=token_count(usage.get("output_tokens")),
        cache_read_tokens=read or 0,
        cache_write_tokens=written or 0,
        finish_reason=None if reason is None else STOP_REASONS.get(reason, reason),
        request_id=text_or_none(data.get("id")),
        served_model=text_or_none(data.get("model")),
    )


def cached_count(usage: JSONObject, key: str) -> int | None:
    """A prompt-cache count of ``usage``: the Messages API leaves these out of ``input_tokens``
    (the case's input tokens are all three), and absent or null means none."""
    value = usage.get(key)
    return 0 if value is None else token_count(value)


def reply_text(blocks: list[Any]) -> str:
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")


def reply_output(blocks: list[Any]) -> str | None:
    """The reply's text; None when it has none beside its tool calls (as the openai target's
    ``content``, so a tool-calling reply reads the same from either target)."""
    text = reply_text(blocks)
    calls = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)
    return text if text or not calls else None


def assistant_message(data: JSONObject) -> JSONObject:
    """The reply as a transcript records it (:mod:`~evalsite.calls.targets.tools`): its text (None
    when it has none beside its calls) and each ``tool_use`` block as a call, ``input`` as JSON text."""
    blocks = data.get("content")
    blocks = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
    calls = [{"id": b.get("id"), "type": "function",
              "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input"), ensure_ascii=False)}}
             for b in blocks if b.get("type") == "tool_use"]
    message: dict[str, Any] = {"role": "assistant", "content": reply_output(blocks)}
    if calls:
        message["tool_calls"] = calls
    return message


def wire_messages(conversation: list[Any]) -> list[Any]:
    """The conversation as the Messages API takes it: system messages left out (they are the
    body's ``system``), an assistant message's calls as ``tool_use`` blocks, each run of tool
    results as one user turn of ``tool_result`` blocks, and no transcript keys."""
    messages: list[Any] = []
    results: list[Any] | None = None  # the tool results of the user turn being gathered
    for message in conversation:
        if isinstance(message, dict) and message.get("role") == "tool":
            if results is None:
                results = []
                messages.append({"role": "user", "content": results})
            results.append(tool_result(message))
            continue
        results = None
        if not isinstance(message, dict):
            messages.append(message)
        elif message.get("role") == "system":
            continue
        elif calls := tool_calls(message):
            messages.append({"role": "assistant", "content": [*_text_blocks(message.get("content")),
                                                              *(tool_use(call) for call in calls)]})
        else:
            messages.append(sent(message) if not TRANSCRIPT_KEYS.isdisjoint(message) else message)
    return messages


def tool_use(call: JSONObject) -> JSONObject:
    function = mapping(call.get("function"))
    arguments = function.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        parsed = None
    return {"type": "tool_use", "id": call.get("id"), "name": function.get("name"),
            "input": parsed if isinstance(parsed, dict) else {}}


def tool_result(message: JSONObject) -> JSONObject:
    block = {"type": "tool_result", "tool_use_id": message.get("tool_call_id"), "content": message.get("content")}
    if message.get(ERROR_KEY) is True:
        block["is_error"] = True
    return block


def _text_blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if isinstance(content, str) and content else []


@register_target("anthropic", model_in_spec=True)
def _make(rest: str, settings: JSONObject, project_root: Path) -> AnthropicMessages:
    check_settings("anthropic", settings, HTTP_SETTINGS | TOOL_SETTINGS | {"anthropic_version"})
    client = client_from_settings(
        settings, "anthropic", default_base_url=DEFAULT_BASE_URL, default_key_env="ANTHROPIC_API_KEY",
        key_header="x-api-key",
    )
    client.headers["anthropic-version"] = str(settings.get("anthropic_version", DEFAULT_VERSION))
    return AnthropicMessages(model_name(rest, settings, "anthropic"), client,
                             tool_handlers(settings, project_root, "anthropic"))
