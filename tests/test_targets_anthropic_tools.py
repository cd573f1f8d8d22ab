"""Tool calls through the ``anthropic`` target, against the fake Messages API on 127.0.0.1: the
model's ``tool_use`` blocks are answered by the project's handlers in a user turn of
``tool_result`` blocks, and the case's transcript has the shape the ``openai`` target records."""

from __future__ import annotations

import json

import pytest
from browser_support import drawn, load, needs_browser, problems_in
from runner_support import only_run, write_experiment

from evalsite.project import find_project
from evalsite.site import build_site, paths
from evalsite.site.transcripts import conversation

KEY = "sk-ant-tools-5e6f7a8b-never-on-disk"
TOOLBOX = '''
import os


def lookup(city):
    return {"city": city, "population": 709000}


def clock(city):
    return f"09:30 in {city}"


def flaky(**arguments):
    raise ConnectionError("the clock service timed out")


def leaky():
    return "the key is " + os.environ["FAKE_ANTHROPIC_KEY"]
'''
QUESTION = "How many people live in Oslo, and what time is it there?"
TOOLS = [{"name": name, "description": f"the {name} tool", "input_schema": {"type": "object"}}
         for name in ("lookup", "clock", "flaky", "leaky")]
HANDLERS = {name: f"toolbox:{name}" for name in ("lookup", "clock", "flaky", "leaky")}


