"""The ``openai`` target against a real HTTP server on 127.0.0.1: retries, timeouts, usage, secrets."""

from __future__ import annotations

import asyncio
import json

import httpx
from runner_support import only_run, openai_arm, questions, write_experiment

from evalsite.calls.targets.http import aiohttp_transport

SECRET = "sk-test-4f9c2b7e1d0a-do-not-log"


def test_answers_usage_and_priced_cost_are_recorded(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(3), [openai_arm(server, params={"temperature": 0.2, "seed": 7},
                                                                   price={"input": 1.0, "output": 2.0})])
    result = cli("run", manifest)
    assert result.exit_code == 0, result.output
    run = only_run(runner_project)
    assert [c["output"] for c in sorted(run.cases, key=lambda c: c["item_id"])] == [
        "echo: question 0", "echo: question 1", "echo: question 2"
    ]
    case = run.cases[0]
    assert (case["input_tokens"], case["output_tokens"], case["finish_reason"]) == (2, 3, "stop")
    assert case["cost_usd"] == (2 * 1.0 + 3 * 2.0) / 1e6
    assert run.footer.totals.cost_usd == 3 * case["cost_usd"]
    body = server.calls[0].body
    assert body["model"] == "fake-model" and body["temperature"] == 0.2 and body["seed"] == 7
    assert body["messages"] == [{"role": "user", "content": body["messages"][0]["content"]}]


def test_billed_cost_wins_over_price_and_no_price_means_unknown_not_zero(runner_project, server, cli):
    server.script["question 0"] = [{"cost": 0.5}]
    manifest = write_experiment(runner_project, questions(2), [openai_arm(server)])
    cli("run", manifest)
    run = only_run(runner_project)
    costs = {c["item_id"]: c["cost_usd"] for c in run.cases}
    assert costs == {"q0": 0.5, "q1": None}
    assert run.footer.totals.cost_usd is None  # one case's cost is unknown, so the total is too
    assert run.footer.totals.known_cost_usd == 0.5 and run.footer.totals.unknown_cost_cases == 1


def test_500_then_success_is_retried_and_counted(runner_project, server, cli):
    server.script["question 0"] = [{"status": 500}, {"status": 503}]
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)])
    assert cli("run", manifest).exit_code == 0
    (case,) = only_run(runner_project).cases
    assert case["error"] is None and case["attempts"] == 3
    assert server.calls_for("question 0") == 3


def test_429_honours_retry_after(runner_project, server, cli):
    server.script["question 0"] = [{"status": 429, "headers": {"Retry-After": "1"}}]
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)])
    assert cli("run", manifest).exit_code == 0
    first, second = server.calls
    # backoff alone would wait at most schedule.max_backoff_s (0.05 s); the server asked for 1 s
    assert second.at - first.at >= 0.95


def test_retries_stop_at_max_attempts_with_the_reason(runner_project, server, cli):
    server.script["question 0"] = [{"status": 500}] * 5
    manifest = write_experiment(runner_project, questions(2), [openai_arm(server)],
                                schedule={"max_attempts": 2, "backoff_s": 0.01})
    result = cli("run", manifest)
    assert result.exit_code == 1
    failed = next(c for c in only_run(runner_project).cases if c["item_id"] == "q0")
    assert failed["error"].startswith("HTTP 500 Internal Server Error") and "(2 attempts)" in failed["error"]
    assert failed["score"] == 0.0 and failed["passed"] is False
    assert server.calls_for("question 0") == 2
    assert next(c for c in only_run(runner_project).cases if c["item_id"] == "q1")["passed"] is True


def test_a_4xx_fails_the_case_at_once(runner_project, server, cli):
    server.script["question 0"] = [{"status": 400, "message": "max_tokens is too large"}]
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)])
    assert cli("run", manifest).exit_code == 1
    (case,) = only_run(runner_project).cases
    assert case["error"].startswith("HTTP 400 Bad Request") and "max_tokens is too large" in case["error"]
    assert case["attempts"] == 1 and server.calls_for("question 0") == 1


def test_a_slow_call_times_out_and_is_retried(runner_project, server, cli):
    server.script["question 0"] = [{"delay": 2.0}, {"delay": 2.0}]
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server, settings={"timeout": 0.2})],
                                schedule={"max_attempts": 2, "backoff_s": 0.01})
    assert cli("run", manifest).exit_code == 1
    (case,) = only_run(runner_project).cases
    assert case["error"] == "timed out after 0.2 s (2 attempts)"
    assert case["latency_ms"] >= 200  # measured around the failing call too
    assert server.calls_for("question 0") == 2


def test_finish_reason_length_is_named_by_item(runner_project, server, cli):
    for item in ("question 1", "question 3"):
        server.script[item] = [{"finish_reason": "length", "reply": "echo: quest"}]
    manifest = write_experiment(runner_project, questions(4), [openai_arm(server)])
    result = cli("run", manifest)
    assert "outputs stopped at max_tokens (finish_reason length) on items q1, q3" in result.stderr
    assert only_run(runner_project).footer.totals.truncated_items == ("q1", "q3")


def test_the_api_key_is_sent_but_never_written(runner_project, server, cli, monkeypatch):
    monkeypatch.setenv("FAKE_PROVIDER_KEY", SECRET)
    server.api_key = SECRET
    manifest = write_experiment(runner_project, questions(2), [openai_arm(server, settings={"api_key_env": "FAKE_PROVIDER_KEY"})])
    assert cli("run", manifest, "--build").exit_code == 0
    assert server.calls[0].headers["authorization"] == f"Bearer {SECRET}"
    assert_secret_absent(runner_project, SECRET)


