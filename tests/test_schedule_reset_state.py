"""``schedule.reset_state``: with it every case gets a target of its own (a python target's module
executed anew, a tool handler's too, a new HTTP client), so no state passes from one case to the
next; without it the run's cases share one target, and its state, as they always have."""

from __future__ import annotations

import re
import sys

import pytest
from example_support import REPO
from runner_support import all_runs, only_run, openai_arm, questions, write_experiment

DOCS = REPO / "docs/reference/manifest.md"

COUNTER = '''
SEEN = []


def count(input):
    SEEN.append(input)
    return str(len(SEEN))


CART = []


def add_to_cart(item):
    CART.append(item)
    return {"items": len(CART)}
'''


@pytest.fixture
def reset_project(runner_project, monkeypatch):
    (runner_project / "counter.py").write_text(COUNTER)
    monkeypatch.delitem(sys.modules, "counter", raising=False)  # another test's copy, counts and all
    return runner_project


def outputs(reset_project) -> dict[tuple[str, int], str]:
    return {(c["item_id"], c["repeat"]): c["output"] for c in only_run(reset_project).cases}


def run_counter(reset_project, cli, rows, **schedule) -> None:
    manifest = write_experiment(reset_project, rows, [{"id": "counter", "target": "python:counter:count"}],
                                concurrency=1, repeat=2, schedule={"backoff_s": 0.01, **schedule})
    result = cli("run", manifest, "--allow-failures")
    assert result.exit_code == 0, result.output


def test_without_reset_the_python_modules_state_carries_from_case_to_case(reset_project, cli):
    run_counter(reset_project, cli, questions(3))
    assert sorted(outputs(reset_project).values(), key=int) == ["1", "2", "3", "4", "5", "6"]
    assert only_run(reset_project).header.raw["schedule"]["reset_state"] is False


def test_with_reset_every_case_starts_from_a_fresh_module(reset_project, cli):
    run_counter(reset_project, cli, questions(3), reset_state=True)
    assert outputs(reset_project) == {(f"q{i}", r): "1" for i in range(3) for r in range(2)}
    assert only_run(reset_project).header.raw["schedule"]["reset_state"] is True
    import counter  # the shared copy `import` keeps was loaded, and never counted a case

    assert counter.SEEN == []


def test_with_reset_the_turns_of_one_case_still_share_it(reset_project, cli):
    run_counter(reset_project, cli, [{"id": "t", "turns": ["a", "b", "c"], "expected": "3"}], reset_state=True)
    assert [c["turn_outputs"] for c in only_run(reset_project).cases] == [["1", "2", "3"]] * 2


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("reset", [False, True])
def test_an_http_targets_cookies_and_a_tool_handlers_state_stay_in_their_case(reset_project, server, cli, reset, kind):
    call = {"id": "c1", "type": "function", "function": {"name": "add_to_cart", "arguments": '{"item": "tea"}'}}
    for n in range(2):
        server.script[f"question {n}"] = [{"tool_calls": [call], "headers": {"Set-Cookie": f"session=s{n}; Path=/"}},
                                          {"reply": f"echo: question {n}"}]
    handlers = {"tool_handlers": {"add_to_cart": "counter:add_to_cart"}}
    arm = openai_arm(server, settings=handlers) if kind == "openai" else {
        "id": "claude", "target": "anthropic:claude-fake", "settings": {"base_url": server.url, **handlers}}
    manifest = write_experiment(reset_project, questions(2), [arm], concurrency=1,
                                schedule={"backoff_s": 0.01, "reset_state": reset})
    assert cli("run", manifest).exit_code == 0
    carts = [next(m["content"] for m in c["transcript"] if m["role"] == "tool")
             for c in sorted(only_run(reset_project).cases, key=lambda c: c["item_id"])]
    cookies = [call.headers.get("cookie") for call in server.calls]
    if reset:
        assert carts == ['{"items": 1}', '{"items": 1}']
        assert cookies == [None, "session=s0", None, "session=s1"], "a case's cookie reaches only its own calls"
    else:
        assert carts == ['{"items": 1}', '{"items": 2}']
        assert cookies == [None, "session=s0", "session=s0", "session=s1"]


def test_a_bad_value_is_one_line_naming_the_key(reset_project, cli):
    manifest = write_experiment(reset_project, questions(1), [{"id": "counter", "target": "python:counter:count"}],
                                schedule={"reset_state": "yes"})
    for command in (("run", manifest), ("validate",)):
        result = cli(*command)
        assert result.exit_code == 1
        assert f"{manifest}: schedule.reset_state: must be true or false, got the string 'yes'" in result.output.splitlines()[0]


def test_the_documented_example_passes_with_reset_and_fails_without(runner_project, cli, monkeypatch):
    section = DOCS.read_text(encoding="utf-8").split("#### `reset_state`", 1)[1].split("\n### ", 1)[0]
    files = dict(re.findall(r'```\w+ title="([^"]+)"\n(.*?)```', section, re.S))
    assert sorted(files) == ["counter.py", "data/counter.jsonl", "experiments/counter.yaml"]
    for name, text in files.items():
        (runner_project / name).write_text(text, encoding="utf-8")
    for reset in (True, False):
        monkeypatch.delitem(sys.modules, "counter", raising=False)
        manifest = files["experiments/counter.yaml"].replace("reset_state: true", f"reset_state: {str(reset).lower()}")
        (runner_project / "experiments/counter.yaml").write_text(manifest, encoding="utf-8")
        result = cli("run", "experiments/counter.yaml", "--json", "--allow-failures")
        assert result.exit_code == 0, result.output
    rates = sorted((r.header.raw["schedule"]["reset_state"], r.footer.totals.pass_rate) for r in all_runs(runner_project))
    assert rates == [(False, 0.25), (True, 1.0)]
