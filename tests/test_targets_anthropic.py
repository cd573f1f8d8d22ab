"""The ``anthropic`` target against the fake Messages API on 127.0.0.1."""

from __future__ import annotations

from runner_support import only_run, questions, write_experiment

KEY = "sk-ant-test-0c1d2e3f-never-on-disk"


def anthropic_arm(server, **settings) -> dict:
    return {
        "id": "claude",
        "target": "anthropic:claude-fake",
        "params": {"max_tokens": 64, "temperature": 0},
        "settings": {"base_url": server.url, "api_key_env": "FAKE_ANTHROPIC_KEY", **settings},
    }


def test_messages_request_shape_usage_and_stop_reasons(runner_project, server, cli, monkeypatch):
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", KEY)
    server.script["question 1"] = [{"finish_reason": "length"}]
    prompt = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "{{ input }}"}]
    manifest = write_experiment(runner_project, questions(2), [anthropic_arm(server)], prompt=prompt)
    result = cli("run", manifest)
    assert result.exit_code == 0, result.output
    call = server.calls[0]
    assert call.path == "/v1/messages"
    assert call.headers["x-api-key"] == KEY and call.headers["anthropic-version"] == "2023-06-01"
    assert call.body["system"] == "Answer briefly."
    assert call.body["messages"] == [{"role": "user", "content": call.content}]
    assert call.body["max_tokens"] == 64 and call.body["model"] == "claude-fake"
    cases = {c["item_id"]: c for c in only_run(runner_project).cases}
    assert cases["q0"]["output"] == "echo: question 0" and cases["q0"]["finish_reason"] == "stop"
    assert (cases["q0"]["input_tokens"], cases["q0"]["output_tokens"]) == (2, 3)  # the server counts words of `messages`
    assert cases["q1"]["finish_reason"] == "length"
    assert "on items q1" in result.stderr
    for path in (runner_project / "runs").rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(encoding="utf-8")


def test_overloaded_is_retried(runner_project, server, cli, monkeypatch):
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", KEY)
    server.script["question 0"] = [{"status": 529}]
    assert cli("run", write_experiment(runner_project, questions(1), [anthropic_arm(server)])).exit_code == 0
    assert only_run(runner_project).cases[0]["attempts"] == 2


def test_the_default_endpoint_needs_its_key_variable(runner_project, cli, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    arm = {"id": "claude", "target": "anthropic:claude-fake"}
    result = cli("run", write_experiment(runner_project, questions(1), [arm]))
    assert result.exit_code == 1
    assert "settings.api_key_env: environment variable ANTHROPIC_API_KEY is not set (target anthropic)" in result.output
