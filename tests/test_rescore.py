"""evalsite rescore: recorded outputs, current evaluators and ground truth, a new derived run."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from evaluator_support import ROWS, make_project, only_run

from evalsite.experiment.datasets import item_identity
from evalsite.runlog.store import read_run
from evalsite.scoring.case import rescore_case
from evalsite.scoring.evaluators import build_evaluators


def write_rows(root, rows):
    (root / "data" / "support.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def set_evaluators(root, evaluators: str):
    manifest = root / "experiments" / "support.yaml"
    text = manifest.read_text()
    manifest.write_text(text[: text.index("evaluators:")] + f"evaluators: {evaluators}\n")


@pytest.fixture
def recorded(evaluator_project, cli):
    """A finished run of the support project scored by ``exact``; returns it."""
    make_project(evaluator_project, "\n  - type: exact")
    cli("run", "experiments/support.yaml")
    return only_run(evaluator_project)


def runs_by_id(root):
    return {p.name: read_run(p) for p in (root / "runs").iterdir() if p.is_dir()}


def test_rescore_uses_current_expected_values_and_evaluators_without_calling_the_target(evaluator_project, cli, recorded):
    calls = (evaluator_project / "calls.log").read_text()
    before = (recorded.directory / "cases.jsonl").read_bytes()
    write_rows(evaluator_project, [ROWS[0], {**ROWS[1], "expected": "REFUND"}, ROWS[2]])
    set_evaluators(evaluator_project, "\n  - type: exact\n  - type: contains_any\n    value: [HELLO, REFUND]")

    result = cli("rescore", recorded.run_id[:20], "--json")

    assert result.exit_code == 1, result.output  # the failed generation still fails the verdict
    assert (evaluator_project / "calls.log").read_text() == calls
    assert (recorded.directory / "cases.jsonl").read_bytes() == before
    report = json.loads(result.output)
    derived = runs_by_id(evaluator_project)[report["run_id"]]
    assert derived.header.raw["derived_from"] == report["derived_from"] == recorded.run_id
    assert derived.header.arm_id == "shout" and derived.header.config == recorded.header.config
    assert derived.header.dataset.dataset_id != recorded.header.dataset.dataset_id
    assert set(derived.header.evaluators) == {"exact", "contains_any"}
    for name, entry in derived.header.evaluators.items():
        assert derived.header.fingerprint["evaluators"][name].items() >= entry.items()
    assert "rescored" in derived.header.fingerprint
    assert derived.header.fingerprint_hash != recorded.header.fingerprint_hash

    cases = {c["item_id"]: c for c in derived.cases}
    assert cases["crit"]["expected"] == "REFUND" and cases["crit"]["passed"] is True
    assert cases["crit"]["item_sha"] != {c["item_id"]: c for c in recorded.cases}["crit"]["item_sha"]
    assert cases["ok"]["output"] == "HELLO" and cases["ok"]["passed"] is True
    assert cases["fail"]["scores"][1]["detail"] == "generation failed: RuntimeError: model exploded"
    assert derived.footer.status == "completed"
    assert derived.footer.totals.evaluators["contains_any"].n == 3
    assert report["critical_failures"] == [] and report["passed"] is False


def test_rescore_exits_1_on_a_failed_verdict_and_names_critical_failures(evaluator_project, cli, recorded):
    result = cli("rescore", recorded.run_id)
    assert result.exit_code == 1
    assert "cases, mean score 0.333, pass rate 0.333, failed" in result.output
    assert "critical failures: crit" in result.output


def test_allow_failures_accepts_failed_pass_rules_but_not_a_failed_critical_row(evaluator_project, cli, recorded):
    assert cli("rescore", recorded.run_id, "--allow-failures").exit_code == 1  # `crit` fails: still refused
    write_rows(evaluator_project, [row for row in ROWS if row["id"] != "crit"])
    result = cli("rescore", recorded.run_id, "--allow-failures")
    assert result.exit_code == 0, result.output
    assert "failed" in result.stdout and "critical failures" not in result.stdout
    assert cli("rescore", recorded.run_id).exit_code == 1  # without the flag, the pass rule's verdict


def test_rescore_exits_0_when_every_ruled_score_passes(evaluator_project, cli, recorded):
    set_evaluators(evaluator_project, "\n  - type: length\n    max: 100")
    write_rows(evaluator_project, ROWS[:2])
    result = cli("rescore", recorded.run_id)
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip().endswith("2 cases, mean score 1.000, pass rate 1.000, passed")


def test_items_gone_from_the_dataset_are_left_out_with_a_warning(evaluator_project, cli, recorded):
    write_rows(evaluator_project, ROWS[:2])
    result = cli("rescore", recorded.run_id, "--json")
    report = json.loads(result.stdout)
    assert report["left_out"] == ["fail"] and report["cases"] == 2
    assert "warning: item fail is no longer in the dataset; left out" in result.stderr
    assert report["passed"] is False  # crit still fails exact


def test_an_interrupted_run_is_refused(evaluator_project, cli, recorded):
    (recorded.directory / "end.json").unlink()
    result = cli("rescore", recorded.run_id)
    assert result.exit_code == 1
    assert f"{recorded.run_id}: interrupted (no end.json); finish it with 'evalsite run --resume" in result.output
    assert len(runs_by_id(evaluator_project)) == 1


def test_a_manifest_naming_a_dataset_with_other_questions_is_refused(evaluator_project, cli, recorded):
    lines = (evaluator_project / "data" / "support.jsonl").read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    first["input"] = "another question"
    (evaluator_project / "data" / "other.jsonl").write_text(json.dumps(first) + "\n" + "".join(lines[1:]))
    manifest = evaluator_project / "experiments" / "support.yaml"
    manifest.write_text(manifest.read_text().replace("data/support.jsonl", "data/other.jsonl"))
    result = cli("rescore", recorded.run_id)
    assert result.exit_code == 1
    assert "dataset is data/other.jsonl but run" in result.output and "made on data/support.jsonl" in result.output


def test_a_copy_of_the_dataset_under_another_path_is_the_same_questions(evaluator_project, cli, recorded):
    shutil.copy(evaluator_project / "data" / "support.jsonl", evaluator_project / "data" / "other.jsonl")
    manifest = evaluator_project / "experiments" / "support.yaml"
    manifest.write_text(manifest.read_text().replace("data/support.jsonl", "data/other.jsonl"))
    result = cli("rescore", recorded.run_id, "--json")
    assert json.loads(result.stdout)["derived_from"] == recorded.run_id


def test_manifest_option_and_unknown_runs(evaluator_project, cli, recorded):
    alternative = evaluator_project / "experiments" / "alt.yaml"
    alternative.write_text((evaluator_project / "experiments" / "support.yaml").read_text())
    set_evaluators(evaluator_project, "[]")
    result = cli("rescore", recorded.run_id, "--manifest", str(alternative), "--json")
    assert json.loads(result.output)["evaluators"]["exact"]["n"] == 3
    unscored = json.loads(cli("rescore", recorded.run_id, "--json").output)
    assert unscored["unscored"] is True and unscored["passed"] is None
    missing = cli("rescore", "nosuchrun")
    assert missing.exit_code == 1 and "no run matches 'nosuchrun'" in missing.output


def test_rescore_case_scores_recorded_turns_with_the_current_per_turn_expected():
    row = {"id": "t", "turns": ["Hi", "Bye"], "expected": ["Hello", "Goodbye"]}
    (item,) = item_identity([row], "inline")
    recorded_case = {"item_id": "t", "repeat": 0, "output": "Bye!", "error": None,
                     "turn_outputs": ["Hello", "Bye!"], "scores": [], "score": None, "passed": None}
    evaluators = build_evaluators([{"type": "similarity", "scope": "single_turn"}])
    rescored = asyncio.run(rescore_case(recorded_case, item, evaluators))
    assert [(s["turn"], s["passed"]) for s in rescored["scores"]] == [(1, True), (2, False)]
    assert rescored["expected"] == ["Hello", "Goodbye"] and rescored["turn_outputs"] == ["Hello", "Bye!"]


def test_a_run_of_inline_rows_is_rescored_against_the_manifests_rows(evaluator_project, cli):
    make_project(evaluator_project, "\n  - type: exact")
    manifest = evaluator_project / "experiments" / "support.yaml"
    inline = "rows:\n" + "".join(f"  - {json.dumps(row)}\n" for row in ROWS)
    manifest.write_text(manifest.read_text().replace("dataset:\n  path: data/support.jsonl\n", inline))
    cli("run", str(manifest), "--allow-failures")
    source = only_run(evaluator_project)
    report = json.loads(cli("rescore", source.run_id, "--json", "--allow-failures").stdout)
    assert report["derived_from"] == source.run_id
    derived = runs_by_id(evaluator_project)[report["run_id"]]
    assert sorted(case.item_id for case in derived.cases) == sorted(row["id"] for row in ROWS)

    manifest.write_text(manifest.read_text().replace('"input": "hello"', '"input": "goodbye"'))
    refused = cli("rescore", source.run_id)
    assert refused.exit_code == 1
    assert "its inline rows are not the questions run" in refused.output
