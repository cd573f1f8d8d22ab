"""The ``anthropic`` target: the Messages API (``POST /v1/messages``) over httpx.

System messages of the input become the request's ``system`` field; ``params`` go into the
body as they are (``max_tokens`` defaults to 1024 because the API requires it). Stop reasons
are recorded in the OpenAI vocabulary, so ``max_tokens`` reads ``length`` like every target.
Settings: ``model`` (or ``anthropic:<model>``), ``base_url`` (default Anthropic's),
``api_key_env`` (default ``ANTHROPIC_API_KEY``), ``anthropic_version``, ``headers``,
``headers_env``, ``max_connections``, ``max_reply_bytes``.
"""

from __future__ import annotations

from pathlib import Path

from evalsite.calls.targets.base import (
    THREAD_HEADER,
    TargetRequest,
    TargetResult,
    check_settings,
    register_target,
    text_or_none,
    token_count,
)
from evalsite.calls.targets.http import (
    HTTP_SETTINGS,
    ModelOverHttp,
    chat_messages,
    client_from_settings,
    model_name,
)
from evalsite.jsonshape import JSONObject, mapping

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}


class AnthropicMessages(ModelOverHttp):
    kind = "anthropic"

    async def generate(self, request: TargetRequest) -> TargetResult:
        messages = chat_messages(request.input)
        system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system")
        body = {
            "max_tokens": DEFAULT_MAX_TOKENS,
            **request.params,
            "model": self.model,
            "messages": [m for m in messages if m.get("role") != "system"],
        }
        if system:
            body["system"] = system
        thread = {THREAD_HEADER: request.thread_id} if request.thread_id else None
        reply = await self.client.post("/v1/messages", body, thread)
        if isinstance(reply, str):
            return TargetResult(error=reply)
        return parse_message(reply[0])


def parse_message(data: JSONObject) -> TargetResult:
    blocks = data.get("content")
    if not isinstance(blocks, list):
        return TargetResult(error=f"the response has no content: {str(data)[:200]}")
    text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    usage = mapping(data.get("usage"))
    reason = text_or_none(data.get("stop_reason"))
    return TargetResult(
        output=text,
        input_tokens=token_count(usage.get("input_tokens")),
        output_tokens=token_count(usage.get("output_tokens")),
        finish_reason=None if reason is None else STOP_REASONS.get(reason, reason),
        request_id=text_or_none(data.get("id")),
        served_model=text_or_none(data.get("model")),
    )


@register_target("anthropic", model_in_spec=True)
def _make(rest: str, settings: JSONObject, project_root: Path) -> AnthropicMessages:
    check_settings("anthropic", settings, HTTP_SETTINGS | {"anthropic_version"})
    client = client_from_settings(
        settings, "anthropic", default_base_url=DEFAULT_BASE_URL, default_key_env="ANTHROPIC_API_KEY",
        key_header="x-api-key",
    )
    client.headers["anthropic-version"] = str(settings.get("anthropic_version", DEFAULT_VERSION))
    return AnthropicMessages(model_name(rest, settings, "anthropic"), client)