def use(call_id: str, name: str, **arguments) -> dict:
    """A call as the fake server's script takes it (it sends it as a ``tool_use`` block)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


@pytest.fixture
def toolbox(runner_project, monkeypatch):
    (runner_project / "toolbox.py").write_text(TOOLBOX)
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", KEY)
    return runner_project


def claude_run(project, server, cli, rows, *, exit_code=0, prompt=None, **settings):
    arm = {"id": "claude-tools", "target": "anthropic:claude-fake",
           "params": {"max_tokens": 256, "tools": TOOLS}, "price": {"input": 3.0, "output": 15.0},
           "settings": {"base_url": server.url, "api_key_env": "FAKE_ANTHROPIC_KEY", "tool_handlers": HANDLERS,
                        **settings}}
    extra = {"prompt": prompt} if prompt else {}
    result = cli("run", write_experiment(project, rows, [arm], evaluators=[{"type": "contains"}], **extra))
    assert result.exit_code == exit_code, result.output
    (case,) = only_run(project).cases
    return case


def test_a_two_round_conversation_sends_tool_results_and_records_the_openai_shaped_transcript(toolbox, server, cli):
    server.script[QUESTION] = [
        {"reply": "Let me look.", "tool_calls": [use("toolu_01", "lookup", city="Oslo"), use("toolu_02", "clock", city="Oslo")]},
        {"reply": "About 709,000 people; it is 09:30."},
    ]
    prompt = [{"role": "system", "content": "Use the tools."}, {"role": "user", "content": "{{ input }}"}]
    case = claude_run(toolbox, server, cli, [{"id": "oslo", "input": QUESTION, "expected": "709,000"}], prompt=prompt)
    assert case["error"] is None and case["passed"] is True
    assert case["output"] == "About 709,000 people; it is 09:30." and case["finish_reason"] == "stop"

    first, second = server.calls
    assert first.body["tools"] == second.body["tools"] == TOOLS
    assert first.body["system"] == second.body["system"] == "Use the tools."
    assert first.body["messages"] == [{"role": "user", "content": QUESTION}]
    assert second.body["messages"] == [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "toolu_02", "name": "clock", "input": {"city": "Oslo"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": '{"city": "Oslo", "population": 709000}'},
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": "09:30 in Oslo"},
        ]},
    ], "one user turn of results, in the calls' order, none marked is_error, no transcript figures"

    transcript = case["transcript"]
    assert [m["role"] for m in transcript] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert transcript[2]["content"] == "Let me look."
    assert transcript[2]["tool_calls"] == [use("toolu_01", "lookup", city="Oslo"), use("toolu_02", "clock", city="Oslo")]
    assert [(m["tool_call_id"], m["content"]) for m in transcript[3:5]] == [
        ("toolu_01", '{"city": "Oslo", "population": 709000}'), ("toolu_02", "09:30 in Oslo")]
    assert not any("is_error" in m for m in transcript)
    assert transcript[5]["content"] == case["output"] and "tool_calls" not in transcript[5]

    # the fake server counts words: of every message's content, and of the reply's text
    def words(messages):
        return sum(len(str(m.get("content", "")).split()) for m in messages)

    rounds = [(words(first.body["messages"]), 3), (words(second.body["messages"]), 6)]
    assert [(transcript[i]["input_tokens"], transcript[i]["output_tokens"]) for i in (2, 5)] == rounds
    assert all(transcript[i]["latency_ms"] >= 0 for i in (2, 3, 4, 5))
    assert (case["input_tokens"], case["output_tokens"]) == (rounds[0][0] + rounds[1][0], 9)
    assert case["cost_usd"] == pytest.approx(sum(i * 3.0 + o * 15.0 for i, o in rounds) / 1e6), "the rounds' sum"
    assert case["request_ids"] == ["msg_2"]

    shown = conversation(only_run(toolbox).cases[0], 10_000)
    assert [(c["id"], c["name"], c["arguments"]) for c in shown[2]["calls"]] == [
        ("toolu_01", "lookup", '{"city": "Oslo"}'), ("toolu_02", "clock", '{"city": "Oslo"}')]
    assert [m["answers"] for m in shown[3:5]] == ["toolu_01", "toolu_02"]
    assert shown[5]["figures"]["output_tokens"] == 6
    build_site(find_project(toolbox))  # the site's pages draw it as they draw the openai target's


def test_a_handler_that_raises_is_an_is_error_result_and_the_model_answers(toolbox, server, cli):
    server.script[QUESTION] = [{"tool_calls": [use("toolu_a", "flaky"), use("toolu_b", "nowhere"), use("toolu_c", "clock")]},
                               {"reply": "The clock is down, sorry."}]
    case = claude_run(toolbox, server, cli, [{"id": "oslo", "input": QUESTION, "expected": "sorry"}])
    results = server.calls[1].body["messages"][-1]
    assert results == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "Error: ConnectionError: the clock service timed out",
         "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_b",
         "content": "Error: no handler for tool 'nowhere' (settings.tool_handlers names clock, flaky, leaky, lookup)",
         "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_c",
         "content": "Error: TypeError: clock() missing 1 required positional argument: 'city'", "is_error": True},
    ]}, "each failure is told to the model as the openai target tells it, marked is_error"
    assert server.calls[1].body["messages"][1]["content"][0] == {
        "type": "tool_use", "id": "toolu_a", "name": "flaky", "input": {}}, "a reply without text sends no text block"
    tools = [m for m in case["transcript"] if m["role"] == "tool"]
    assert [(m["content"], m["is_error"]) for m in tools] == [(b["content"], True) for b in results["content"]]
    assert case["transcript"][1]["content"] is None
    assert case["error"] is None and case["output"] == "The clock is down, sorry."


def test_a_model_that_never_stops_calling_tools_fails_its_case_at_max_tool_rounds(toolbox, server, cli):
    server.script[QUESTION] = [{"tool_calls": [use(f"toolu_{n}", "lookup", city="Oslo")]} for n in range(6)]
    case = claude_run(toolbox, server, cli, [{"id": "oslo", "input": QUESTION, "expected": "x"}],
                      exit_code=1, max_tool_rounds=3)
    assert len(server.calls) == 4, "three rounds of results sent, the fourth reply still calls"
    assert case["error"] == "the model still called tools after 3 rounds (settings.max_tool_rounds)"
    assert case["output"] is None and case["finish_reason"] == "tool_calls"
    assert [m["role"] for m in case["transcript"]] == ["user", *["assistant", "tool"] * 3, "assistant"]
    assert [b["tool_use_id"] for b in server.calls[3].body["messages"][-1]["content"]] == ["toolu_2"]
    assert case["output_tokens"] == 0 and case["input_tokens"] == sum(m.get("input_tokens", 0) for m in case["transcript"])


def test_a_key_a_tool_returns_is_sent_to_the_model_and_never_written(toolbox, server, cli):
    server.script[QUESTION] = [{"tool_calls": [use("toolu_k", "leaky")]}, {"reply": "done"}]
    case = claude_run(toolbox, server, cli, [{"id": "oslo", "input": QUESTION, "expected": "done"}])
    assert server.calls[1].body["messages"][-1]["content"][0]["content"] == f"the key is {KEY}"
    assert case["transcript"][2]["content"] == "the key is ***"
    assert server.calls[0].headers["x-api-key"] == KEY
    for path in (toolbox / "runs").rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(encoding="utf-8"), path


def test_a_replayed_conversation_sends_each_turns_tool_exchange_as_blocks(toolbox, server, cli):
    server.script["population?"] = [{"tool_calls": [use("toolu_p", "lookup", city="Oslo")]}, {"reply": "709,000."}]
    case = claude_run(toolbox, server, cli, [{"id": "t", "turns": ["population?", "and the time?"], "expected": "echo"}])
    assert case["turn_outputs"] == ["709,000.", "echo: and the time?"]
    assert [m["role"] for m in case["transcript"]] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    last = server.calls[-1].body["messages"]
    assert last == [
        {"role": "user", "content": "population?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_p", "name": "lookup", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_p",
                                      "content": '{"city": "Oslo", "population": 709000}'}]},
        {"role": "assistant", "content": "709,000."},
        {"role": "user", "content": "and the time?"},
    ]


def test_without_handlers_the_calls_are_recorded_and_not_answered(runner_project, server, cli, monkeypatch):
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", KEY)
    server.script[QUESTION] = [{"tool_calls": [use("toolu_1", "lookup", city="Oslo")]}]
    arm = {"id": "claude", "target": "anthropic:claude-fake", "params": {"tools": TOOLS},
           "settings": {"base_url": server.url, "api_key_env": "FAKE_ANTHROPIC_KEY"}}
    cli("run", write_experiment(runner_project, [{"id": "oslo", "input": QUESTION, "expected": "x"}], [arm]))
    (case,) = only_run(runner_project).cases
    assert len(server.calls) == 1 and case["error"] is None and case["finish_reason"] == "tool_calls"
    assert case["output"] is None  # no text beside the calls: as the openai target records it
    assert case["transcript"][1]["tool_calls"] == [use("toolu_1", "lookup", city="Oslo")]


def test_max_tool_rounds_without_handlers_is_refused_before_any_call(runner_project, server, cli, monkeypatch):
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", KEY)
    arm = {"id": "claude", "target": "anthropic:claude-fake",
           "settings": {"base_url": server.url, "api_key_env": "FAKE_ANTHROPIC_KEY", "max_tool_rounds": 2}}
    result = cli("run", write_experiment(runner_project, [{"id": "q", "input": "hi", "expected": "x"}], [arm]))
    assert result.exit_code == 1, result.output
    assert "settings.max_tool_rounds: only read with settings.tool_handlers (target anthropic)" in result.output
    assert server.calls == []


@needs_browser
def test_the_run_and_item_pages_show_every_turn_and_tool_call_of_a_claude_conversation(toolbox, server, cli, browser):
    from selenium.webdriver.common.by import By

    server.script["population?"] = [{"tool_calls": [use("toolu_p", "lookup", city="Oslo")]}, {"reply": "709,000."}]
    server.script["and the time?"] = [{"reply": "Checking.", "tool_calls": [use("toolu_t", "clock", city="Oslo"),
                                                                         use("toolu_f", "flaky")]},
                                      {"reply": "09:30; the backup clock failed."}]
    claude_run(toolbox, server, cli, [{"id": "chat", "turns": ["population?", "and the time?"], "expected": "09:30"}])
    build_site(find_project(toolbox))
    site, run = toolbox / "site", only_run(toolbox)
    pages = [site / paths.run(run.header.run_id),
             site / paths.item_page(run.header.dataset.dataset_id, paths.item_bucket("chat"))]
    for page in pages:
        load(browser, page.as_uri())
        (summary,) = drawn(browser, "details.transcript summary")
        assert summary.text == "Transcript: 9 messages, 3 tool calls", page
        summary.click()
        messages = browser.find_elements(By.CSS_SELECTOR, "details.transcript li.message")
        assert [m.find_element(By.CSS_SELECTOR, ".message-head strong").text for m in messages] == [
            "user", "assistant", "tool", "assistant", "user", "assistant", "tool", "tool", "assistant"]
        heads = browser.find_elements(By.CSS_SELECTOR, "details.transcript .tool-call-head code")
        assert [c.text for c in heads] == ["lookup", "clock", "flaky"]
        assert "result of call toolu_p" in messages[2].text and "709000" in messages[2].text
        assert "Error: ConnectionError: the clock service timed out" in messages[7].text
        assert messages[-1].text.endswith("09:30; the backup clock failed.")
        assert problems_in(browser, site) == []
