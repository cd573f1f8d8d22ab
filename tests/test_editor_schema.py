"""The schema editors get (``evalsite schema``, ``init``'s ``.evalsite/manifest.schema.json``)
enumerates the evaluator types and target kinds, so a typo is flagged; every manifest the
repository and its docs show still passes it."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess

import pytest
import yaml
from example_support import REPO
from jsonschema import Draft202012Validator

from evalsite.calls.targets.base import TARGETS, register_target
from evalsite.execute.editor_schema import editor_schema, editor_schema_text
from evalsite.experiment.schema_check import schema_problems
from evalsite.scoring.evaluators import Evaluator, register_evaluator
from evalsite.scoring.evaluators.base import EVALUATORS

YAML_BLOCK = re.compile(r"^```yaml(?: title=\"([^\"]*)\")?\n(.*?)^```$", re.MULTILINE | re.DOTALL)
MANIFEST = {"name": "m", "dataset": {"path": "data/d.jsonl"}, "arms": [{"id": "a", "target": "none"}],
            "evaluators": [{"type": "exact"}]}


def errors(schema: dict, manifest: dict) -> list[str]:
    return [error.message for error in Draft202012Validator(schema).iter_errors(manifest)]


def with_(target: str = "none", evaluator: str = "exact") -> dict:
    return {**MANIFEST, "arms": [{"id": "a", "target": target}], "evaluators": [{"type": evaluator}]}


def test_typos_in_an_evaluator_type_or_a_target_kind_are_flagged():
    schema = editor_schema()
    Draft202012Validator.check_schema(schema)
    for typo in (with_(evaluator="exactt"), with_(evaluator="pyhton:checks:f"), with_(evaluator="python"),
                 with_(evaluator="python:"), with_(evaluator="exact:x"), with_(target="pyhton:arms:answer"),
                 with_(target="python:"), with_(target="opena"), with_(target="nonee:x")):
        assert errors(schema, typo), typo
    for good in (with_(), with_(evaluator="python:checks:f"), with_(evaluator="llm_judge"),
                 with_(target="python:arms.qa:answer"), with_(target="openai"), with_(target="openai:gpt-4o"),
                 with_(target="command:python3 tools/reverse.py"), with_(target="anthropic:claude-3-5-haiku-latest")):
        assert errors(schema, good) == [], good
    # validation keeps its open schema: a name is the registries' to judge (plugins load on demand, typos get did-you-mean)
    assert schema_problems(with_(target="pyhton:arms:answer", evaluator="exactt")) == []


def test_the_enumerated_names_are_the_registries_an_installed_plugins_included():
    with TARGETS.isolated(), EVALUATORS.isolated():
        register_target("shout")(lambda rest, settings, root: None)

        @register_evaluator("shouted")
        class Shouted(Evaluator):
            pass

        @register_evaluator("graded", takes_reference=True)
        class Graded(Evaluator):
            pass

        schema = editor_schema()
        assert errors(schema, with_(target="shout", evaluator="shouted")) == []
        assert errors(schema, with_(target="shout:!!", evaluator="graded:rubrics/a.md")) == []
        assert errors(schema, with_(evaluator="graded"))
        kinds = schema["$defs"]["arm"]["properties"]["target"]["anyOf"][0]["enum"]
        types = schema["properties"]["evaluators"]["items"]["properties"]["type"]["anyOf"][0]["enum"]
        assert kinds == TARGETS.names() and "shout" in kinds
        assert types == [k for k in EVALUATORS.names() if k not in ("python", "graded")] and "shouted" in types
    assert errors(editor_schema(), with_(target="shout")), "a kind gone from the registry leaves the schema"


def test_every_manifest_of_the_repository_passes_the_editor_schema():
    schema = editor_schema()
    manifests = [REPO / "experiments/arithmetic.yaml", REPO / "examples/humaneval/experiments/humaneval.yaml",
                 REPO / "evalsite/experiment/project_template/experiments/example.yaml"]
    for path in manifests:
        assert errors(schema, yaml.safe_load(path.read_text())) == [], path


def doc_manifests() -> list[tuple[str, dict]]:
    """Every YAML block of docs/ that is a manifest or a part of one (not ci.md's CI files, an
    overlay file with its own ``kind``, or a file the title places outside experiments/)."""
    found = []
    for page in sorted((REPO / "docs").rglob("*.md")):
        for title, block in YAML_BLOCK.findall(page.read_text()) if page.name != "ci.md" else ():
            document = yaml.safe_load(block)
            if isinstance(document, dict) and "kind" not in document and (not title or title.startswith("experiments/")):
                found.append((str(page.relative_to(REPO)), document))
    return found


def test_every_manifest_the_docs_show_passes_the_editor_schema():
    parts = copy.deepcopy(editor_schema())
    parts.pop("required")  # a block showing `evaluators:` alone is part of a manifest
    shown = doc_manifests()
    assert len(shown) >= 30 and {page for page, _ in shown} >= {"docs/reference/evaluators.md", "docs/reference/manifest.md",
                                                                 "docs/reference/targets.md", "docs/reference/plugins.md"}
    with TARGETS.isolated(), EVALUATORS.isolated():  # plugins.md's package, installed
        register_target("shout")(lambda rest, settings, root: None)
        register_evaluator("shouted")(type("Shouted", (Evaluator,), {}))
        schema = copy.deepcopy(editor_schema())
        schema.pop("required")
        for page, document in shown:
            assert errors(schema, document) == [], (page, document)
    plugin_page = [document for page, document in shown if page == "docs/reference/plugins.md"]
    assert plugin_page and all(errors(parts, document) for document in plugin_page)  # without the plugin: flagged


def test_the_schema_command_and_init_give_the_editor_schema(cli, tmp_path):
    printed = cli("schema")
    assert printed.exit_code == 0 and printed.stdout == editor_schema_text()
    assert cli("init", str(tmp_path / "p")).exit_code == 0
    assert (tmp_path / "p/.evalsite/manifest.schema.json").read_text() == editor_schema_text()


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_an_editors_javascript_reads_every_pattern_as_python_does():
    """yaml-language-server compiles a pattern with JavaScript's ``u`` flag, stricter than Python's re."""
    with TARGETS.isolated():
        register_target("my-kind.v2")(lambda rest, settings, root: None)
        schema = editor_schema()
    patterns = [option["pattern"] for option in schema["$defs"]["arm"]["properties"]["target"]["anyOf"] if "pattern" in option]
    samples = ["my-kind.v2:x", "myXkind.v2:x", "python:a:b", "pyhton:a:b", "none:"]
    script = ("const [patterns, samples] = JSON.parse(process.argv[1]);"
              "console.log(JSON.stringify(patterns.map(p => samples.map(s => new RegExp(p, 'u').test(s)))));")
    done = subprocess.run(["node", "-e", script, json.dumps([patterns, samples])], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [[re.search(p, s) is not None for s in samples] for p in patterns] == [[True, False, True, False, False]]
