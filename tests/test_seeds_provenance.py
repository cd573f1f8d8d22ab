"""Provenance per case (seed 003): the model that ran, the ids of its calls, one thread id per replay."""

from __future__ import annotations

from tests.runner_project import only_run, openai_arm, project, questions, server, write_experiment  # noqa: F401


def test_openai_colon_model_is_the_fingerprints_target_model(project, server, cli):
    manifest = write_experiment(project, questions(1), [openai_arm(server)])
    assert cli("run", manifest).exit_code == 0
    assert only_run(project).header["fingerprint"]["target"] == {"kind": "openai", "model": "fake-model"}


def test_an_arm_naming_its_model_in_params_runs_it(project, server, cli):
    arm = {"id": "gpt", "target": "openai", "params": {"model": "from-params"}, "settings": {"base_url": server.url + "/v1"}}
    manifest = write_experiment(project, questions(1), [arm])
    result = cli("run", manifest)
    assert result.exit_code == 0, result.output
    assert server.calls[0].body["model"] == "from-params"
    assert only_run(project).header["fingerprint"]["target"] == {"kind": "openai", "model": "from-params"}
