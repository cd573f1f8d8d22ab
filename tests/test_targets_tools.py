"""Tool calls through the ``openai`` target, against the fake provider on 127.0.0.1: the model's
calls, the project's handlers' results and every round trip's figures are the case's transcript,
as the site reads it; nothing but the chat format is sent back to the model."""

from __future__ import annotations

import json

import pytest
from browser_support import drawn, load, needs_browser, problems_in
from runner_support import only_run, openai_arm, write_experiment

from evalsite.project import find_project
from evalsite.site import build_site, paths
from evalsite.site.transcripts import conversation

HANDLERS = '''
import asyncio


def get_weather(city):
    return {"city": city, "temp_c": -3}


async def local_time(city):
    await asyncio.sleep(0)
    return f"14:05 in {city}"


def broken(**arguments):
    raise RuntimeError("the weather service is down")
'''
ASK = "What is the weather in Oslo?"
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
         for name in ("get_weather", "local_time", "broken")]
HANDLED = {"get_weather": "weather:get_weather", "local_time": "weather:local_time", "broken": "weather:broken"}


def call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.fixture
def tools_project(runner_project):
    (runner_project / "weather.py").write_text(HANDLERS)
    return runner_project


def run_one(tools_project, server, cli, rows, *, settings=None, price=None, exit_code=0):
    arm = openai_arm(server, params={"tools": TOOLS}, settings={"tool_handlers": HANDLED, **(settings or {})})
    if price:
        arm["price"] = price
    manifest = write_experiment(tools_project, rows, [arm], evaluators=[{"type": "contains"}])
    result = cli("run", manifest)
    assert result.exit_code == exit_code, result.output
    (case,) = only_run(tools_project).cases
    return case


def test_the_transcript_holds_every_call_its_result_and_each_round_trips_figures(tools_project, server, cli):
    server.script[ASK] = [
        {"tool_calls": [call("call_1", "get_weather", '{"city": "Oslo"}'), call("call_2", "local_time", '{"city": "Oslo"}')]},
        {"reply": "It is -3 °C in Oslo at 14:05."},
    ]
    case = run_one(tools_project, server, cli, [{"id": "oslo", "input": ASK, "expected": "-3 °C"}],
                   price={"input": 1.0, "output": 2.0})
    assert case["error"] is None and case["output"] == "It is -3 °C in Oslo at 14:05." and case["passed"] is True
    transcript = case["transcript"]
    assert [m["role"] for m in transcript] == ["user", "assistant", "tool", "tool", "assistant"]
    assert transcript[1]["tool_calls"] == [call("call_1", "get_weather", '{"city": "Oslo"}'),
                                           call("call_2", "local_time", '{"city": "Oslo"}')]
    assert transcript[1]["content"] is None
    assert (transcript[2]["tool_call_id"], json.loads(transcript[2]["content"])) == ("call_1", {"city": "Oslo", "temp_c": -3})
    assert (transcript[3]["tool_call_id"], transcript[3]["content"]) == ("call_2", "14:05 in Oslo")

    first, second = server.calls
    # the fake server counts words: round 1 asked with the question's and answered none
    asked, answered = len(ASK.split()), len("It is -3 °C in Oslo at 14:05.".split())
    assert (transcript[1]["input_tokens"], transcript[1]["output_tokens"]) == (asked, 0)
    words = sum(len(str(m.get("content", "")).split()) for m in second.body["messages"])
    assert (transcript[4]["input_tokens"], transcript[4]["output_tokens"]) == (words, answered)
    assert (case["input_tokens"], case["output_tokens"]) == (asked + words, answered)
    assert case["cost_usd"] == pytest.approx(((asked + words) * 1.0 + answered * 2.0) / 1e6)
    assert all(m["latency_ms"] >= 0 for m in transcript[1:])

    assert second.body["messages"] == [
        {"role": "user", "content": ASK},
        {"role": "assistant", "content": None, "tool_calls": transcript[1]["tool_calls"]},
        {"role": "tool", "tool_call_id": "call_1", "content": transcript[2]["content"]},
        {"role": "tool", "tool_call_id": "call_2", "content": "14:05 in Oslo"},
    ], "the figures the transcript records are never sent to the model"
    assert second.body["tools"] == TOOLS and first.body["messages"] == [{"role": "user", "content": ASK}]
    assert case["request_ids"] == ["chatcmpl-2"] and case["finish_reason"] == "stop"

    shown = conversation(only_run(tools_project).cases[0], 10_000)
    assert [(c["name"], c["arguments"]) for c in shown[1]["calls"]] == [
        ("get_weather", '{"city": "Oslo"}'), ("local_time", '{"city": "Oslo"}')]
    assert [m.get("answers") for m in shown[2:4]] == ["call_1", "call_2"]
    assert shown[4]["figures"]["output_tokens"] == answered and shown[1]["figures"]["input_tokens"] == asked


