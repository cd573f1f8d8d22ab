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
    for command in ("evalsite validate", "evalsite run experiments/example.yaml", "--max-cost 1.00", "--allow-failures",
                    "evalsite compare --fail-on regression", "evalsite check-claims", "evalsite build"):
        assert command in commands or command.replace(" experiments/example.yaml", "") in commands, command
    uses = [step.get("uses", "") for step in steps] + [
        step.get("uses", "") for step in workflow["jobs"]["deploy"]["steps"]]
    assert any(u.startswith("actions/upload-pages-artifact") for u in uses)
    assert any(u.startswith("actions/deploy-pages") for u in uses)
    assert any(u.startswith("actions/upload-artifact") for u in uses)
    assert workflow["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
