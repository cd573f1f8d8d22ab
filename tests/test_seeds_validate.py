"""validate = run (seed 001): validate refuses what run would, before calling or importing anything."""

from __future__ import annotations

import json

from runner_support import FAST_RETRIES, questions, write_experiment

SIDE_EFFECT = "open('IMPORTED', 'w').write('the module ran')\n\ndef answer(input):\n    return input\n"


def test_a_missing_target_function_fails_validate_without_importing_its_module(runner_project, cli):
    (runner_project / "v_arm.py").write_text(SIDE_EFFECT)
    write_experiment(runner_project, questions(1), [{"id": "a", "target": "python:v_arm:answr"}])
    result = cli("validate")
    assert result.exit_code == 1
    assert ("experiments/exp.yaml: arm 'a': target 'v_arm:answr': module 'v_arm' has no function 'answr'; "
            "did you mean 'answer'?") in result.output
    assert not (runner_project / "IMPORTED").exists(), "validate ran the user's module"


def test_a_missing_evaluator_or_judge_function_fails_validate_without_importing(runner_project, cli):
    (runner_project / "v_arm2.py").write_text("def answer(input):\n    return input\n")
    (runner_project / "v_checks.py").write_text(SIDE_EFFECT)
    evaluators = [{"type": "python:v_checks:nothere"},
                  {"type": "llm_judge", "judge": {"target": "python:v_checks:grader"}},
                  {"type": "python:no_such_module_anywhere:f"}]
    write_experiment(runner_project, questions(1), [{"id": "a", "target": "python:v_arm2:answer"}], evaluators=evaluators)
    output = cli("validate").output
    assert "evaluators[0] evaluator function 'v_checks:nothere': module 'v_checks' has no function 'nothere'" in output
    assert "evaluators[1] judge.target 'v_checks:grader': module 'v_checks' has no function 'grader'" in output
    assert "evaluators[2] evaluator function 'no_such_module_anywhere:f': cannot find module" in output
    assert not (runner_project / "IMPORTED").exists()


def test_names_defined_in_every_top_level_way_are_found(runner_project, cli):
    (runner_project / "v_ways.py").write_text(
        "import json\nfrom os import path as answer_path\ntry:\n    def in_try(input):\n        return input\n"
        "except ImportError:\n    pass\nif True:\n    class InIf:\n        pass\nassigned = lambda input: input\n"
    )
    arms = [{"id": name, "target": f"python:v_ways:{name}"} for name in ("in_try", "InIf", "assigned", "answer_path")]
    write_experiment(runner_project, questions(1), arms)
    assert cli("validate").exit_code == 0


def test_what_run_refuses_validate_refuses_too(runner_project, cli):
    arms = [{"id": "typo", "target": "openai:m", "settings": {"base_ur": "http://127.0.0.1:9/v1"}},
            {"id": "slow", "target": "none", "settings": {"timeout": -1}}]
    manifest = write_experiment(runner_project, questions(1), arms)
    validated = cli("validate").output
    assert "arm 'typo': settings: unknown key 'base_ur' for target openai" in validated
    assert "arm 'slow': settings.timeout: needs a number of seconds > 0, got -1" in validated
    ran = cli("run", manifest)
    assert ran.exit_code == 1 and not (runner_project / "runs").exists()


def test_an_unset_key_variable_is_a_warning_and_fails_validate_strict(runner_project, cli, monkeypatch):
    monkeypatch.delenv("V_KEY", raising=False)
    monkeypatch.delenv("V_ORG", raising=False)
    arms = [{"id": "gpt", "target": "openai:m", "settings": {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "V_KEY"}},
            {"id": "hdr", "target": "openai:m", "settings": {"base_url": "http://127.0.0.1:9/v1",
                                                              "headers_env": {"X-Org": "V_ORG"}}}]
    manifest = write_experiment(runner_project, questions(1), arms, schedule=FAST_RETRIES)
    relaxed = cli("validate")
    assert relaxed.exit_code == 0, relaxed.output
    assert "warning: experiments/exp.yaml: arm 'gpt': settings.api_key_env: environment variable V_KEY is not set" in relaxed.output
    assert "arm 'hdr': settings.headers_env.X-Org: environment variable V_ORG is not set" in relaxed.output
    assert relaxed.output.splitlines()[-1].startswith("2 warnings (")
    strict = cli("validate", "--strict", "--json")
    assert strict.exit_code == 1
    report = json.loads(strict.output)
    assert report["ok"] is False and report["problems"] == [] and len(report["warnings"]) == 2
    assert cli("run", manifest, "--dry-run").exit_code == 0, "a dry run needs no key"
    assert cli("run", manifest).exit_code == 1, "a run refuses the unset variable"
    monkeypatch.setenv("V_KEY", "k")
    monkeypatch.setenv("V_ORG", "o")
    assert cli("validate", "--strict").exit_code == 0


def test_an_unknown_target_kind_fails_validate(runner_project, cli):
    write_experiment(runner_project, questions(1), [{"id": "a", "target": "opneai:m"}])
    result = cli("validate")
    assert result.exit_code == 1 and "unknown target kind 'opneai'; did you mean 'openai'?" in result.output


def test_a_judge_without_its_key_is_a_warning_for_validate_and_refused_by_run(runner_project, cli, monkeypatch):
    monkeypatch.delenv("V_JUDGE_KEY", raising=False)
    (runner_project / "v_arm3.py").write_text("def answer(input):\n    return input\n")
    judge = {"type": "llm_judge", "name": "grader", "judge": {
        "target": "openai", "params": {"model": "m"},
        "settings": {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "V_JUDGE_KEY"}}}
    manifest = write_experiment(runner_project, questions(1), [{"id": "a", "target": "python:v_arm3:answer"}],
                                evaluators=[judge])
    relaxed = cli("validate")
    assert relaxed.exit_code == 0, relaxed.output
    assert ("warning: experiments/exp.yaml: evaluator 'grader': judge.target: settings.api_key_env: "
            "environment variable V_JUDGE_KEY is not set (target openai)") in relaxed.output
    assert cli("validate", "--strict").exit_code == 1
    refused = cli("run", manifest)
    assert refused.exit_code == 1 and "V_JUDGE_KEY is not set" in refused.output
    assert not (runner_project / "runs").exists()
