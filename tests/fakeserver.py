"""A real HTTP server on 127.0.0.1 speaking OpenAI chat completions and Anthropic messages.

Tests and benchmarks point the ``openai`` and ``anthropic`` targets at it. By default it answers
``echo: <last user message>`` with usage counted in words. ``script`` plays scripted responses
for a given last user message, in order (then the default): a status such as 429 with a
``Retry-After`` header or 500, a slow response (``delay``), ``finish_reason: length``, a billed
``cost``, a custom ``reply``, a ``served_model`` other than the one asked for, a
``system_fingerprint``, ``usage_values`` that replace the counted usage fields, ``tool_calls``
(OpenAI's shape: the assistant message asks for these calls, its content ``reply`` or null; the
Messages API answers the same calls as ``tool_use`` blocks after a text block of ``reply``, if
any, with ``stop_reason: tool_use``). A request is scripted by its last user message with text:
a Messages API user turn of ``tool_result`` blocks only is passed over, as OpenAI's ``role: tool``
messages are. Every response carries a distinct id (``chatcmpl-<n>``/``msg_<n>``, n
the call's 1-based number; error responses send it as ``x-request-id``). Every request is
recorded in ``calls`` (headers lower-cased); ``max_in_flight`` is the most requests it held at once.

In-process: ``with FakeServer(delay=0.01) as server: ... server.url ...``.
As a process (benchmarks): ``python tests/fakeserver.py --delay 0.02`` prints ``PORT <n>``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
           500: "Internal Server Error", 503: "Service Unavailable"}


@dataclass
class Call:
    path: str
    headers: dict[str, str]
    body: dict
    content: str
    at: float


@dataclass
class FakeServer:
    delay: float = 0.0
    api_key: str | None = None
    script: dict[str, list[dict]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    port: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    tls: ssl.SSLContext | None = None  # serve HTTPS with this server context (tests/proxy_support.py makes one)

    def __post_init__(self):
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def calls_for(self, content: str) -> int:
        with self._lock:
            return sum(1 for call in self.calls if call.content == content)

    # ----- running it

    def __enter__(self) -> FakeServer:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run_in_thread, args=(ready,), daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
            self._thread.join(10)

    def _run_in_thread(self, ready: threading.Event) -> None:
        asyncio.run(self.serve(ready.set))

    async def serve(self, on_ready: Callable[[], None] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        server = await asyncio.start_server(self._connection, "127.0.0.1", self.port, backlog=1024, ssl=self.tls)
        self.port = server.sockets[0].getsockname()[1]
        if on_ready is not None:
            on_ready()
        async with server:
            await self._stopped.wait()

    # ----- HTTP/1.1 with keep-alive

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    break
                headers = {}
                while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", 0)))
                path = request_line.split()[1].decode()
                status, extra, payload = await self._respond(path, headers, body)
                data = json.dumps(payload).encode()
                head = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", "Content-Type: application/json",
                        f"Content-Length: {len(data)}", *(f"{k}: {v}" for k, v in extra.items())]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _respond(self, path: str, headers: dict, raw: bytes) -> tuple[int, dict, dict]:
        body = json.loads(raw or b"{}")
        messages = body.get("messages") or []
        content = next((text for m in reversed(messages) if m.get("role") == "user"
                        and (text := asked(m.get("content", ""))) is not None), "")
        with self._lock:
            self.calls.append(Call(path, headers, body, content, self._loop.time()))
            number = len(self.calls)
            queue = self.script.get(content)
            spec = queue.pop(0) if queue else {}
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(spec.get("delay", self.delay))
        finally:
            with self._lock:
                self.in_flight -= 1
        if self.api_key is not None:
            sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
            if sent != self.api_key:  # like some providers, echo what was sent
                return 401, {}, {"error": {"message": f"Incorrect API key provided: {sent}"}}
        status = spec.get("status", 200)
        if status != 200:
            extra = {"x-request-id": f"req-{number}", **spec.get("headers", {})}
            return status, extra, {"error": {"message": spec.get("message", f"status {status}")}}
        reply = spec.get("reply", None if "tool_calls" in spec else f"echo: {content}")
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in messages)
        usage = {"in": prompt_words, "out": len((reply or "").split())}
        model = spec.get("served_model", body.get("model"))
        if path.endswith("/messages"):
            return 200, spec.get("headers", {}), anthropic_body(reply, spec, usage, number, model)
        return 200, spec.get("headers", {}), openai_body(model, reply, spec, usage, number)


def asked(content) -> str | None:
    """A user message's text: its text blocks joined, None for a turn of tool results only."""
    if not isinstance(content, list):
        return content
    texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") != "tool_result"]
    return "".join(texts) if texts else None


def openai_body(model: str | None, reply: str | None, spec: dict, usage: dict, number: int = 1) -> dict:
    counted = {"prompt_tokens": usage["in"], "completion_tokens": usage["out"], "total_tokens": usage["in"] + usage["out"]}
    if "cost" in spec:
        counted["cost"] = spec["cost"]
    counted.update(spec.get("usage_values", {}))  # counts as a provider might send them: 12.0, NaN, "12"
    body = {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "model": model,
        "system_fingerprint": spec.get("system_fingerprint", "fp_fake"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                     "finish_reason": spec.get("finish_reason", "tool_calls" if "tool_calls" in spec else "stop")}],
    }
    if "tool_calls" in spec:
        body["choices"][0]["message"]["tool_calls"] = spec["tool_calls"]
    if spec.get("usage", True):
        body["usage"] = counted
    return body


def anthropic_body(reply: str | None, spec: dict, usage: dict, number: int = 1, model: str | None = None) -> dict:
    reason = {"length": "max_tokens", "stop": "end_turn"}.get(spec.get("finish_reason", "stop"))
    content = [{"type": "text", "text": reply}] if reply is not None else []
    for call in spec.get("tool_calls", ()):
        function = call["function"]
        content.append({"type": "tool_use", "id": call["id"], "name": function["name"],
                        "input": json.loads(function["arguments"])})
        reason = "tool_use"
    return {
        "id": f"msg_{number}",
        "type": "message",
        "model": model,
        "role": "assistant",
        "content": content,
        "stop_reason": reason,
        "usage": {"input_tokens": usage["in"], "output_tokens": usage["out"], **spec.get("usage_values", {})},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args()
    server = FakeServer(delay=options.delay, port=options.port)
    asyncio.run(server.serve(lambda: print(f"PORT {server.port}", flush=True)))


if __name__ == "__main__":
    main()
