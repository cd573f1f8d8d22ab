"""The study pipeline's examples in docs/reference/manifest.md run as written."""

from __future__ import annotations

import json
import re

from example_support import REPO

from evalsite.runlog.store import read_run, run_directories

DOCS = REPO / "docs/reference/manifest.md"


def example(name: str) -> str:
    return re.search(rf"```yaml\n(name: {name}\n.*?)```", DOCS.read_text(), re.S).group(1)


def runs(root):
    return sorted((read_run(d) for d in run_directories(root / "runs")), key=lambda r: r.header.raw["started_at"])


def test_the_cache_example_replays_its_second_run(example_project, cli):
    (example_project / "experiments/cached-study.yaml").write_text(example("cached-study"))
    assert cli("run", "experiments/cached-study.yaml").exit_code == 0
    assert cli("run", "experiments/cached-study.yaml").exit_code == 0
    first, second = runs(example_project)
    assert [c["cache"] for c in first.cases] == ["recorded"]
    assert [c["cache"] for c in second.cases] == ["hit"]
    assert json.loads(cli("cache", "stats", "--json").output)["entries"] == 1


def test_the_pipeline_example_writes_every_declared_file(example_project, cli):
    (example_project / "experiments/arithmetic-study.yaml").write_text(example("arithmetic-study"))
    result = cli("run", "experiments/arithmetic-study.yaml", "--allow-failures")
    assert result.exit_code == 0, result.output
    for run in runs(example_project):
        assert len(list(run.directory.glob("items/*/repeat-*/trace.jsonl"))) == 20
        assert len(list(run.directory.glob("items/*/df.csv"))) == 10
        assert (run.directory / "df.csv").is_file()
    (summary,) = example_project.glob("results/arithmetic-study/*/ci_summary.csv")
    header, *rows = summary.read_text().splitlines()
    assert header == "arm,metric,mean,ci_low,ci_high,items" and len(rows) == 2


def test_the_checkpoint_example_needs_its_file_and_doubles_the_configs(example_project, cli):
    (example_project / "experiments/arithmetic-checkpoints.yaml").write_text(example("arithmetic-checkpoints"))
    refused = cli("run", "experiments/arithmetic-checkpoints.yaml", "--dry-run")
    assert refused.exit_code == 1 and "checkpoints[1].path: checkpoints/warm.json does not exist" in refused.output
    (example_project / "checkpoints").mkdir()
    (example_project / "checkpoints/warm.json").write_text("{}")
    assert cli("run", "experiments/arithmetic-checkpoints.yaml", "--allow-failures").exit_code == 0
    cases = [(r.header.raw["config_id"], c["checkpoint"]) for r in runs(example_project) for c in r.cases]
    assert len(cases) == 10 and len({config for config, _ in cases}) == 2
    assert sorted({checkpoint for _, checkpoint in cases}) == ["none", "warm"]


def test_the_model_slot_example_pins_the_slot_model(example_project, cli):
    (example_project / "experiments/slotted.yaml").write_text(example("slotted"))
    assert cli("run", "experiments/slotted.yaml").exit_code == 0
    configs = {r.header.raw["arm_id"]: r.header.raw["config"] for r in runs(example_project)}
    assert configs["default"]["params"] == {"model": "gpt-4o"} and configs["default"]["model_slot"] == "main"
    assert configs["pinned"]["params"] == {"model": "gpt-4o-2024-08-06"} and "model_slot" not in configs["pinned"]


def test_the_mock_example_runs_without_a_key_or_a_call(example_project, cli, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (example_project / "experiments/mocked-study.yaml").write_text(example("mocked-study"))
    result = cli("run", "experiments/mocked-study.yaml")
    assert result.exit_code == 0, result.output  # the mock answers "4": the exact evaluator passes
    (run,) = [r for r in runs(example_project) if r.header.experiment == "mocked-study"]
    assert [(c["output"], c["emulated"], c["attempts"]) for c in run.cases] == [("4", True, 0)]
    assert "emulated: every answer came from emulation.infra.llm: mock" in cli("show", run.run_id).output


def test_the_overlay_example_patches_every_arm_it_selects(example_project, cli):
    overlay = re.search(r"`experiments/cold.yaml`:\n\n```yaml\n(.*?)```", DOCS.read_text(), re.S).group(1)
    (example_project / "experiments/cold.yaml").write_text(overlay)
    (example_project / "experiments/overlaid-study.yaml").write_text(example("overlaid-study"))
    assert cli("run", "experiments/overlaid-study.yaml").exit_code == 0
    resolved = {r.header.arm_id: r.header.config for r in runs(example_project) if r.header.experiment == "overlaid-study"}
    assert {arm: config["params"] for arm, config in resolved.items()} == {"gpt-small": {"temperature": 0},
                                                                          "local": {"temperature": 0}}
    assert resolved["gpt-small"]["settings"] == {"timeout": 30} and resolved["local"].get("settings", {}) == {}
