"""What an HTTP target puts on the wire, now that requests go straight to httpx's transport:
the same headers ``AsyncClient.post`` sent, cookies kept."""

from __future__ import annotations

import asyncio

import httpx

from evalsite.calls.targets.http import JsonClient


def post_all(client: JsonClient, bodies: list[dict], headers: dict | None = None) -> list:
    async def go() -> list:
        try:
            return [await client.post("/v1/chat/completions", body, headers) for body in bodies]
        finally:
            await client.aclose()

    return asyncio.run(go())


def chat(content: str) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def test_the_request_carries_httpx_clients_headers_and_this_calls_own(server):
    client = JsonClient(server.url, {"Authorization": "Bearer k"}, [], 4)
    (reply,) = post_all(client, [chat("hi")], {"X-Evalsite-Thread": "t-1"})
    data, headers = reply
    assert data["choices"][0]["message"]["content"] == "echo: hi"
    assert headers["content-type"] == "application/json"
    sent = server.calls[0].headers
    assert sent["user-agent"] == f"python-httpx/{httpx.__version__}"
    assert sent["authorization"] == "Bearer k" and sent["x-evalsite-thread"] == "t-1"
    assert sent["content-type"] == "application/json" and "gzip" in sent["accept-encoding"]
    assert sent["host"] == f"127.0.0.1:{server.port}"


def test_a_cookie_the_server_sets_is_sent_back_on_later_calls(server):
    server.script["first"] = [{"headers": {"Set-Cookie": "lb=node-7; Path=/"}}]
    client = JsonClient(server.url, {}, [], 4)
    post_all(client, [chat("first"), chat("second"), chat("third")])
    cookies = [call.headers.get("cookie") for call in server.calls]
    assert cookies == [None, "lb=node-7", "lb=node-7"]

