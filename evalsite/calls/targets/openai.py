"""The ``openai`` target: any OpenAI-compatible ``/chat/completions`` endpoint.

Covers OpenAI, vLLM, Ollama, the llama.cpp server and a LiteLLM proxy. The arm's ``params``
(temperature, max_tokens, top_p, seed, stop, response_format…) go into the request body as
they are. Settings: ``model`` (or ``openai:<model>``), ``base_url`` (default OpenAI's),
``api_key_env``, ``headers``, ``headers_env``, ``max_connections``, ``max_reply_bytes``, and for
tool calls ``tool_handlers`` and ``max_tool_rounds`` (:mod:`evalsite.calls.targets.tools`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from evalsite.calls.targets.base import (
    THREAD_HEADER,
    TargetRequest,
    TargetResult,
    check_settings,
    is_cost,
    register_target,
    text_or_none,
    token_count,
)
from evalsite.calls.targets.http import (
    HTTP_SETTINGS,
    chat_messages,
    client_from_settings,
    header,
    model_name,
)
from evalsite.calls.targets.tools import TOOL_SETTINGS, ChatOverHttp, Round, call_with_tools, tool_handlers, wire
from evalsite.jsonshape import JSONObject, mapping

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BILLED_COST_HEADER = "x-litellm-response-cost"


class OpenAIChat(ChatOverHttp):
    kind = "openai"

    async def generate(self, request: TargetRequest) -> TargetResult:
        messages = chat_messages(request.input)
        thread = {THREAD_HEADER: request.thread_id} if request.thread_id else None

        async def complete(conversation: list[Any]) -> Round | str:
            body = {**request.params, "model": self.model, "messages": wire(conversation)}
            clock = time.perf_counter()
            reply = await self.client.post("/chat/completions", body, thread)
            if isinstance(reply, str):
                return reply
            data, headers = reply
            message = first_message(data)
            return Round(parse_completion(data, header(headers, BILLED_COST_HEADER), message), message,
                         (time.perf_counter() - clock) * 1000)

        return await call_with_tools(complete, messages, self.tools)


def first_message(data: JSONObject) -> JSONObject:
    choices = data.get("choices")
    return mapping(mapping(choices[0]).get("message")) if isinstance(choices, list) and choices else {}


def parse_completion(data: JSONObject, billed_header: str | None, message: JSONObject) -> TargetResult:
    """The result of one reply whose first choice's message (:func:`first_message`) is ``message``."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return TargetResult(error=f"the response has no choices: {str(data)[:200]}")
    if not isinstance(choices[0].get("message"), dict):  # else its answer would read as none, a wrong answer
        return TargetResult(error=f"the response's first choice has no message object: {str(choices[0])[:200]}")
    usage = mapping(data.get("usage"))
    return TargetResult(
        output=message.get("content"),
        input_tokens=token_count(usage.get("prompt_tokens")),
        output_tokens=token_count(usage.get("completion_tokens")),
        cache_read_tokens=token_count(mapping(usage.get("prompt_tokens_details")).get("cached_tokens")) or 0,
        cost_usd=billed_cost(usage.get("cost"), billed_header),
        finish_reason=choices[0].get("finish_reason"),
        request_id=text_or_none(data.get("id")),
        served_model=text_or_none(data.get("model")),
        system_fingerprint=text_or_none(data.get("system_fingerprint")),
    )


def billed_cost(in_usage: Any, in_header: str | None) -> float | None:
    """Cost the endpoint billed: ``usage.cost`` (OpenRouter) or LiteLLM's response-cost header."""
    if isinstance(in_usage, (int, float)) and not isinstance(in_usage, bool):
        # one out of range is kept as sent, for checked_result to refuse by value (float(10**400) raises)
        return float(in_usage) if is_cost(in_usage) else in_usage
    try:
        return float(in_header) if in_header else None
    except ValueError:
        return None


@register_target("openai", model_in_spec=True)
def _make(rest: str, settings: JSONObject, project_root: Path) -> OpenAIChat:
    check_settings("openai", settings, HTTP_SETTINGS | TOOL_SETTINGS)
    client = client_from_settings(
        settings, "openai", default_base_url=DEFAULT_BASE_URL, default_key_env="OPENAI_API_KEY",
        key_header="Authorization", key_prefix="Bearer ",
    )
    return OpenAIChat(model_name(rest, settings, "openai"), client, tool_handlers(settings, project_root, "openai"))
