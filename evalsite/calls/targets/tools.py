"""Tool calls in a chat: the project's python handlers, and the conversation that answers them.

Shared by the provider targets (``openai``, ``anthropic``): a target hands :func:`call_with_tools`
its ``complete`` (one round trip: the conversation in, a :class:`Round` out) and everything else —
the handlers, the rounds, the transcript and its figures — is here, so every provider's transcript
has one shape: OpenAI chat messages (an assistant message's ``tool_calls`` with ``id`` and
``function.name`` / ``function.arguments`` as a JSON text, a ``role: tool`` message with
``tool_call_id`` and ``content``). A target whose API speaks otherwise translates its reply into
that shape and the conversation into its own on the way out (``anthropic``'s ``tool_use`` and
``tool_result`` blocks).

When a reply asks for tools (``tool_calls``), the case keeps the whole conversation as its
``transcript``: the request's messages, each assistant message with its calls and arguments, each
tool's result, the last reply. Each assistant message records its own round trip's figures
(``latency_ms``, ``input_tokens``, ``output_tokens``, a billed ``cost_usd``), each tool result
its handler's ``latency_ms``, and a result that reports a failure ``is_error: true``; those keys
are the transcript's own and are never sent back to the model as they are (:func:`wire`).

With ``settings.tool_handlers`` (tool name → ``module:function`` in the project) every call is
answered by its handler, called with the parsed arguments as keyword arguments, and the results
are sent back until the model answers without calls or ``settings.max_tool_rounds`` is spent.
A handler that raises, a tool without a handler and arguments that are not a JSON object are
answered to the model as ``Error: …`` (as a tool would answer a bad call), marked ``is_error`` and
kept in the transcript; a handler raising :class:`TransientTargetError` retries the whole call.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Self

from evalsite.calls.targets.base import TargetResult, TransientTargetError, total_or_none
from evalsite.calls.targets.http import JsonClient, ModelOverHttp, positive_setting
from evalsite.calls.targets.python_target import fresh_callable
from evalsite.errors import TargetError
from evalsite.jsonshape import JSONObject, mapping
from evalsite.project import load_callable
from evalsite.python_refs import check_reference

TOOL_SETTINGS = {"tool_handlers", "max_tool_rounds"}
DEFAULT_MAX_TOOL_ROUNDS = 8
#: A transcript message's own figures, as the site reads them (evalsite/site/transcripts.py).
FIGURE_KEYS = ("latency_ms", "input_tokens", "output_tokens", "cost_usd")
#: A tool result's mark that it reports a failure (sent as Anthropic's ``is_error``; OpenAI has none).
ERROR_KEY = "is_error"
#: What a transcript records on a message that no request sends as it is.
TRANSCRIPT_KEYS = frozenset((*FIGURE_KEYS, ERROR_KEY))


@dataclass(slots=True)
class Round:
    """One round trip: what it answered (this round's tokens and billed cost) and the assistant message.
    Not frozen: one is made per call, and a frozen dataclass's ``__init__`` costs 3 times as much."""

    result: TargetResult
    message: JSONObject
    latency_ms: float


#: Sends a conversation (the transcript so far, its own keys included: the target puts it in its
#: wire format, :func:`wire` for OpenAI's) for one more round; a string is a final error.
Complete = Callable[[list[Any]], Awaitable[Round | str]]


@dataclass
class ToolHandlers:
    """The handlers by tool name (``specs``: ``module:function``), each imported when the model
    first calls it — checked in its source when the target is built, so ``evalsite validate``
    runs no project code — or, ``fresh`` (:meth:`renewed`), loaded as a private copy."""

    specs: dict[str, str]
    project_root: Path
    max_rounds: int = DEFAULT_MAX_TOOL_ROUNDS
    fresh: bool = False
    loaded: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def renewed(self) -> ToolHandlers:
        """The same handlers from modules of their own, executed anew (``schedule.reset_state``)."""
        return ToolHandlers(self.specs, self.project_root, self.max_rounds, fresh=True)

    def handler(self, name: str) -> Callable[..., Any] | None:
        """The handler of tool ``name``, or None; a module that cannot be imported raises
        :class:`TargetError` naming the setting (the case's error)."""
        if name not in self.loaded and name in self.specs:
            load = fresh_callable if self.fresh else load_callable
            self.loaded[name] = load(self.specs[name], self.project_root, f"settings.tool_handlers.{name}")
        return self.loaded.get(name)

    async def answer(self, call: JSONObject) -> JSONObject:
        """The ``role: tool`` message answering one tool call."""
        function = mapping(call.get("function"))
        clock = time.perf_counter()
        content, failed = await self._run(function.get("name"), function.get("arguments"))
        message = {"role": "tool", "tool_call_id": call.get("id"), "content": content,
                   "latency_ms": round((time.perf_counter() - clock) * 1000, 3)}
        if failed:
            message[ERROR_KEY] = True
        return message

    async def _run(self, name: Any, arguments: Any) -> tuple[str, bool]:
        """The tool's result as the model is sent it, and whether it reports a failure."""
        handler = self.handler(name) if isinstance(name, str) else None
        if handler is None:
            return f"Error: no handler for tool {name!r} (settings.tool_handlers names {', '.join(sorted(self.specs))})", True
        try:
            parsed = json.loads(arguments or "{}") if isinstance(arguments, str) else arguments
        except ValueError as exc:
            return f"Error: the arguments are not JSON: {exc}", True
        if not isinstance(parsed, dict):
            return "Error: the arguments are not a JSON object", True
        try:
            if inspect.iscoroutinefunction(handler):
                value = await handler(**parsed)
            else:
                value = await asyncio.to_thread(handler, **parsed)
        except TransientTargetError:
            raise
        except Exception as exc:  # the handler failed: the model is told, as a real tool would tell it
            return f"Error: {type(exc).__name__}: {exc}", True
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str), False


