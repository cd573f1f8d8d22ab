"""The ``command`` target: a subprocess per case, JSON on stdin, JSON or text on stdout."""

from __future__ import annotations

import shlex
import sys
import textwrap

from runner_support import only_run, questions, write_experiment

PYTHON = shlex.quote(sys.executable)


def script(project, name: str, body: str) -> str:
    path = project / f"{name}.py"
    path.write_text("import json, sys, time\nrequest = json.load(sys.stdin)\n" + textwrap.dedent(body))
    return f"command:{PYTHON} {name}.py"


def test_json_stdout_is_a_result_and_the_request_carries_row_params_repeat(runner_project, cli):
    target = script(runner_project, "answer", """
        print(json.dumps({"output": "echo: " + request["input"], "input_tokens": 5, "output_tokens": 2,
                          "cost_usd": request["params"]["cost"] * (request["repeat"] + 1)}))
    """)
    arms = [{"id": "cmd", "target": target, "params": {"cost": 0.25}}]
    assert cli("run", write_experiment(runner_project, questions(2), arms), "--repeat", "2").exit_code == 0
    cases = only_run(runner_project).cases
    assert {c["output"] for c in cases} == {"echo: question 0", "echo: question 1"}
    assert sorted(c["cost_usd"] for c in cases) == [0.25, 0.25, 0.5, 0.5]
    assert all(c["input_tokens"] == 5 and c["passed"] for c in cases)


def test_text_stdout_is_the_output_and_other_json_stays_text(runner_project, cli):
    target = script(runner_project, "text", """
        print(json.dumps({"answer": 42}) if request["item_id"] == "q1" else "echo: " + request["input"])
    """)
    cli("run", write_experiment(runner_project, questions(2), [{"id": "cmd", "target": target}]))
    outputs = {c["item_id"]: c["output"] for c in only_run(runner_project).cases}
    assert outputs == {"q0": "echo: question 0", "q1": '{"answer": 42}'}


def test_a_non_zero_exit_is_the_case_error_with_the_last_stderr_lines(runner_project, cli):
    target = script(runner_project, "crash", """
        for n in range(8):
            print(f"log line {n}", file=sys.stderr)
        sys.exit(3)
    """)
    result = cli("run", write_experiment(runner_project, questions(1), [{"id": "cmd", "target": target}]))
    assert result.exit_code == 1
    (case,) = only_run(runner_project).cases
    assert case["error"] == "exit status 3: log line 3 | log line 4 | log line 5 | log line 6 | log line 7"
    assert case["attempts"] == 1


def test_a_hanging_command_is_killed_at_the_timeout(runner_project, cli):
    marker = runner_project / "finished.txt"
    target = script(runner_project, "hang", f"""
        time.sleep(30)
        open({str(marker)!r}, "w").write("done")
    """)
    arms = [{"id": "cmd", "target": target, "settings": {"timeout": 0.5}}]
    result = cli("run", write_experiment(runner_project, questions(1), arms, schedule={"max_attempts": 1}))
    assert result.exit_code == 1
    assert only_run(runner_project).cases[0]["error"] == "timed out after 0.5 s (1 attempt)"
    assert not marker.exists()


def test_settings_command_as_argv_and_env(runner_project, cli):
    script(runner_project, "env", 'print(__import__("os").environ["GREETING"] + " " + request["input"])\n')
    arms = [{"id": "cmd", "target": "command", "settings": {"command": [sys.executable, "env.py"], "env": {"GREETING": "hi"}}}]
    cli("run", write_experiment(runner_project, questions(1), arms))
    assert only_run(runner_project).cases[0]["output"] == "hi question 0"


def test_a_missing_program_is_one_line_before_any_case(runner_project, cli):
    arms = [{"id": "cmd", "target": "command:no-such-program-xyz --flag"}]
    result = cli("run", write_experiment(runner_project, questions(1), arms))
    assert result.exit_code == 1
    assert result.output.startswith("Error: arm 'cmd': target command: program 'no-such-program-xyz' not found")
    assert not (runner_project / "runs").exists()
