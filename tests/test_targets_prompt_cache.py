"""Prompt-cache tokens: the ``anthropic`` target counts the tokens the Messages API reads from or
writes to its cache (which it leaves out of ``usage.input_tokens``), the ``openai`` target reads
``prompt_tokens_details.cached_tokens`` (already inside ``prompt_tokens``), and a case's cost
prices them at the arm's ``price.cache_read`` / ``price.cache_write`` (the input price when not
given). Costs are checked against a hand computation; the fake providers run on 127.0.0.1."""

from __future__ import annotations

import random

import pytest
from runner_support import only_run, openai_arm, questions, write_experiment

from evalsite.calls.targets import TargetResult, call_cost
from evalsite.calls.targets.base import checked_cost, checked_result, result_from_value

KEY = "sk-ant-cache-9a8b7c6d-never-on-disk"
# the fake server counts words: "question N" is 2 input tokens, "echo: question N" 3 output tokens
CACHED = {"cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}


def claude(server, price: dict) -> dict:
    return {"id": "claude", "target": "anthropic:claude-fake", "price": price,
            "settings": {"base_url": server.url, "api_key_env": "FAKE_ANTHROPIC_KEY"}}


def cases_of(project, server, cli, arm: dict, monkeypatch) -> dict[str, dict]:
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", KEY)
    result = cli("run", write_experiment(project, questions(2), [arm]))
    assert result.exit_code == 0, result.output
    return {case["item_id"]: case for case in only_run(project).cases}


def test_anthropic_counts_cache_reads_and_writes_and_prices_each(runner_project, server, cli, monkeypatch):
    server.script["question 0"] = [{"usage_values": CACHED}]
    price = {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}
    cases = cases_of(runner_project, server, cli, claude(server, price), monkeypatch)
    assert cases["q0"]["input_tokens"] == 2 + 1000 + 200 and cases["q0"]["output_tokens"] == 3
    assert cases["q0"]["cost_usd"] == pytest.approx((2 * 3.0 + 1000 * 0.3 + 200 * 3.75 + 3 * 15.0) / 1e6, rel=1e-12)
    assert cases["q1"]["input_tokens"] == 2  # no cache in the reply: as before
    assert cases["q1"]["cost_usd"] == pytest.approx((2 * 3.0 + 3 * 15.0) / 1e6, rel=1e-12)


def test_without_cache_prices_cached_tokens_cost_the_input_price(runner_project, server, cli, monkeypatch):
    server.script["question 0"] = [{"usage_values": {**CACHED, "cache_read_input_tokens": None}}]  # null: none
    cases = cases_of(runner_project, server, cli, claude(server, {"input": 3.0, "output": 15.0}), monkeypatch)
    assert cases["q0"]["input_tokens"] == 202
    assert cases["q0"]["cost_usd"] == pytest.approx((202 * 3.0 + 3 * 15.0) / 1e6, rel=1e-12)


def test_an_unreadable_cache_count_makes_the_input_tokens_and_cost_unknown(runner_project, server, cli, monkeypatch):
    server.script["question 0"] = [{"usage_values": {"cache_read_input_tokens": "1000"}}]
    cases = cases_of(runner_project, server, cli, claude(server, {"input": 3.0, "output": 15.0}), monkeypatch)
    assert cases["q0"]["input_tokens"] is None and cases["q0"]["cost_usd"] is None  # never priced as 0 cached


def test_openai_prices_its_cached_prompt_tokens(runner_project, server, cli):
    usage = {"prompt_tokens": 1200, "prompt_tokens_details": {"cached_tokens": 1000}}
    server.script["question 0"] = [{"usage_values": usage}]
    arm = openai_arm(server, price={"input": 2.5, "output": 10.0, "cache_read": 1.25})
    result = cli("run", write_experiment(runner_project, questions(1), [arm]))
    assert result.exit_code == 0, result.output
    (case,) = only_run(runner_project).cases
    assert case["input_tokens"] == 1200  # cached tokens are inside prompt_tokens
    assert case["cost_usd"] == pytest.approx((200 * 2.5 + 1000 * 1.25 + 3 * 10.0) / 1e6, rel=1e-12)


def test_cache_counts_past_the_input_tokens_are_refused():
    result = TargetResult(output="x", input_tokens=10, output_tokens=1, cache_read_tokens=8, cache_write_tokens=5)
    assert call_cost(result, {"input": 1.0, "output": 1.0}) is None
    assert call_cost(TargetResult(output="x", input_tokens=13, output_tokens=1, cache_read_tokens=8,
                                  cache_write_tokens=5), {"input": 1.0, "output": 2.0}) == pytest.approx(15 / 1e6)


def test_a_negative_cache_price_is_refused_by_name(runner_project, server, cli):
    arm = openai_arm(server, price={"input": 1.0, "output": 1.0, "cache_read": -1})
    result = cli("run", write_experiment(runner_project, questions(1), [arm]))
    assert result.exit_code != 0
    assert "cache_read" in result.output and "Traceback" not in result.output


def test_a_python_target_may_report_its_cache_counts():
    price = {"input": 2.0, "output": 4.0, "cache_read": 0.5}
    reported = result_from_value({"output": "x", "input_tokens": 10, "output_tokens": 1, "cache_read_tokens": 6,
                                  "cache_write_tokens": None})
    assert reported.error is None and call_cost(reported, price) == pytest.approx((4 * 2.0 + 6 * 0.5 + 4.0) / 1e6)
    refused = result_from_value({"output": "x", "input_tokens": 10, "output_tokens": 1, "cache_read_tokens": -1})
    assert refused.error.startswith("target returned cache_read_tokens=-1")


def test_the_cost_of_a_checked_result_is_the_cost_call_cost_gives_the_reply():
    """The runner prices a reply once, after checking it (checked_cost of checked_result): the
    same cost call_cost gives the reply as it came, bad numbers among them (seeded random replies)."""
    rng = random.Random(7)
    numbers = [None, 0, 3, 12, 12.0, -1, True, 10**12, float("nan"), float("inf"), 1e300, "5"]
    prices = [None, {}, {"input": 1.0, "output": 2.0}, {"input": 1.0, "output": 2.0, "cache_read": 0.1, "cache_write": 3.0}]
    for _ in range(3000):
        reply = TargetResult(output="x", input_tokens=rng.choice(numbers), output_tokens=rng.choice(numbers),
                             cost_usd=rng.choice([None, 0.002, -0.5, float("nan"), 1e9, 2]),
                             cache_read_tokens=rng.choice([0, 0, 2, 40, -3]), cache_write_tokens=rng.choice([0, 0, 1]))
        price = rng.choice(prices)
        assert checked_cost(checked_result(reply), price) == call_cost(reply, price)
