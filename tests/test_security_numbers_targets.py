"""Numbers from a target, over a real HTTP server on 127.0.0.1 (issue 32, items 3, 4 and the
price × tokens part of 9): a billed cost out of range is a case error and the run finishes; token
counts a provider sends as ``12.0`` are counts, ``12.5``, NaN or ``"12"`` are unknown, and an unknown
cost under a ceiling stops the run saying why; nothing evalsite writes holds Infinity."""

from __future__ import annotations

import json
import textwrap

import pytest
from runner_support import all_runs, only_run, openai_arm, questions, write_experiment

from evalsite.runlog.records import MAX_COST_USD

#: US dollars per million tokens. The fake server counts words: "question i" is 2 input tokens and
#: "echo: question i" 3 output tokens, so a case costs (2 * 1 + 3 * 2) / 1e6 = $0.000008.
PRICE = {"input": 1.0, "output": 2.0}
CASE_COST = (2 * 1.0 + 3 * 2.0) / 1e6
CEILING = "0.00005"  # reached on the 7th case: 7 * 0.000008 = 0.000056


def test_billed_costs_of_1e308_are_case_errors_and_every_reader_still_works(runner_project, server, cli):
    server.script = {f"question {i}": [{"cost": 1e308}] for i in (0, 1)}
    manifest = write_experiment(runner_project, questions(4), [openai_arm(server)])
    cli("run", manifest)
    run = only_run(runner_project)
    errors = {case["item_id"]: case["error"] for case in run.cases}
    message = f"target returned cost_usd=1e+308; expected a finite number from 0 to {MAX_COST_USD:g} or null"
    assert errors == {"q0": message, "q1": message, "q2": None, "q3": None}
    assert run.status == "completed" and len(run.cases) == 4 and not run.warnings
    for command in (("show", run.run_id), ("runs",), ("leaderboard",), ("build",), ("validate",)):
        result = cli(*command)
        assert result.exception is None or isinstance(result.exception, SystemExit), (command, result.output)
        assert result.exit_code in (0, 1) and "Traceback" not in result.output, (command, result.output)


def test_a_billed_cost_of_1e308_is_refused_by_the_anthropic_target_too(runner_project, server, cli):
    arm = {"id": "claude", "target": "anthropic:fake", "settings": {"base_url": server.url}}
    server.script = {"question 0": [{"usage_values": {"output_tokens": 10**10}}]}
    cli("run", write_experiment(runner_project, questions(1), [arm]))
    (case,) = only_run(runner_project).cases
    assert case["error"] == "target returned output_tokens=10000000000; expected a whole number from 0 to 1000000000 or null"


def ceiling_run(runner_project, server, cli, usage_values: dict | None, count: int = 40):
    server.script = {f"question {i}": [{"usage_values": usage_values}] for i in range(count)} if usage_values else {}
    manifest = write_experiment(runner_project, questions(count), [openai_arm(server, price=PRICE)], concurrency=1)
    result = cli("run", manifest, "--max-cost", CEILING)
    return result, only_run(runner_project)


def test_integer_token_counts_stop_the_run_at_the_ceiling(runner_project, server, cli):
    result, run = ceiling_run(runner_project, server, cli, None)
    assert run.footer.status == "stopped_cost_ceiling" and len(run.cases) == 7, result.output
    assert run.footer.cost_ceiling["spent_usd"] == pytest.approx(7 * CASE_COST)


def test_whole_floats_are_token_counts_and_stop_the_run_at_the_same_case(runner_project, server, cli):
    result, run = ceiling_run(runner_project, server, cli, {"prompt_tokens": 2.0, "completion_tokens": 3.0})
    assert run.footer.status == "stopped_cost_ceiling" and len(run.cases) == 7, result.output
    assert {(case["input_tokens"], case["output_tokens"]) for case in run.cases} == {(2, 3)}
    assert all(type(case["input_tokens"]) is int for case in run.cases)


@pytest.mark.parametrize("sent", [2.5, float("nan"), "2", True, -1.5])
def test_an_unusable_token_count_stops_a_run_with_a_ceiling_saying_why(runner_project, server, cli, sent):
    result, run = ceiling_run(runner_project, server, cli, {"prompt_tokens": sent})
    assert run.footer.status == "stopped_cost_ceiling" and len(run.cases) == 1, result.output
    (case,) = run.cases
    assert case["error"] is None and case["output"] == "echo: question 0"  # the answer is kept
    assert case["input_tokens"] is None and case["output_tokens"] == 3 and case["cost_usd"] is None
    why = "gpt: the cost of item 'q0' (repeat 0) is unknown (input_tokens=None, output_tokens=3 from its target), " \
          "so the ceiling cannot count it"
    assert run.footer.cost_ceiling == {"max_cost_usd": float(CEILING), "spent_usd": 0.0, "unknown_cost": why}
    warning = f"warning: stopped at the cost ceiling: {why} ($0 counted this time, ceiling $0.00005)"
    assert warning in result.stderr.splitlines()
    assert f"--resume {run.run_id}" in result.stderr and result.exit_code == 1


def test_an_unusable_token_count_without_a_ceiling_is_an_unknown_cost_and_the_run_finishes(runner_project, server, cli):
    server.script = {"question 0": [{"usage_values": {"completion_tokens": "3"}}]}
    manifest = write_experiment(runner_project, questions(3), [openai_arm(server, price=PRICE)])
    cli("run", manifest)
    run = only_run(runner_project)
    assert run.status == "completed" and len(run.cases) == 3
    assert [case["cost_usd"] for case in sorted(run.cases, key=lambda c: c.item_id)] == [None, CASE_COST, CASE_COST]
    assert run.footer.totals.cost_usd is None and run.footer.totals.unknown_cost_cases == 1


