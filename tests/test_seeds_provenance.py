"""Provenance per case (seed 003): the model that ran, the ids of its calls, one thread id per replay."""

from __future__ import annotations

from runner_support import only_run, openai_arm, questions, write_experiment


def test_openai_colon_model_is_the_fingerprints_target_model(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)])
    assert cli("run", manifest).exit_code == 0
    assert only_run(runner_project).header.raw["fingerprint"]["target"] == {"kind": "openai", "model": "fake-model"}


def test_an_arm_naming_its_model_in_params_runs_it(runner_project, server, cli):
    arm = {"id": "gpt", "target": "openai", "params": {"model": "from-params"}, "settings": {"base_url": server.url + "/v1"}}
    manifest = write_experiment(runner_project, questions(1), [arm])
    result = cli("run", manifest)
    assert result.exit_code == 0, result.output
    assert server.calls[0].body["model"] == "from-params"
    assert only_run(runner_project).header.raw["fingerprint"]["target"] == {"kind": "openai", "model": "from-params"}


def test_every_case_records_its_request_ids_served_model_and_fingerprint(runner_project, server, cli):
    server.script["question 0"] = [{"status": 500}]
    server.script["question 1"] = [{"system_fingerprint": "fp_other"}]
    manifest = write_experiment(runner_project, questions(2), [openai_arm(server)], concurrency=1)
    assert cli("run", manifest).exit_code == 0
    cases = {c["item_id"]: c for c in only_run(runner_project).cases}
    ids_sent = [f"chatcmpl-{n}" for n in range(1, len(server.calls) + 1)]
    assert cases["q0"]["request_ids"] == ["req-1", "chatcmpl-2"], "the failed attempt's id comes first"
    assert cases["q1"]["request_ids"] == [ids_sent[2]]
    assert {c["served_model"] for c in cases.values()} == {"fake-model"}
    assert (cases["q0"]["system_fingerprint"], cases["q1"]["system_fingerprint"]) == ("fp_fake", "fp_other")
    totals = only_run(runner_project).footer.raw["totals"]
    assert totals["served_models"] == ["fake-model"] and totals["served_model_changed"] is False


def test_a_served_model_that_changes_mid_run_is_flagged_in_totals_and_show(runner_project, server, cli):
    server.script["question 1"] = [{"served_model": "fake-model-2025-06"}]
    manifest = write_experiment(runner_project, questions(3), [openai_arm(server)], concurrency=1)
    result = cli("run", manifest)
    assert "the served model changed mid-run: fake-model, fake-model-2025-06" in result.output
    run = only_run(runner_project)
    assert run.footer.raw["totals"]["served_model_changed"] is True
    assert run.footer.raw["totals"]["served_models"] == ["fake-model", "fake-model-2025-06"]
    shown = cli("show", run.run_id)
    assert "the served model changed mid-run: fake-model, fake-model-2025-06" in shown.output


def test_a_replayed_conversation_sends_one_thread_id_with_every_call(runner_project, server, cli):
    rows = [{"id": "c1", "turns": ["hi", "more", "bye"]}, {"id": "c2", "turns": ["solo"]}]
    manifest = write_experiment(runner_project, rows, [openai_arm(server)], name="chat", repeat=2,
                                evaluators=[{"type": "length", "min": 1}])
    result = cli("run", manifest)
    assert result.exit_code == 0, result.output
    sent = [(call.content, call.headers.get("x-evalsite-thread")) for call in server.calls]
    by_thread: dict[str, list[str]] = {}
    for content, thread in sent:
        by_thread.setdefault(thread, []).append(content)
    assert sorted(by_thread) == ["exp-chat-c1-0", "exp-chat-c1-1", "exp-chat-c2-0", "exp-chat-c2-1"]
    assert by_thread["exp-chat-c1-0"] == ["hi", "more", "bye"] and by_thread["exp-chat-c2-1"] == ["solo"]
    cases = {(c["item_id"], c["repeat"]): c for c in only_run(runner_project).cases}
    assert cases[("c1", 1)]["thread_id"] == "exp-chat-c1-1"
    assert len(cases[("c1", 0)]["request_ids"]) == 3 and len(set(cases[("c1", 0)]["request_ids"])) == 3


def test_a_single_call_sends_no_thread_header(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)])
    assert cli("run", manifest).exit_code == 0
    assert "x-evalsite-thread" not in server.calls[0].headers
    assert "thread_id" not in only_run(runner_project).cases[0]


def test_the_anthropic_target_records_its_message_id_and_model(runner_project, server, cli, monkeypatch):
    monkeypatch.setenv("FAKE_ANTHROPIC_KEY", "sk-ant-test")
    arm = {"id": "claude", "target": "anthropic:claude-fake",
           "settings": {"base_url": server.url, "api_key_env": "FAKE_ANTHROPIC_KEY"}}
    assert cli("run", write_experiment(runner_project, questions(1), [arm])).exit_code == 0
    (case,) = only_run(runner_project).cases
    assert (case["request_ids"], case["served_model"]) == (["msg_1"], "claude-fake")


def test_provenance_is_queryable_beside_cases_that_have_none(runner_project, server, cli):
    (runner_project / "plain_arm.py").write_text("def echo(input):\n    return 'echo: ' + input\n")
    arms = [openai_arm(server), {"id": "plain", "target": "python:plain_arm:echo"}]
    assert cli("run", write_experiment(runner_project, questions(2), arms)).exit_code == 0
    result = cli("query", "SELECT c.served_model, len(c.request_ids) AS calls FROM cases c JOIN runs r USING (run_id) "
                          "ORDER BY r.arm_id, c.item_id", "--json")
    assert result.exit_code == 0, result.output
    import json
    assert json.loads(result.output) == [{"served_model": "fake-model", "calls": 1}] * 2 + [
        {"served_model": None, "calls": None}] * 2
