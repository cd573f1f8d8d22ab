"""The runner in-process: multi-turn replay, recorded outputs, concurrency, exit codes."""

from __future__ import annotations

import io
import json

from runner_support import only_run, openai_arm, questions, write_experiment

from evalsite.execute.progress import Progress

TURNS_ROW = {
    "id": "chat",
    "turns": [
        "first question",
        {"role": "assistant", "content": "an old answer that must not be replayed"},
        {"role": "user", "content": "second question"},
    ],
    "expected": "echo: second question",
}


def test_turns_are_replayed_with_the_targets_own_replies(runner_project, server, cli):
    manifest = write_experiment(runner_project, [TURNS_ROW], [openai_arm(server, price={"input": 1, "output": 1})],
                                prompt="You are terse.")
    assert cli("run", manifest).exit_code == 0
    first, second = server.calls
    assert first.body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "first question"},
    ]
    assert second.body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "echo: first question"},
        {"role": "user", "content": "second question"},
    ]
    (case,) = only_run(runner_project).cases
    assert case["turn_outputs"] == ["echo: first question", "echo: second question"]
    assert case["transcript"] == second.body["messages"] + [{"role": "assistant", "content": "echo: second question"}]
    assert case["output"] == "echo: second question" and case["passed"] is True
    assert case["input_tokens"] == 5 + 10 and case["output_tokens"] == 3 + 3  # summed over the two turns
    assert case["cost_usd"] == (15 + 6) / 1e6 and case["attempts"] == 2


def test_a_failing_turn_fails_the_case_and_keeps_the_transcript_so_far(runner_project, server, cli):
    server.script["second question"] = [{"status": 400, "message": "too long"}]
    assert cli("run", write_experiment(runner_project, [TURNS_ROW], [openai_arm(server)])).exit_code == 1
    (case,) = only_run(runner_project).cases
    assert case["error"].startswith("turn 2: HTTP 400 Bad Request")
    assert case["output"] is None and case["turn_outputs"] == ["echo: first question"]
    assert case["transcript"][-1] == {"role": "user", "content": "second question"}


def test_a_python_target_receives_the_history(runner_project, cli):
    (runner_project / "pt_history.py").write_text(
        "def answer(input):\n    return f'{len(input)} messages, last: ' + input[-1]['content']\n"
    )
    row = {"id": "c", "turns": ["a", "b", "c"]}
    cli("run", write_experiment(runner_project, [row], [{"id": "p", "target": "python:pt_history:answer"}], evaluators=[]))
    assert only_run(runner_project).cases[0]["turn_outputs"] == ["1 messages, last: a", "3 messages, last: b", "5 messages, last: c"]


def test_none_scores_recorded_outputs_chat_rows_and_recorded_turns(runner_project, cli):
    rows = [
        {"id": "plain", "input": "q", "output": "yes", "expected": "yes"},
        {"id": "chat", "input": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "yes"}],
         "expected": "yes"},
        {"id": "turns", "turns": ["hi", {"role": "assistant", "content": "hello"}, "q",
                                  {"role": "assistant", "content": "yes"}], "expected": "yes"},
        {"id": "missing", "input": "q", "expected": "yes"},
    ]
    result = cli("run", write_experiment(runner_project, rows, [{"id": "recorded", "target": "none"}]))
    assert result.exit_code == 1  # the row with nothing recorded is a case error
    cases = {c["item_id"]: c for c in only_run(runner_project).cases}
    assert all(cases[i]["output"] == "yes" and cases[i]["passed"] for i in ("plain", "chat", "turns"))
    assert cases["turns"]["turn_outputs"] == ["hello", "yes"] and len(cases["turns"]["transcript"]) == 4
    assert cases["missing"]["error"].startswith("the row has no recorded 'output'")


def test_malformed_turns_and_unrenderable_prompts_stop_before_any_call(runner_project, server, cli):
    bad_turns = [{"id": "ok", "input": "x"}, {"id": "bad", "turns": ["hi", {"role": "robot", "content": "?"}]}]
    result = cli("run", write_experiment(runner_project, bad_turns, [openai_arm(server)]))
    assert result.exit_code == 1
    assert result.output.strip() == (
        "Error: data/exp.jsonl: line 2: 'turns[1].role' must be one of system, user, assistant, tool, developer, "
        "got 'robot'"
    )
    result = cli("run", write_experiment(runner_project, [{"id": "a", "topic": "x"}, {"id": "b"}], [openai_arm(server)],
                                         prompt="Tell me about {{ topic }}"))
    assert result.exit_code == 1
    assert "Error: experiments/exp.yaml: item 'b' of data/exp.jsonl: prompt: cannot render: 'topic' is undefined" in result.output
    assert server.calls == [] and not (runner_project / "runs").exists()


def test_cases_run_concurrently_up_to_the_limit(runner_project, server, cli):
    server.delay = 0.05
    manifest = write_experiment(runner_project, questions(30), [openai_arm(server)], concurrency=2)
    cli("run", manifest, "--concurrency", "10")
    assert server.max_in_flight == 10  # the --concurrency flag beats the manifest's 2
    assert only_run(runner_project).header.raw["schedule"]["concurrency"] == 10