def test_an_arm_without_a_price_is_still_not_counted_by_the_ceiling(runner_project, server, cli):
    """As documented: the ceiling counts billed or priced costs; an unpriced arm is warned about, not stopped."""
    manifest = write_experiment(runner_project, questions(3), [openai_arm(server)])
    result = cli("run", manifest, "--max-cost", CEILING)
    run = only_run(runner_project)
    assert run.status == "completed" and len(run.cases) == 3, result.output
    assert "cost unknown for 3 case(s)" in result.stderr


def test_price_times_tokens_past_the_range_is_an_unknown_cost_never_infinity(runner_project, server, cli):
    huge = {"input": 1e300, "output": 1e300}  # a finite price the manifest accepts: tokens x price overflows
    manifest = write_experiment(runner_project, questions(3), [openai_arm(server, price=huge)])
    cli("run", manifest)
    run = only_run(runner_project)
    text = (run.directory / "cases.jsonl").read_text() + (run.directory / "end.json").read_text()
    assert "Infinity" not in text and "NaN" not in text
    assert run.status == "completed" and [case["cost_usd"] for case in run.cases] == [None] * 3
    result = cli("run", write_experiment(runner_project, questions(3), [openai_arm(server, price=huge)], name="capped"),
                 "--max-cost", "1")
    assert "stopped at the cost ceiling: gpt: the cost of item 'q0' (repeat 0) is unknown" in result.stderr


ARM = '''
def answer(input):
    return {"output": "x", "output_tokens": 10**5000}
'''


def test_a_python_target_reporting_an_integer_too_long_to_print_gets_a_case_error(runner_project, cli):
    (runner_project / "digits_arm.py").write_text(textwrap.dedent(ARM))
    cli("run", write_experiment(runner_project, [{"id": "a", "input": "a", "expected": "x"}],
                                [{"id": "py", "target": "python:digits_arm:answer"}]))
    (case,) = only_run(runner_project).cases
    assert case["error"] == ("target returned output_tokens=of about 5001 digits; "
                             "expected a whole number from 0 to 1000000000 or null")


UNDECODED_ARM = '''
def answer(input):
    return b"caf\\xff".decode("utf-8", "surrogateescape")  # a tool's output decoded as the file system decodes
'''


def test_a_python_target_returning_text_with_a_lone_surrogate_is_recorded_and_read(runner_project, cli):
    """The run used to end in UnicodeEncodeError at its first case; the output is now written with
    U+FFFD for the undecodable byte, and the run reads, ranks and builds."""
    (runner_project / "undecoded_arm.py").write_text(textwrap.dedent(UNDECODED_ARM))
    cli("run", write_experiment(runner_project, [{"id": "a", "input": "a", "expected": "café"}],
                                [{"id": "py", "target": "python:undecoded_arm:answer"}]))
    run = only_run(runner_project)
    (case,) = run.cases
    assert run.status == "completed" and case["output"] == "caf\ufffd" and case["error"] is None
    assert cli("leaderboard").exit_code == 0 and cli("build").exit_code == 0


def test_a_model_reply_with_a_lone_surrogate_is_recorded_cached_and_replayed(runner_project, server, cli):
    """A reply whose JSON escapes half an emoji ("\\ud83d" alone): the run used to end in
    UnicodeEncodeError writing the response cache or the case; the cache keeps the reply as it came
    (replayed, the same case) and the case holds U+FFFD."""
    server.script = {"question 0": [{"reply": "cut \ud83d"}]}
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)])
    cli("run", manifest, "--cache", "record")
    (recorded,) = only_run(runner_project).cases
    assert recorded["output"] == "cut \ufffd" and recorded["error"] is None
    calls = len(server.calls)
    cli("run", manifest, "--cache", "replay")
    assert len(server.calls) == calls  # replayed from the cache, which held the reply
    assert [run.cases[0]["output"] for run in all_runs(runner_project)] == ["cut \ufffd"] * 2


def test_a_conversation_goes_on_after_a_reply_with_a_lone_surrogate(runner_project, server, cli):
    """The second turn sends the first reply back: its lone surrogate goes as its JSON escape (UTF-8
    cannot hold it), so the call is made rather than failing as an error."""
    server.script = {"first": [{"reply": "cut \ud83d"}]}
    cli("run", write_experiment(runner_project, [{"id": "c", "turns": ["first", "second"], "expected": "echo: second"}],
                                [openai_arm(server)]))
    (case,) = only_run(runner_project).cases
    assert case["error"] is None and case["output"] == "echo: second", case.raw
    assert [message["content"] for message in server.calls[-1].body["messages"]][-2:] == ["cut \ud83d", "second"]


def test_a_resumed_run_after_out_of_range_costs_finishes(runner_project, server, cli):
    server.script = {"question 0": [{"cost": 1e308}], "question 1": [{"cost": 1.7e308}]}
    manifest = write_experiment(runner_project, questions(6), [openai_arm(server, price=PRICE)], concurrency=1)
    first = cli("run", manifest, "--max-cost", str(2.5 * CASE_COST))
    run = only_run(runner_project)
    assert run.footer.status == "stopped_cost_ceiling", first.output
    cli("run", manifest, "--resume", run.run_id)
    run = only_run(runner_project)
    assert run.status == "completed" and sorted(case.item_id for case in run.cases) == [f"q{i}" for i in range(6)]
    assert sum(1 for case in run.cases if case["error"]) == 2
    assert json.loads((run.directory / "end.json").read_text())["totals"]["known_cost_usd"] == pytest.approx(4 * CASE_COST)
