"""Hostile replies to ``evalsite run``: a real server on 127.0.0.1 answers each question with the
raw bytes the test gives it (not HTTP at all, a header past every limit, JSON nested past Python's
limit…), and a python target returns or raises what no sane function would. Every one must be
that case's error, in words naming the reply, the run going on to its end."""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Iterator

import pytest
from fakeserver import openai_body
from runner_support import only_run, write_experiment


def http_reply(body: bytes, status: str = "200 OK", headers: dict[str, str] | None = None) -> bytes:
    head = {"Content-Type": "application/json", "Content-Length": str(len(body)), **(headers or {})}
    return f"HTTP/1.1 {status}\r\n".encode() + b"".join(f"{k}: {v}\r\n".encode() for k, v in head.items()) + b"\r\n" + body


def answer(text: str) -> bytes:
    return http_reply(json.dumps(openai_body("m", text, {}, {"in": 1, "out": 2})).encode())


#: question → the bytes the server writes back (then it closes the connection)
REPLIES = {
    "ok": answer("fine"),
    "not http": b"\x00\x01\x02 not http\r\n\r\n",
    "bad length": b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n{}",
    "long header": b"HTTP/1.1 200 OK\r\nX-Pad: " + b"v" * 20_000 + b"\r\nContent-Length: 2\r\n\r\n{}",
}


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        length = 0
        while (line := self.rfile.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        question = json.loads(self.rfile.read(length))["messages"][-1]["content"]
        self.wfile.write(REPLIES[question])


class RawServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture(scope="module")
def raw_server() -> Iterator[str]:
    server = RawServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run_cases(root, cli, base_url: str, questions: list[str]) -> dict[str, dict]:
    rows = [{"id": f"q{n}", "input": question, "expected": "fine"} for n, question in enumerate(questions)]
    arm = {"id": "gpt", "target": "openai:m", "settings": {"base_url": base_url}}
    result = cli("run", write_experiment(root, rows, [arm], schedule={"backoff_s": 0.01, "max_backoff_s": 0.02}))
    assert "Traceback" not in result.output
    run = only_run(root)
    assert run.footer is not None and run.footer.status == "completed", result.output
    return {case["input"]: case for case in run.cases}


@pytest.mark.parametrize("question", ["not http", "bad length", "long header"])
def test_a_reply_that_is_not_http_is_a_connection_error_without_the_urls_key(runner_project, cli, raw_server, question):
    cases = run_cases(runner_project, cli, f"http://{raw_server}/v1?key=zq9", [question, "ok"])
    error = cases[question]["error"]
    assert error.startswith("connection error: RemoteProtocolError: the reply is not valid HTTP: "), error
    assert "(3 attempts)" in error  # retried, as a broken connection is
    assert "zq9" not in error and "400" not in error  # the short key of the URL, aiohttp's made-up status
    assert cases["ok"]["output"] == "fine"


BROKEN_OUTPUTS = '''
class Unprintable:
    def __str__(self):
        raise RuntimeError("no text")


def answer(input):
    return {"object": Unprintable(), "in a list": ["fine", Unprintable()]}.get(input, "fine")
'''


def test_an_output_whose_str_raises_is_recorded_and_the_run_goes_on(runner_project, cli):
    (runner_project / "unprintable_outputs.py").write_text(BROKEN_OUTPUTS)
    rows = [{"id": f"q{n}", "input": question, "expected": "fine"} for n, question in enumerate(["object", "in a list", "ok"])]
    result = cli("run", write_experiment(runner_project, rows, [{"id": "py", "target": "python:unprintable_outputs:answer"}]))
    assert "Traceback" not in result.output
    run = only_run(runner_project)
    assert run.footer is not None and run.footer.status == "completed"
    cases = {case["input"]: case for case in run.cases}
    assert cases["object"]["output"] == "<Unprintable object: str() raised RuntimeError>"
    assert cases["in a list"]["output"] == ["fine", "<Unprintable object: str() raised RuntimeError>"]
    assert cases["ok"]["output"] == "fine"


BROKEN_EXCEPTIONS = '''
class Unprintable(Exception):
    def __str__(self):
        raise AttributeError("message")


class Worse(Exception):
    def __str__(self):
        raise Unprintable()


def answer(input):
    if input == "raise":
        raise Worse()
    return "fine"


def score(output):
    if output == "fine":
        raise Worse()
    return 1.0
'''


def test_an_exception_whose_str_raises_is_the_case_error_and_the_run_goes_on(runner_project, cli):
    (runner_project / "unprintable_errors.py").write_text(BROKEN_EXCEPTIONS)
    rows = [{"id": "q0", "input": "raise", "expected": "fine"}, {"id": "q1", "input": "ok", "expected": "fine"}]
    manifest = write_experiment(runner_project, rows, [{"id": "py", "target": "python:unprintable_errors:answer"}],
                                evaluators=[{"type": "python:unprintable_errors:score"}])
    result = cli("run", manifest)
    assert "Traceback" not in result.output
    run = only_run(runner_project)
    assert run.footer is not None and run.footer.status == "completed", result.output
    cases = {case["input"]: case for case in run.cases}
    assert cases["raise"]["error"] == "Worse: <Worse object: str() raised Unprintable>"
    (score,) = cases["ok"]["scores"]
    assert score["error"].endswith("Worse: <Worse object: str() raised Unprintable>"), score


def test_a_billed_cost_too_large_for_a_float_is_refused_by_value(runner_project, cli, raw_server):
    body = json.dumps(openai_body("m", "fine", {}, {"in": 1, "out": 2})).replace('"usage": {', '"usage": {"cost": 1' + "0" * 400 + ", ")
    REPLIES["huge cost"] = http_reply(body.encode())
    cases = run_cases(runner_project, cli, f"http://{raw_server}/v1", ["huge cost", "ok"])
    assert cases["huge cost"]["error"].startswith("target returned cost_usd=1000000"), cases["huge cost"]["error"]
    assert cases["huge cost"]["cost_usd"] is None and cases["ok"]["error"] is None


def test_a_reply_nested_past_the_recursion_limit_is_named_as_such(runner_project, cli, raw_server):
    REPLIES["deep"] = http_reply(b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    cases = run_cases(runner_project, cli, f"http://{raw_server}/v1", ["deep", "ok"])
    assert cases["deep"]["error"] == "HTTP 200: the response's JSON is nested too deeply to read"
    assert cases["ok"]["output"] == "fine"


def test_a_target_calling_sys_exit_fails_its_case_not_the_run(runner_project, cli):
    """SystemExit is no Exception: a target calling sys.exit(3) ended the run as canceled, silently,
    with no case recorded."""
    (runner_project / "exiting.py").write_text("import sys\n\ndef answer(input):\n"
                                                "    if input == 'exit':\n        sys.exit(3)\n    return 'fine'\n")
    rows = [{"id": "q0", "input": "exit", "expected": "fine"}, {"id": "q1", "input": "ok", "expected": "fine"}]
    manifest = write_experiment(runner_project, rows, [{"id": "py", "target": "python:exiting:answer"}])
    result = cli("run", manifest)
    run = only_run(runner_project)
    assert run.footer is not None and run.footer.status == "completed", result.output
    cases = {case["input"]: case for case in run.cases}
    assert cases["exit"]["error"] == "SystemExit: 3" and cases["ok"]["output"] == "fine"


def test_a_finish_reason_that_is_not_text_is_the_case_error_and_every_case_stays_readable(runner_project, cli):
    """A case line whose finish_reason is not text is skipped by every reader: a target answering
    {"finish_reason": {...}} gave a 'completed' run of 0 readable cases (validate: 27 problems)."""
    (runner_project / "odd_reasons.py").write_text(
        "def answer(input):\n    return {'output': 'fine', 'finish_reason': {'why': 'a dict'} if input == 'odd' else 'stop'}\n")
    rows = [{"id": "q0", "input": "odd", "expected": "fine"}, {"id": "q1", "input": "ok", "expected": "fine"}]
    manifest = write_experiment(runner_project, rows, [{"id": "py", "target": "python:odd_reasons:answer"}])
    cli("run", manifest, "--allow-failures")
    run = only_run(runner_project)
    cases = {case["input"]: case for case in run.cases}
    assert sorted(cases) == ["odd", "ok"]
    assert cases["odd"]["error"] == "target returned finish_reason={'why': 'a dict'}; expected text or null"
    assert cases["odd"].get("finish_reason") is None and cases["ok"]["error"] is None
    assert cli("validate").exit_code == 0


@pytest.mark.parametrize("choice", [{"message": "x"}, {"text": "fine"}, {"message": None}])
def test_a_choice_without_a_message_object_is_the_case_error_not_a_wrong_answer(runner_project, cli, raw_server, choice):
    """{"choices": [{"message": "x"}]} (or a completions-style {"text": …}) recorded output null
    with no error: scored as a wrong answer."""
    REPLIES["odd choice"] = http_reply(json.dumps({"choices": [choice], "usage": {"prompt_tokens": 1}}).encode())
    cases = run_cases(runner_project, cli, f"http://{raw_server}/v1", ["odd choice", "ok"])
    assert cases["odd choice"]["error"].startswith("the response's first choice has no message object: "), cases["odd choice"]
    assert cases["ok"]["output"] == "fine" and cases["ok"]["error"] is None


def test_a_redirect_is_named_as_one_not_as_a_reply_that_is_not_json(runner_project, cli, raw_server):
    REPLIES["moved"] = http_reply(b"", "302 Found", {"Location": "http://elsewhere.example/v1/chat/completions?key=abc"})
    cases = run_cases(runner_project, cli, f"http://{raw_server}/v1", ["moved", "ok"])
    error = cases["moved"]["error"]
    assert error.startswith("HTTP 302: a redirect to http://elsewhere.example/v1/chat/completions") and "abc" not in error
    assert error.endswith("redirects are not followed (set base_url to where it leads)")
    assert cases["ok"]["output"] == "fine"