def test_a_rejected_key_echoed_by_the_provider_is_redacted(runner_project, server, cli, monkeypatch):
    monkeypatch.setenv("FAKE_PROVIDER_KEY", SECRET)
    server.api_key = "sk-the-right-one"
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server, settings={"api_key_env": "FAKE_PROVIDER_KEY"})])
    result = cli("run", manifest, "--build")
    assert result.exit_code == 1
    (case,) = only_run(runner_project).cases
    assert case["error"].startswith("HTTP 401 Unauthorized") and "Incorrect API key provided: ***" in case["error"]
    assert SECRET not in result.output
    assert_secret_absent(runner_project, SECRET)


def test_headers_from_the_environment_are_sent_and_not_recorded(runner_project, server, cli, monkeypatch):
    monkeypatch.setenv("GATEWAY_TOKEN", SECRET)
    arm = openai_arm(server, settings={"headers": {"X-Team": "evals"}, "headers_env": {"X-Gateway-Token": "GATEWAY_TOKEN"}})
    assert cli("run", write_experiment(runner_project, questions(1), [arm])).exit_code == 0
    assert server.calls[0].headers["x-gateway-token"] == SECRET and server.calls[0].headers["x-team"] == "evals"
    assert_secret_absent(runner_project, SECRET)


def test_a_missing_key_variable_is_one_line_before_any_call(runner_project, server, cli):
    arm = openai_arm(server, settings={"api_key_env": "NOT_SET_ANYWHERE_1234"})
    result = cli("run", write_experiment(runner_project, questions(1), [arm]))
    assert result.exit_code == 1
    assert result.output.strip() == (
        "Error: arm 'gpt': settings.api_key_env: environment variable NOT_SET_ANYWHERE_1234 is not set (target openai)"
    )
    assert server.calls == [] and not (runner_project / "runs").exists()


def test_secrets_written_into_the_manifest_are_refused(runner_project, server, cli):
    literal_key = openai_arm(server, settings={"api_key": "sk-literal"})
    result = cli("run", write_experiment(runner_project, questions(1), [literal_key]))
    assert result.exit_code == 1 and "arms[0].settings.api_key: looks like a secret written into the manifest" in result.output
    literal_header = openai_arm(server, settings={"headers": {"Authorization": "Bearer sk-literal"}})
    result = cli("run", write_experiment(runner_project, questions(1), [literal_header]))
    assert result.exit_code == 1 and "settings.headers.Authorization: looks like a secret" in result.output


def test_unknown_settings_and_a_missing_model_are_named(runner_project, server, cli):
    typo = openai_arm(server, settings={"base_ur": "http://x"})
    result = cli("run", write_experiment(runner_project, questions(1), [typo]))
    assert result.exit_code == 1 and "settings: unknown key 'base_ur' for target openai" in result.output
    no_model = {**openai_arm(server), "target": "openai"}
    result = cli("run", write_experiment(runner_project, questions(1), [no_model]))
    assert "name the model as 'openai:<model>' or in settings.model" in result.output


def test_connection_refused_is_a_case_error_after_retries(runner_project, cli):
    arm = {"id": "gpt", "target": "openai:m", "settings": {"base_url": "http://127.0.0.1:9/v1"}}
    result = cli("run", write_experiment(runner_project, questions(1), [arm], schedule={"max_attempts": 2, "backoff_s": 0.01}))
    assert result.exit_code == 1
    (case,) = only_run(runner_project).cases
    assert case["error"].startswith("connection error: ConnectError") and case["attempts"] == 2


def test_json_prints_the_run_summaries(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(2), [openai_arm(server)])
    result = cli("run", manifest, "--json")
    (row,) = json.loads(result.stdout)
    assert row["status"] == "completed" and row["cases"] == 2 and row["pass_rate"] == 1.0 and row["resume"] is None


def assert_secret_absent(root, secret: str) -> None:
    written = [p for folder in ("runs", "site") for p in (root / folder).rglob("*") if p.is_file()]
    assert written, "nothing was written"
    for path in written:
        assert secret not in path.read_text(encoding="utf-8", errors="replace"), path


def test_the_aiohttp_pool_bounds_connections_and_reports_refusals(server):
    server.delay = 0.02

    async def send(transport, url: str, count: int) -> list:
        async with httpx.AsyncClient(transport=transport) as client:
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            return await asyncio.gather(*(client.post(url, json=body) for _ in range(count)), return_exceptions=True)

    answers = asyncio.run(send(aiohttp_transport(12), server.url + "/v1/chat/completions", 30))
    assert all(a.status_code == 200 for a in answers)
    assert server.max_in_flight == 12
    answers = asyncio.run(send(aiohttp_transport(4), "http://127.0.0.1:9/v1/chat/completions", 3))
    assert all(isinstance(a, httpx.ConnectError) for a in answers)
    assert aiohttp_transport(1).ssl_context is aiohttp_transport(2).ssl_context  # one SSL context for all


def test_a_base_url_query_is_kept_after_the_endpoint_path(runner_project, server, cli):
    """Azure OpenAI's shape: the deployment in the path, ``api-version`` in the query."""
    arm = openai_arm(server, settings={"base_url": server.url + "/openai/deployments/gpt-4o/?api-version=2024-06-01"})
    result = cli("run", write_experiment(runner_project, questions(1), [arm]))
    assert result.exit_code == 0, result.output
    assert [call.path for call in server.calls] == ["/openai/deployments/gpt-4o/chat/completions?api-version=2024-06-01"]
    assert only_run(runner_project).cases[0]["output"] == "echo: question 0"
