"""HTTP targets go through the proxy the environment names (``HTTP_PROXY``…, ``NO_PROXY``), tested
with a real forwarding proxy and the fake provider, both on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import socket

import httpx
import pytest
from fakeserver import FakeServer
from proxy_support import ForwardingProxy, https_certificates
from runner_support import only_run, openai_arm, questions, write_experiment

from evalsite.calls.targets.http import JsonClient, aiohttp_transport, shared_ssl_context

PASSWORD = "pr0xy-pa55word-never-logged"


@pytest.fixture
def proxy():
    """The forwarding proxy (conftest's autouse fixture has cleared the machine's proxy variables)."""
    with ForwardingProxy() as running:
        yield running


@pytest.fixture
def https_server(tmp_path, monkeypatch):
    """The fake provider over HTTPS with a test CA's certificate for 127.0.0.1; ``SSL_CERT_FILE``
    names that CA, and the shared SSL context is made afresh so it trusts it (and again after)."""
    context, bundle = https_certificates(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    shared_ssl_context.cache_clear()
    with FakeServer(tls=context) as running:
        yield running
    shared_ssl_context.cache_clear()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_calls_go_through_http_proxy_with_its_credentials(runner_project, server, proxy, cli, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", f"http://evalsite:{PASSWORD}@"))
    manifest = write_experiment(runner_project, questions(3), [openai_arm(server)])
    result = cli("run", manifest)
    assert result.exit_code == 0, result.output
    assert sorted(case["output"] for case in only_run(runner_project).cases) == [
        "echo: question 0", "echo: question 1", "echo: question 2"]
    assert [seen.url for seen in proxy.seen] == [f"{server.url}/v1/chat/completions"] * 3
    credentials = base64.b64encode(f"evalsite:{PASSWORD}".encode()).decode()
    assert {seen.proxy_authorization for seen in proxy.seen} == {f"Basic {credentials}"}
    written = b"".join(path.read_bytes() for path in (runner_project / "runs").rglob("*") if path.is_file())
    assert PASSWORD.encode() not in written


def test_an_https_api_is_reached_through_the_proxy_by_connect(runner_project, https_server, proxy, cli,
                                                             monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace("http://", f"http://evalsite:{PASSWORD}@"))
    manifest = write_experiment(runner_project, questions(3), [openai_arm(https_server)])
    result = cli("run", manifest)
    assert result.exit_code == 0, result.output
    assert all(case["error"] is None for case in only_run(runner_project).cases)
    assert len(https_server.calls) == 3  # answered over TLS, through the tunnels
    assert proxy.seen and {seen.url for seen in proxy.seen} == {f"127.0.0.1:{https_server.port}"}
    credentials = base64.b64encode(f"evalsite:{PASSWORD}".encode()).decode()
    assert {seen.proxy_authorization for seen in proxy.seen} == {f"Basic {credentials}"}


def test_through_the_proxy_the_api_certificate_is_still_verified(runner_project, https_server, proxy, cli,
                                                                 monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE")  # the test CA is no longer trusted
    shared_ssl_context.cache_clear()
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    manifest = write_experiment(runner_project, questions(1), [openai_arm(https_server)])
    cli("run", manifest)
    (case,) = only_run(runner_project).cases
    assert case["error"].startswith("connection error") and "certificate" in case["error"].lower(), case["error"]
    assert https_server.calls == [] and len(proxy.seen) >= 1


def test_lower_case_variable_and_all_proxy_are_read(runner_project, server, proxy, cli, monkeypatch):
    monkeypatch.setenv("all_proxy", proxy.url)
    manifest = write_experiment(runner_project, questions(2), [openai_arm(server)])
    assert cli("run", manifest).exit_code == 0
    assert len(proxy.seen) == 2


def test_no_proxy_naming_the_host_bypasses_the_proxy(runner_project, server, proxy, cli, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "example.com, 127.0.0.1")
    manifest = write_experiment(runner_project, questions(2), [openai_arm(server)])
    assert cli("run", manifest).exit_code == 0
    assert proxy.seen == []
    assert all(case["error"] is None for case in only_run(runner_project).cases)


def test_a_proxy_that_refuses_is_a_connection_error_without_its_password(runner_project, server, proxy, cli,
                                                                         monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", f"http://evalsite:{PASSWORD}@127.0.0.1:{closed_port()}")
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)])
    result = cli("run", manifest)
    (case,) = only_run(runner_project).cases
    assert case["error"].startswith("connection error"), case["error"]
    assert PASSWORD not in result.output and server.calls == []
    written = b"".join(path.read_bytes() for path in (runner_project / "runs").rglob("*") if path.is_file())
    assert PASSWORD.encode() not in written


@pytest.mark.parametrize("value", ["socks5://evalsite:secret@127.0.0.1:1080", "ftp://127.0.0.1:21"])
def test_a_proxy_scheme_aiohttp_cannot_speak_is_refused_naming_the_variable(runner_project, server, proxy, cli,
                                                                          monkeypatch, value):
    monkeypatch.setenv("HTTP_PROXY", value)
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)])
    result = cli("run", manifest)
    assert result.exit_code != 0
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("Error: arm 'gpt': HTTP_PROXY=") and "only http:// and https:// proxies" in line, line
    assert "secret" not in result.output
    assert not (runner_project / "runs").exists() or not any((runner_project / "runs").iterdir())


@pytest.mark.parametrize(("value", "problem"), [("http://", "HTTP_PROXY: names no proxy host"),
                                                ("http://127.0.0.1:port", "HTTP_PROXY: not a proxy URL")])
def test_a_malformed_proxy_variable_is_one_line_naming_it(runner_project, server, proxy, cli, monkeypatch, value,
                                                          problem):
    monkeypatch.setenv("HTTP_PROXY", value)
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)])
    result = cli("run", manifest)
    assert result.exit_code != 0 and result.output.strip().splitlines()[-1].startswith(f"Error: arm 'gpt': {problem}")


def test_only_a_client_with_a_tls_connection_loads_the_ca_bundle(server, https_server, monkeypatch):
    """An ``http://`` API (a local vLLM or Ollama) never pays for loading the CA bundle; an
    ``https://`` API or proxy does, and is verified against it."""
    assert not JsonClient(server.url + "/v1", {}, [], 4).needs_tls
    assert JsonClient(https_server.url + "/v1", {}, [], 4).needs_tls
    assert JsonClient("HTTPS://api.example/v1", {}, [], 4).needs_tls
    assert JsonClient(server.url, {}, [], 4, httpx.Proxy("https://proxy.example:3128")).needs_tls

    async def answer(client: JsonClient):
        try:
            return await client.post("/v1/chat/completions", {"model": "m", "messages": []})
        finally:
            await client.aclose()

    loaded = shared_ssl_context.cache_info().misses
    data, _ = asyncio.run(answer(JsonClient(server.url, {}, [], 4)))
    assert data["choices"] and shared_ssl_context.cache_info().misses == loaded
    data, _ = asyncio.run(answer(JsonClient(https_server.url, {}, [], 4)))  # SSL_CERT_FILE trusts the test CA
    assert data["choices"] and shared_ssl_context.cache_info().misses == loaded + 1


def test_the_context_without_tls_never_connects_unverified(https_server):
    """Should a TLS connection ever go through the context of a client without one, it fails
    verification: that context trusts no certificate, even one the environment trusts."""

    async def send() -> httpx.Response:
        async with httpx.AsyncClient(transport=aiohttp_transport(1, tls=False)) as client:
            return await client.post(https_server.url + "/v1/chat/completions", json={"model": "m", "messages": []})

    with pytest.raises(httpx.ConnectError, match="(?i)certificate"):
        asyncio.run(send())
    assert https_server.calls == []
