"""``evalsite init``: a scaffolded project runs, its report holds, its workflow is valid."""

from __future__ import annotations

import yaml


def test_init_writes_a_project_that_runs_and_whose_claims_hold(tmp_path, cli, monkeypatch):
    project = tmp_path / "new"
    result = cli("init", str(project))
    assert result.exit_code == 0, result.output
    for path in ("evalsite.toml", ".gitignore", "data/example.jsonl", "experiments/example.yaml",
                 "example_targets.py", "reports/example.md", ".github/workflows/evalsite.yml"):
        assert (project / path).is_file(), path
    monkeypatch.chdir(project)
    assert cli("run", "experiments/example.yaml", "--allow-failures").exit_code == 0
    checked = cli("check-claims")
    assert checked.exit_code == 0, checked.output


def test_init_refuses_to_overwrite_naming_the_file(tmp_path, cli):
    (tmp_path / "evalsite.toml").write_text("")
    result = cli("init", str(tmp_path))
    assert result.exit_code == 1
    assert "evalsite.toml already exists" in result.output


def test_the_workflow_is_valid_yaml_with_the_expected_jobs(tmp_path, cli):
    cli("init", str(tmp_path))
    workflow = yaml.safe_load((tmp_path / ".github/workflows/evalsite.yml").read_text())
    assert set(workflow["jobs"]) == {"evaluate", "deploy"}
    steps = workflow["jobs"]["evaluate"]["steps"]
    commands = " ".join(step.get("run", "") for step in steps)
    for command in ("evalsite validate", "evalsite ci experiments", '--max-cost "$max_cost"', "--allow-failures",
                    "evalsite compare --fail-on regression", "evalsite check-claims", "evalsite build"):
        assert command in commands or command.replace(" experiments/example.yaml", "") in commands, command
    uses = [step.get("uses", "") for step in steps] + [
        step.get("uses", "") for step in workflow["jobs"]["deploy"]["steps"]]
    assert any(u.startswith("actions/upload-pages-artifact") for u in uses)
    assert any(u.startswith("actions/deploy-pages") for u in uses)
    assert any(u.startswith("actions/upload-artifact") for u in uses)
    assert workflow["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}


def test_the_workflow_installs_the_version_that_scaffolded_it_or_the_given_source(tmp_path, cli):
    from evalsite import __version__

    cli("init", str(tmp_path / "pinned"))
    workflow = (tmp_path / "pinned/.github/workflows/evalsite.yml").read_text()
    assert f'pip install "evalsite=={__version__}"' in workflow
    cli("init", str(tmp_path / "local"), "--install", "/opt/evalsite")
    assert 'pip install "/opt/evalsite"' in (tmp_path / "local/.github/workflows/evalsite.yml").read_text()
    refused = cli("init", str(tmp_path / "bad"), "--install", 'x"; rm -rf /')
    assert refused.exit_code == 1 and "--install" in refused.output


def test_the_example_manifest_names_the_schema_copy_for_editors(tmp_path, cli):
    import json

    from jsonschema import Draft202012Validator

    cli("init", str(tmp_path))
    first = (tmp_path / "experiments/example.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=../.evalsite/manifest.schema.json"
    schema = json.loads((tmp_path / "experiments" / first.split("=", 1)[1]).read_text())
    Draft202012Validator.check_schema(schema)
    manifest = yaml.safe_load((tmp_path / "experiments/example.yaml").read_text())
    assert not list(Draft202012Validator(schema).iter_errors(manifest))


def test_schema_prints_and_writes_the_manifest_schema(tmp_path, cli):
    import json

    from jsonschema import Draft202012Validator

    printed = cli("schema")
    assert printed.exit_code == 0
    Draft202012Validator.check_schema(json.loads(printed.stdout))
    assert cli("schema", "--write", str(tmp_path / "s.json")).exit_code == 0
    assert json.loads((tmp_path / "s.json").read_text()) == json.loads(printed.stdout)


def test_the_workflow_posts_one_sticky_summary_comment_on_pull_requests(tmp_path, cli):
    cli("init", str(tmp_path))
    workflow = yaml.safe_load((tmp_path / ".github/workflows/evalsite.yml").read_text())
    steps = workflow["jobs"]["evaluate"]["steps"]
    (writer,) = [s["run"] for s in steps if '"$RUNNER_TEMP/summary.md"' in s.get("run", "")]
    assert "evalsite ci summary" in writer  # tests/test_ci_summary.py runs the workflow's steps
    (comment,) = [s for s in steps if s.get("uses", "").startswith("actions/github-script")]
    assert "github.event_name == 'pull_request'" in comment["if"]
    script = comment["with"]["script"]
    assert "<!-- evalsite-summary -->" in script and "updateComment" in script and "createComment" in script
    assert workflow["permissions"]["pull-requests"] == "write"


def test_git_keeps_the_manifest_schema_and_ignores_the_rest_of_dot_evalsite(tmp_path, cli):
    import shutil
    import subprocess

    import pytest

    if shutil.which("git") is None:
        pytest.skip("needs git")
    cli("init", str(tmp_path))
    (tmp_path / ".evalsite" / "cache").mkdir(parents=True)
    (tmp_path / ".evalsite" / "cache" / "responses.jsonl").write_text("{}\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    def ignored(path: str) -> bool:
        return subprocess.run(["git", "-C", str(tmp_path), "check-ignore", "-q", path]).returncode == 0
    assert (tmp_path / ".evalsite" / "manifest.schema.json").is_file()
    assert not ignored(".evalsite/manifest.schema.json")  # the docs say to commit it; the modeline names it
    assert ignored(".evalsite/cache/responses.jsonl") and ignored("site/index.html")
