"""Secrets: secret-looking names are refused before anything runs and nothing of them reaches the
disk; a key read from the environment is scrubbed from every case, however it is echoed
(issue 15, defect 6)."""

from __future__ import annotations

import os

import pytest
from runner_support import only_run, openai_arm, questions, write_experiment

from evalsite.runlog.secrets import looks_secret, scrub, secret_pattern

VALUE = "s3cr3t-VALUE-0123456789abcdef"


def files_holding(root, text: str, skip: str) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and not str(p.relative_to(root)).startswith(skip) and text in p.read_text(errors="replace")]


@pytest.mark.parametrize("arm_extra, where", [
    ({"params": {"openai_api_key": VALUE}}, "arms[0].params.openai_api_key"),
    ({"params": {"nested": {"client_secret": VALUE}}}, "arms[0].params.nested.client_secret"),
    ({"settings": {"headers": {"X-Auth-Token": VALUE}}}, "arms[0].settings.headers.X-Auth-Token"),
    ({"settings": {"auth_token": VALUE}}, "arms[0].settings.auth_token"),
    ({"params": {"apiKey": VALUE}}, "arms[0].params.apiKey"),
])
def test_a_param_named_like_a_secret_is_refused_and_nothing_of_it_is_on_disk(runner_project, server, cli, arm_extra, where):
    arm = openai_arm(server, **{key: {**openai_arm(server).get(key, {}), **value} for key, value in arm_extra.items()})
    manifest = write_experiment(runner_project, questions(2), [arm])
    result = cli("run", manifest, "--build")
    assert result.exit_code == 1
    assert f"{where}: looks like a secret written into the manifest" in result.output
    assert "Traceback" not in result.output
    assert server.calls == [] and not (runner_project / "runs").exists() and not (runner_project / "site").exists()
    assert files_holding(runner_project, VALUE, skip="experiments") == []


def test_an_evaluator_or_sweep_variable_named_like_a_secret_is_refused(runner_project, server, cli):
    manifest = write_experiment(runner_project, questions(1), [openai_arm(server)],
                                evaluators=[{"type": "exact", "password": VALUE}],
                                sweep={"variables": {"session_token": [VALUE]}})
    result = cli("validate")
    assert result.exit_code == 1, result.output
    assert "evaluators[0].password: looks like a secret" in result.output
    assert "sweep.variables.session_token: looks like a secret" in result.output
    assert manifest and server.calls == []


def test_names_about_secrets_are_not_secrets():
    for name in ("api_key_env", "headers_env", "max_tokens", "pad_token_id", "temperature", "keyword", "monkey",
                 "secret_name", "key_file", "token_budget"):
        assert not looks_secret(name), name
    for name in ("openai_api_key", "client_secret", "auth_token", "X-Api-Key", "Authorization", "Cookie",
                 "apiKey", "password", "key", "bearer", "x-auth"):
        assert looks_secret(name), name


def test_scrub_hides_every_8_character_piece_of_a_secret_in_any_case():
    pattern = secret_pattern([VALUE])
    text = f"a {VALUE[:-1]} b {VALUE.upper()} c {VALUE[5:15]} d {VALUE[:7]} e"
    assert scrub(text, pattern) == f"a *** b *** c *** d {VALUE[:7]} e"
    assert scrub("nothing here", pattern) == "nothing here" and secret_pattern(["", None or ""]) is None


def test_a_key_echoed_by_the_provider_is_scrubbed_from_every_case(runner_project, server, cli, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", VALUE)
    server.script = {"question 0": [{"reply": f"key {VALUE[:-1]} and {VALUE.upper()}"}],
                     "question 1": [{"status": 401, "message": f"bad key {VALUE[1:].lower()}"}]}
    arm = openai_arm(server, settings={"api_key_env": "FAKE_KEY"})
    cli("run", write_experiment(runner_project, questions(2), [arm]), "--build")
    assert server.calls[0].headers["authorization"] == f"Bearer {VALUE}"
    by_item = {case["item_id"]: case for case in only_run(runner_project).cases}
    assert by_item["q0"]["output"] == "key *** and ***"
    assert "***" in by_item["q1"]["error"]
    for piece in (VALUE[:-1], VALUE.upper(), VALUE[1:].lower(), VALUE[4:12]):
        assert files_holding(runner_project, piece, skip="none") == []
    assert os.environ["FAKE_KEY"] == VALUE