class ChatOverHttp(ModelOverHttp):
    """A chat target over HTTP whose replies' tool calls ``tools`` answers (None: they are recorded,
    not answered)."""

    def __init__(self, model: str, client: JsonClient, tools: ToolHandlers | None = None):
        super().__init__(model, client)
        self.tools = tools

    def renewed(self) -> Self:
        """With its tool handlers' modules executed anew (``schedule.reset_state``)."""
        return type(self)(self.model, self.client, self.tools.renewed()) if self.tools is not None else self


def tool_handlers(settings: JSONObject, project_root: Path, kind: str) -> ToolHandlers | None:
    """The handlers ``settings.tool_handlers`` names, each checked in its source now (a missing one
    fails before any call, and nothing is imported)."""
    named = settings.get("tool_handlers")
    if named is None:
        if "max_tool_rounds" in settings:
            raise TargetError(f"settings.max_tool_rounds: only read with settings.tool_handlers (target {kind})")
        return None
    if not isinstance(named, dict) or not named or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in named.items()):
        raise TargetError(f"settings.tool_handlers: needs a mapping of tool names to 'module:function' (target {kind})")
    rounds = positive_setting(settings, "max_tool_rounds", DEFAULT_MAX_TOOL_ROUNDS, kind)
    for name, spec in named.items():
        check_reference(spec, project_root, f"settings.tool_handlers.{name}")
    return ToolHandlers(dict(named), project_root, rounds)


def tool_calls(message: JSONObject) -> list[JSONObject]:
    calls = message.get("tool_calls")
    return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []


def wire(messages: list[Any]) -> list[Any]:
    """The messages as an OpenAI request sends them: without the keys a transcript records on them
    (:data:`TRANSCRIPT_KEYS`; the list itself when none has any, as on every call without tools)."""
    if all(not isinstance(m, dict) or TRANSCRIPT_KEYS.isdisjoint(m) for m in messages):
        return messages
    return [sent(m) if isinstance(m, dict) else m for m in messages]


def sent(message: JSONObject) -> JSONObject:
    """One message without the keys only a transcript records (:data:`TRANSCRIPT_KEYS`)."""
    return {k: v for k, v in message.items() if k not in TRANSCRIPT_KEYS}


async def call_with_tools(complete: Complete, messages: list[Any], handlers: ToolHandlers | None) -> TargetResult:
    """One call of a chat target: ``messages`` sent, and when the reply asks for tools, the
    conversation that answers them (:func:`converse`); a reply without calls is the result as it is."""
    first = await complete(messages)
    if isinstance(first, str):
        return TargetResult(error=first)
    if first.result.error is not None or not tool_calls(first.message):
        return first.result
    return await converse(complete, messages, first, handlers)


async def converse(complete: Complete, messages: list[Any], first: Round, handlers: ToolHandlers | None) -> TargetResult:
    """The call's result once the model asked for tools in ``first``: answered by ``handlers`` round
    after round (when there are any), with the whole conversation as its transcript."""
    rounds = [first]
    transcript = [*messages, recorded(first)]
    while handlers is not None and (calls := tool_calls(rounds[-1].message)):
        if len(rounds) > handlers.max_rounds:
            return finished(rounds, transcript, f"the model still called tools after {handlers.max_rounds} rounds "
                                                "(settings.max_tool_rounds)")
        for call in calls:
            transcript.append(await handlers.answer(call))
        reply = await complete(list(transcript))
        if isinstance(reply, str):
            return finished(rounds, transcript, f"round {len(rounds) + 1}: {reply}")
        rounds.append(reply)
        transcript.append(recorded(reply))
    return finished(rounds, transcript)


def recorded(round_trip: Round) -> JSONObject:
    """The assistant message as the transcript keeps it: text, calls, this round trip's figures."""
    message: dict[str, Any] = {"role": "assistant", "content": round_trip.message.get("content")}
    if calls := tool_calls(round_trip.message):
        message["tool_calls"] = calls
    result = round_trip.result
    figures = (round(round_trip.latency_ms, 3), result.input_tokens, result.output_tokens, result.cost_usd)
    message.update({key: value for key, value in zip(FIGURE_KEYS, figures) if value is not None})
    return message


def finished(rounds: list[Round], transcript: list[Any], error: str | None = None) -> TargetResult:
    """One result for the whole conversation: tokens and billed cost summed (unknown if any round's
    is), the last reply's text, reason and provenance."""
    results = [r.result for r in rounds]
    return replace(
        results[-1],
        output=None if error else results[-1].output,
        input_tokens=total_or_none(r.input_tokens for r in results),
        output_tokens=total_or_none(r.output_tokens for r in results),
        cost_usd=total_or_none(r.cost_usd for r in results),
        cache_read_tokens=sum(r.cache_read_tokens for r in results),
        cache_write_tokens=sum(r.cache_write_tokens for r in results),
        error=error,
        transcript=transcript,
    )
