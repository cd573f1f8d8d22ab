"""Prompt versions (seed 000): prompt: {name, version} names a template in prompts/<name>.yaml."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from runner_support import only_run

from evalsite.runlog.hashing import short_hash

DOC = Path(__file__).resolve().parent.parent / "docs/reference/manifest.md"
PROMPTS = re.search(r'```yaml title="prompts/support.yaml"\n(.*?)```', DOC.read_text(), re.S).group(1)


def write(project, prompt, name="pv") -> str:
    (project / "prompts").mkdir(exist_ok=True)
    (project / "prompts" / "support.yaml").write_text(PROMPTS)
    (project / "pv_arm.py").write_text("import json\n\ndef echo(input):\n    return json.dumps(input)\n")
    document = {"name": name, "rows": [{"id": "r1", "input": "where is my order?"}], "prompt": prompt,
                "arms": [{"id": "a", "target": "python:pv_arm:echo"}], "evaluators": []}
    (project / "experiments" / f"{name}.yaml").write_text(yaml.safe_dump(document))
    return f"experiments/{name}.yaml"


def test_a_pinned_version_renders_that_template_and_is_recorded(runner_project, cli):
    result = cli("run", write(runner_project, {"name": "support", "version": 1}))
    assert result.exit_code == 0, result.output
    run = only_run(runner_project)
    assert run.cases[0]["input"] == "Q: where is my order?"
    assert run.header.raw["prompt"] == {"name": "support", "submitted": 1, "version": 1,
                                    "hash": short_hash("Q: {{ input }}"), "path": "prompts/support.yaml"}
    assert run.header.raw["fingerprint"]["prompt_hash"] == short_hash("Q: {{ input }}")


def test_latest_resolves_at_start_and_records_submitted_and_resolved(runner_project, cli):
    assert cli("run", write(runner_project, {"name": "support"})).exit_code == 0
    run = only_run(runner_project)
    assert run.cases[0]["input"] == [{"role": "system", "content": "Be brief."},
                                     {"role": "user", "content": "Question: where is my order?"}]
    assert (run.header.raw["prompt"]["submitted"], run.header.raw["prompt"]["version"]) == ("latest", 2)


@pytest.mark.parametrize("prompt, message", [
    ({"name": "support", "version": 7}, "prompt.version: support.yaml has no version 7 (versions: 1, 2)"),
    ({"name": "billing"}, "prompt.name: no file prompts/billing.yaml in the project"),
    ({"name": "support", "version": 1, "extra": 1}, "prompt"),
])
def test_bad_references_fail_validate_and_run_naming_the_key(runner_project, cli, prompt, message):
    manifest = write(runner_project, prompt)
    result = cli("run", manifest)
    assert result.exit_code == 1 and message in result.output
    assert message in cli("validate").output


def test_a_bad_template_in_the_file_names_its_version(runner_project, cli):
    manifest = write(runner_project, {"name": "support", "version": 1})
    (runner_project / "prompts" / "support.yaml").write_text('versions:\n  1: "{{ input "\n')
    result = cli("run", manifest)
    assert result.exit_code == 1 and "prompts/support.yaml: versions.1: invalid template on line 1" in result.output
