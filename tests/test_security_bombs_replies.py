"""Issue 32, Medium 7: provider replies that are bombs or simply too large.

A real HTTP server on 127.0.0.1 answers some questions with a gzip (or deflate, or zstd) bomb —
200 MB of zeros in a few hundred kilobytes — and some with a 50 MB body. The client used to hold
each whole (five 50 MB replies: 460 MB peak). Now a reply is read a piece at a time and refused
as soon as it passes ``max_reply_bytes``, received or decoded: that case fails with the reason and
the run goes on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from bombs_support import MIB, gzip_zeros, peak_of, zlib_zeros, zstd_zeros
from fakeserver import openai_body
from runner_support import only_run, write_experiment

from evalsite.calls.targets.http import DEFAULT_MAX_REPLY_BYTES

BOMB_BYTES = 208 * MIB  # a multiple of the bombs' 16 MiB piece
HUGE_BYTES = 50 * MIB
BOMBS = {"gzip": gzip_zeros, "deflate": zlib_zeros, "zstd": zstd_zeros}


class Provider(BaseHTTPRequestHandler):
    """OpenAI chat completions: ``bomb <encoding>`` gets a bomb, ``size <n>`` a reply of about ``n``
    bytes (streamed, with its true Content-Length), ``encoded <name>`` a plain reply labelled with
    that Content-Encoding, anything else ``echo: <question>``."""

    protocol_version = "HTTP/1.1"
    bombs: dict[str, bytes] = {}
    failed: set[str] = set()  # the ``failing <status>`` questions answered once with that status

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        question = body["messages"][-1]["content"]
        word, _, argument = question.partition(" ")
        if word == "bomb":
            self._send(self.bombs[argument], {"Content-Encoding": argument})
        elif word == "size":
            self._send_large(int(argument), body["model"])
        elif word == "failing":  # an error status with a body past any limit, then (429 only) the answer
            status = int(argument)
            if status != 429 or question not in self.failed:
                self.failed.add(question)
                self._send_large(HUGE_BYTES, body["model"], status)
                return
            self._send(json.dumps(openai_body(body["model"], "after 429", {}, {"in": 1, "out": 2})).encode())
        elif word == "encoded":  # a plain JSON reply labelled with this Content-Encoding
            reply = openai_body(body["model"], f"echo: {question}", {}, {"in": 1, "out": 2})
            self._send(json.dumps(reply).encode(), {"Content-Encoding": argument})
        else:
            reply = openai_body(body["model"], f"echo: {question}", {}, {"in": 1, "out": 2})
            self._send(json.dumps(reply).encode())

    def _send(self, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(200)
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(data)), **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self._write(memoryview(data))

    def _send_large(self, size: int, model: str, status: int = 200) -> None:
        """A valid reply whose content is ``size`` x's, written a megabyte at a time."""
        head, tail = json.dumps(openai_body(model, "@", {}, {"in": 1, "out": 2})).encode().split(b"@")
        filler = b"x" * MIB
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(head) + size + len(tail)))
        self.end_headers()
        pieces = [head, *([filler] * (size // MIB)), filler[: size % MIB], tail]
        for piece in pieces:
            if not self._write(memoryview(piece)):
                return

    def _write(self, data: memoryview) -> bool:
        try:
            self.wfile.write(data)
            return True
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: as it should
            self.close_connection = True
            return False

    def log_message(self, *args) -> None:
        pass


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """A client that hung up on a reply it refused is expected here; nothing to print."""


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    Provider.bombs = {encoding: make(BOMB_BYTES) for encoding, make in BOMBS.items()}
    server = QuietServer(("127.0.0.1", 0), Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _run(root, cli, provider: str, questions: list[str], **settings) -> dict[str, dict]:
    rows = [{"id": f"q{n}", "input": question, "expected": f"echo: {question}"} for n, question in enumerate(questions)]
    arm = {"id": "gpt", "target": "openai:fake", "settings": {"base_url": provider, **settings}}
    manifest = write_experiment(root, rows, [arm], concurrency=4)
    result = cli("run", manifest)
    assert "Traceback" not in result.output
    assert (root / "runs").is_dir(), result.output
    run = only_run(root)
    assert run.footer is not None  # the run went on to its end
    return {case["input"]: case for case in run.cases}


def test_bombs_and_huge_replies_fail_their_case_at_the_default_limit(runner_project, cli, provider):
    assert all(len(bomb) < 2 * MIB for bomb in Provider.bombs.values())  # small compressed, huge decompressed
    questions = ["hello", *(f"bomb {encoding}" for encoding in BOMBS), *[f"size {HUGE_BYTES}"] * 5, "bye"]
    cases: dict[str, dict] = {}
    peak = peak_of(lambda: cases.update(_run(runner_project, cli, provider, questions)))
    too_large = (f"the reply is larger than {DEFAULT_MAX_REPLY_BYTES:,} bytes (settings.max_reply_bytes); "
                 "it was not read past that")
    for question in questions[1:-1]:
        assert cases[question]["error"] == too_large, question
        assert cases[question]["output"] is None
    assert cases["hello"]["error"] is None and cases["hello"]["output"] == "echo: hello"
    assert cases["bye"]["output"] == "echo: bye"
    # four replies read at once, each stopped at the 16 MiB limit: well under one whole bomb
    assert peak < 4 * DEFAULT_MAX_REPLY_BYTES + 32 * MIB < BOMB_BYTES


@pytest.mark.parametrize("encoding", list(BOMBS))
def test_a_small_limit_counts_decoded_bytes(runner_project, cli, provider, encoding):
    cases = _run(runner_project, cli, provider, [f"bomb {encoding}", "fine"], max_reply_bytes=64 * 1024)
    assert cases[f"bomb {encoding}"]["error"].startswith("the reply is larger than 65,536 bytes")
    assert cases["fine"]["output"] == "echo: fine"


def test_a_reply_under_the_limit_is_whole_and_one_over_is_refused(runner_project, cli, provider):
    limit = 256 * 1024
    cases = _run(runner_project, cli, provider, ["size 200000", "size 300000"], max_reply_bytes=limit)
    assert cases["size 200000"]["output"] == "x" * 200000
    assert cases["size 300000"]["error"].startswith(f"the reply is larger than {limit:,} bytes")


def test_the_limit_must_be_a_positive_whole_number(runner_project, cli, provider):
    rows = [{"id": "q0", "input": "hi", "expected": "echo: hi"}]
    arm = {"id": "gpt", "target": "openai:fake", "settings": {"base_url": provider, "max_reply_bytes": "lots"}}
    result = cli("run", write_experiment(runner_project, rows, [arm]))
    assert result.exit_code == 1
    assert "settings.max_reply_bytes: needs a whole number >= 1, got 'lots'" in result.output


def test_an_encoding_the_client_cannot_decode_fails_its_case(runner_project, cli, provider):
    cases = _run(runner_project, cli, provider, ["encoded br", "encoded identity"])
    assert cases["encoded br"]["error"] == "the reply's Content-Encoding cannot be decoded: unsupported encoding 'br'"
    assert cases["encoded identity"]["output"] == "echo: encoded identity"


def test_an_error_reply_past_the_limit_keeps_its_status(runner_project, cli, provider):
    """A 429 or 5xx is worth retrying however long its body (the retry is answered), and a 4xx is
    refused for its status, its first words shown: the body is cut at the limit, not refused."""
    Provider.failed.clear()
    cases = _run(runner_project, cli, provider, ["failing 429", "failing 400"], max_reply_bytes=64 * 1024)
    assert cases["failing 429"]["error"] is None and cases["failing 429"]["output"] == "after 429"
    assert cases["failing 429"]["attempts"] == 2
    error = cases["failing 400"]["error"]
    assert error.startswith("HTTP 400 Bad Request: {") and "xxxxxxxx" in error
    assert "larger than" not in error