def test_critical_rows_fail_the_command(runner_project, cli):
    (runner_project / "pt_half.py").write_text("def answer(row):\n    return 'right' if row['id'] != 'c1' else 'wrong'\n")
    rows = [{"id": f"c{i}", "input": "q", "expected": "right", "metadata": {"critical": i == 1}} for i in range(3)]
    passing = [{"id": f"c{i}", "input": "q", "expected": "right", "metadata": {"critical": i != 1}} for i in range(3)]
    arm = [{"id": "a", "target": "python:pt_half:answer"}]
    result = cli("run", write_experiment(runner_project, rows, arm))
    assert result.exit_code == 1 and "a: critical rows failed: c1" in result.stderr
    assert only_run(runner_project).footer.totals.critical_failures == ("c1",)
    # a non-critical failure fails the verdict (the pass rule) but --allow-failures accepts it;
    # a critical one fails the command even then
    other = write_experiment(runner_project, passing, arm, name="other")
    assert cli("run", other).exit_code == 1
    assert cli("run", other, "--allow-failures").exit_code == 0
    assert cli("run", "experiments/exp.yaml", "--allow-failures").exit_code == 1


def test_run_json_records_the_schedule_and_end_json_the_totals(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(2), [openai_arm(server, settings={"timeout": 7})],
                                schedule={"max_attempts": 4, "backoff_s": 0.5})
    result = cli("run", manifest, "--max-cost", "2.5", "--json")
    run = only_run(runner_project)
    assert run.header.raw["schedule"] == {"concurrency": 8, "timeout_s": 7.0, "max_attempts": 4, "backoff_s": 0.5,
                                      "max_backoff_s": 60.0, "max_cost_usd": 2.5, "deadline_s": None,
                                      "ordering": "depth", "parallel_arms": 1, "pause_between_s": 0.0,
                                      "reset_state": False}
    totals = run.footer.raw["totals"]
    assert {"cases", "errors", "scored", "mean_score", "pass_rate", "cost_usd", "mean_latency_ms"} <= set(totals)
    assert run.footer.totals.recorded == set(totals)
    assert totals["planned"] == 2 and totals["unknown_cost_cases"] == 2 and totals["known_cost_usd"] is None
    assert run.footer.cost_ceiling == {"max_cost_usd": 2.5, "spent_usd": 0.0}
    assert json.loads(result.stdout)[0]["run_id"] == run.run_id


def test_bad_schedule_values_are_named(runner_project, server, cli):
    result = cli("run", write_experiment(runner_project, questions(1), [openai_arm(server)], schedule={"max_attempts": 0}))
    assert result.exit_code == 1 and "schedule.max_attempts: must be at least 1, got 0" in result.output
    result = cli("run", write_experiment(runner_project, questions(1), [openai_arm(server)], limits={"max_cost_usd": "lots"}))
    assert result.exit_code == 1 and "limits.max_cost_usd: must be a number, got the string 'lots'" in result.output


def test_progress_draws_a_bar_on_a_terminal_and_nothing_when_off():
    off_stream = io.StringIO()
    off = Progress(off_stream, enabled=False)  # --quiet, and the Python API's default
    off.start("arm", 2)
    off.advance(False, None)
    off.finish()
    assert off_stream.getvalue() == "" and off.done == 1
    stream = io.StringIO()
    shown = Progress(stream, enabled=True)
    shown.start("arm", 3)
    for error, spent in [(False, None), (True, 0.25), (False, 0.5)]:
        shown.advance(error, spent)
    shown.finish()
    drawn = stream.getvalue()
    assert "0/3, errors 0 cost ?" in drawn
    last = drawn.split("\r")[-1]
    assert last.startswith("arm ") and "3/3, errors 1 $0.75" in last  # this arm's own spend: 0.25 + 0.5


def test_progress_off_a_terminal_is_a_line_every_five_percent_or_ten_seconds_at_most_one_a_second():
    now = [0.0]
    stream = io.StringIO()  # not a terminal: a CI log
    lines = Progress(stream, clock=lambda: now[0])
    lines.plan(2)
    lines.start("careful", 100)
    steps = [0.25] * 5 + [0.1] * 5 + [1.0, 11.0]  # 5 % more at the 10th case, but < 1 s after the 5th
    for case, step in enumerate(steps):
        now[0] += step
        lines.advance(case == 7, 0.001)
    lines.finish()
    written = stream.getvalue().splitlines()
    assert written[0] == "careful (1/2): 0/100 cases (0%), errors 0, cost ?"
    assert written[1] == "careful (1/2): 5/100 cases (5%), errors 0, $0.005, 4 cases/s, ETA 0:00:24"
    assert [line.split(": ")[1].split(" cases")[0] for line in written] == ["0/100", "5/100", "11/100", "12/100"]
    assert "errors 1" in written[-1] and "\r" not in stream.getvalue()