def test_without_handlers_the_call_is_recorded_and_not_answered(runner_project, server, cli):
    server.script[ASK] = [{"tool_calls": [call("call_1", "get_weather", '{"city": "Oslo"}')]}]
    arm = openai_arm(server, params={"tools": TOOLS})
    cli("run", write_experiment(runner_project, [{"id": "oslo", "input": ASK, "expected": "x"}], [arm]))
    (case,) = only_run(runner_project).cases
    assert len(server.calls) == 1 and case["error"] is None and case["output"] is None
    assert case["finish_reason"] == "tool_calls"
    assert [m["role"] for m in case["transcript"]] == ["user", "assistant"]
    assert case["transcript"][1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Oslo"}'


def test_a_plain_answer_records_no_transcript(runner_project, server, cli):
    cli("run", write_experiment(runner_project, [{"id": "q", "input": "hello", "expected": "echo: hello"}],
                                [openai_arm(server)]))
    (case,) = only_run(runner_project).cases
    assert "transcript" not in case.raw and case["output"] == "echo: hello"


def test_a_bad_call_is_answered_to_the_model_as_an_error(tools_project, server, cli):
    server.script[ASK] = [
        {"tool_calls": [call("a", "broken", "{}"), call("b", "no_such_tool", "{}"), call("c", "get_weather", "{oops"),
                        call("d", "get_weather", "[1]"), call("e", "get_weather", '{"town": "Oslo"}')]},
        {"reply": "Sorry, the tools failed."},
    ]
    case = run_one(tools_project, server, cli, [{"id": "oslo", "input": ASK, "expected": "Sorry"}])
    answers = [m["content"] for m in case["transcript"] if m["role"] == "tool"]
    assert answers[0] == "Error: RuntimeError: the weather service is down"
    assert answers[1] == "Error: no handler for tool 'no_such_tool' (settings.tool_handlers names broken, get_weather, local_time)"
    assert answers[2].startswith("Error: the arguments are not JSON: ")
    assert answers[3] == "Error: the arguments are not a JSON object"
    assert answers[4].startswith("Error: TypeError: ") and "town" in answers[4]
    assert case["output"] == "Sorry, the tools failed." and case["error"] is None
    assert all(m["is_error"] is True for m in case["transcript"] if m["role"] == "tool"), "the transcript marks each"
    assert not any("is_error" in m for m in server.calls[1].body["messages"]), "chat completions have no such key"


def test_a_model_that_never_stops_calling_tools_ends_at_max_tool_rounds(tools_project, server, cli):
    server.script[ASK] = [{"tool_calls": [call(f"c{n}", "get_weather", '{"city": "Oslo"}')]} for n in range(5)]
    case = run_one(tools_project, server, cli, [{"id": "oslo", "input": ASK, "expected": "x"}],
                   settings={"max_tool_rounds": 2}, exit_code=1)
    assert len(server.calls) == 3
    assert case["error"] == "the model still called tools after 2 rounds (settings.max_tool_rounds)"
    assert [m["role"] for m in case["transcript"]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert case["input_tokens"] is not None and case["output_tokens"] == 0, "the rounds' tokens still count"


def test_a_failing_later_round_keeps_the_conversation_so_far(tools_project, server, cli):
    server.script[ASK] = [{"tool_calls": [call("c1", "get_weather", '{"city": "Oslo"}')]}, {"status": 400, "message": "bad"}]
    case = run_one(tools_project, server, cli, [{"id": "oslo", "input": ASK, "expected": "x"}], exit_code=1)
    assert case["error"].startswith("round 2: HTTP 400")
    assert [m["role"] for m in case["transcript"]] == ["user", "assistant", "tool"]


def test_a_replayed_conversation_carries_each_turns_tool_exchange(tools_project, server, cli):
    server.script["weather?"] = [{"tool_calls": [call("c1", "get_weather", '{"city": "Oslo"}')]}, {"reply": "-3 °C."}]
    case = run_one(tools_project, server, cli, [{"id": "t", "turns": ["weather?", "and the time?"], "expected": "echo"}])
    transcript = case["transcript"]
    assert [m["role"] for m in transcript] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert case["turn_outputs"] == ["-3 °C.", "echo: and the time?"]
    last = server.calls[-1].body["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "tool", "assistant", "user"]
    assert not any("latency_ms" in m or "input_tokens" in m for m in last)
    shown = conversation(only_run(tools_project).cases[0], 10_000)
    figures = case["turn_figures"]
    assert shown[5]["figures"]["input_tokens"] == figures[1]["input_tokens"], "turn 2's call on turn 2's reply"
    assert shown[3]["figures"]["input_tokens"] == transcript[3]["input_tokens"], "a round trip's own figures win"
    assert case["input_tokens"] == transcript[1]["input_tokens"] + transcript[3]["input_tokens"] + figures[1]["input_tokens"]


@pytest.mark.parametrize(("settings", "message"), [
    ({"tool_handlers": ["weather:get_weather"]}, "settings.tool_handlers: needs a mapping of tool names to 'module:function' (target openai)"),
    ({"tool_handlers": {"w": "nowhere:f"}}, "settings.tool_handlers.w 'nowhere:f': cannot find module 'nowhere' under "),
    ({"tool_handlers": {"w": "weather:missing"}}, "settings.tool_handlers.w 'weather:missing': module 'weather' has no function 'missing'"),
    ({"tool_handlers": {"w": "weather:get_weather"}, "max_tool_rounds": 0}, "settings.max_tool_rounds: needs a whole number >= 1, got '0' (target openai)"),
    ({"max_tool_rounds": 3}, "settings.max_tool_rounds: only read with settings.tool_handlers (target openai)"),
])
def test_bad_tool_settings_are_refused_before_any_call(tools_project, server, cli, settings, message):
    manifest = write_experiment(tools_project, [{"id": "q", "input": "hi", "expected": "x"}],
                                [openai_arm(server, settings=settings)])
    result = cli("run", manifest)
    assert result.exit_code == 1 and message in result.output, result.output
    assert server.calls == []


def test_validate_imports_no_handler_and_a_handler_that_fails_to_import_fails_its_case(tools_project, server, cli):
    (tools_project / "loud.py").write_text("open('imported.txt', 'w').write('ran')\nraise RuntimeError('no config')\n"
                                     "def get_weather(city):\n    return 'x'\n")
    server.script[ASK] = [{"tool_calls": [call("c1", "get_weather", '{"city": "Oslo"}')]}]
    manifest = write_experiment(tools_project, [{"id": "oslo", "input": ASK, "expected": "x"}],
                                [openai_arm(server, settings={"tool_handlers": {"get_weather": "loud:get_weather"}})])
    assert cli("validate").exit_code == 0
    assert not (tools_project / "imported.txt").exists(), "validate checks a handler in its source, never imports it"
    result = cli("run", manifest)
    assert result.exit_code == 1
    (case,) = only_run(tools_project).cases
    assert case["error"] == ("TargetError: settings.tool_handlers.get_weather 'loud:get_weather': importing 'loud' "
                             "failed: RuntimeError: no config")


@needs_browser
def test_the_run_page_shows_every_turn_and_tool_call_of_a_live_case(tools_project, server, cli, browser):
    from selenium.webdriver.common.by import By

    server.script["weather?"] = [{"tool_calls": [call("c1", "get_weather", '{"city": "Oslo"}'),
                                                 call("c2", "local_time", '{"city": "Oslo"}')]}, {"reply": "-3 °C."}]
    server.script["and the time?"] = [{"tool_calls": [call("c3", "local_time", '{"city": "Oslo"}')]}, {"reply": "14:05."}]
    run_one(tools_project, server, cli, [{"id": "t", "turns": ["weather?", "and the time?"], "expected": "14:05"}])
    build_site(find_project(tools_project))
    site = tools_project / "site"
    load(browser, (site / paths.run(only_run(tools_project).header.run_id)).as_uri())
    (summary,) = drawn(browser, "details.transcript summary")
    assert summary.text == "Transcript: 9 messages, 3 tool calls"
    summary.click()
    messages = browser.find_elements(By.CSS_SELECTOR, "details.transcript li.message")
    roles = [m.find_element(By.CSS_SELECTOR, ".message-head strong").text for m in messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "user", "assistant", "tool", "assistant"]
    calls = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "details.transcript .tool-call-head code")]
    assert calls == ["get_weather", "local_time", "local_time"]
    assert "result of call c1" in messages[2].text and '"temp_c": -3' in messages[2].text
    assert "14:05 in Oslo" in messages[3].text and messages[-1].text.endswith("14:05.")
    assert problems_in(browser, site) == []
