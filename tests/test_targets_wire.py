"""What an HTTP target puts on the wire, now that requests go straight to httpx's transport:
the same headers ``AsyncClient.post`` sent, cookies kept."""

from __future__ import annotations

import asyncio
import json

import httpx
from hypothesis import given
from hypothesis import strategies as st

from evalsite.calls.targets.http import _REQUEST_JSON, JsonClient, RequestHeaders


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



def test_a_request_is_the_one_httpx_builds_from_json():
    """Built from its bytes with headers kept per path, a request is still exactly what
    ``httpx.Request("POST", url, json=body, headers=...)`` makes: headers in order, body, URL."""
    url = httpx.URL("http://127.0.0.1:8080/v1/chat/completions")
    body = {"model": "m", "messages": [{"role": "user", "content": "héllo \u2028 \x7f \"q\""}], "temperature": 0.2,
            "seed": 10**20}
    for extra in ({}, {"X-Thread": "t1"}, {"Content-Type": "application/json; charset=utf-8"}, {"Host": "other"},
                  {"Content-Length": "5"}, {"Transfer-Encoding": "chunked"}):
        headers = httpx.AsyncClient(headers={"Authorization": "Bearer k", **extra}).headers
        expected = httpx.Request("POST", url, json=body, headers=headers)
        content = _REQUEST_JSON.encode(body).encode()
        built = httpx.Request("POST", url, headers=RequestHeaders.of(url, headers).with_length(len(content)),
                              stream=httpx.ByteStream(content))
        assert built.headers.raw == expected.headers.raw and built.read() == expected.content
        assert (built.method, built.url) == (expected.method, expected.url)


REPLY_BODIES = [
    b'{"a":1,"a":2,"b":3}', b'{"n":18446744073709551615}', b'{"n":18446744073709551616}', b'{"n":-9223372036854775809}',
    b'{"n":123456789012345678901234567890}', b'{"x":0.30000000000000004441}', b'{"x":NaN,"y":-Infinity}',
    b'{"x":1e400}', b'{"s":"\\ud800"}', b'{"s":"\xed\xa0\x80"}', b'\xef\xbb\xbf{"x":1}', '{"x":"\u00e9"}'.encode("utf-16"),
    b' {"x" : [1, 2.5e-7 ,-0.0, true, null] } ', b'{"s":"\xc3\xa9\\u00e9\\n\\u2028"}', b'{"id":"1234567890123456789"}',
    b'[' * 1100 + b']' * 1100, b'{"x":1}x', b"", b'{"s":"\xff"}', b'{"s":"a\x01b"}',
]


def parsed(parse, content: bytes) -> tuple[str, str]:
    try:
        return "value", repr(parse(content))
    except (ValueError, RecursionError) as exc:
        return "error", type(exc).__name__


def test_a_reply_body_is_parsed_as_the_standard_parser_parses_it():
    """orjson reads a reply only where it reads it as ``json.loads`` does: whatever it would read
    otherwise (an integer past 64 bits) or refuses is left to the standard parser."""
    from evalsite.calls.targets.http import Reply

    for content in REPLY_BODIES:
        assert parsed(lambda c: Reply(httpx.Response(200), c).json(), content) == parsed(json.loads, content), content


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                    max_leaves=20))
def test_any_json_reply_reads_the_same(value):
    from evalsite.calls.targets.http import Reply

    content = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    assert parsed(lambda c: Reply(httpx.Response(200), c).json(), content) == parsed(json.loads, content)
