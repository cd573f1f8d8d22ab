"""Reference tier (seed 001): a promotion records where the expected values come from, and validate
checks it still matches."""

from __future__ import annotations

import json

from compare_support import run_arm, write_manifest


def decisions(root) -> list[dict]:
    return [json.loads(line) for line in (root / "runs" / "decisions.jsonl").read_text().splitlines()]


def test_the_lock_declares_the_tier_the_run_and_promotion_record_it_and_validate_checks_it(golden_project, cli):
    frozen = cli("dataset", "freeze", "data/golden.jsonl", "--reference-tier", "gold")
    assert frozen.exit_code == 0, frozen.output
    run = run_arm(cli, golden_project)
    header = json.loads((golden_project / "runs" / run / "run.json").read_text())
    assert header["dataset"]["reference_tier"] == "gold"
    assert cli("promote", run, "--reason", "reviewed", "--allow-dirty").exit_code == 0
    assert decisions(golden_project)[0]["reference_tier"] == "gold"
    assert cli("validate").exit_code == 0

    cli("dataset", "freeze", "data/golden.jsonl", "--reference-tier", "model")
    result = cli("validate")
    assert result.exit_code == 1
    assert (f"runs/decisions.jsonl: line 1: run {run}: reference tier no longer matches the dataset: decided gold, "
            "data/golden.jsonl.lock.json now declares model") in result.output


def test_the_manifest_declares_the_tier_and_a_disagreeing_lock_is_refused(golden_project, cli):
    manifest_path = golden_project / write_manifest(golden_project)
    document = json.loads(manifest_path.read_text())
    document["dataset"]["reference_tier"] = "silver"
    manifest_path.write_text(json.dumps(document))
    assert cli("run", "experiments/golden.json").exit_code in (0, 1)
    (run,) = [p for p in (golden_project / "runs").iterdir() if p.is_dir()]
    assert json.loads((run / "run.json").read_text())["dataset"]["reference_tier"] == "silver"

    cli("dataset", "freeze", "data/golden.jsonl", "--reference-tier", "gold")
    refused = cli("run", "experiments/golden.json")
    assert refused.exit_code == 1
    assert ("dataset.reference_tier is 'silver' but golden.jsonl.lock.json declares 'gold'; declare one tier"
            in refused.output)
    assert "declare one tier" in cli("validate").output


def test_a_run_without_a_declared_tier_records_none_and_promotes_as_before(golden_project, cli):
    run = run_arm(cli, golden_project)
    assert "reference_tier" not in json.loads((golden_project / "runs" / run / "run.json").read_text())["dataset"]
    assert cli("promote", run, "--reason", "r", "--allow-dirty").exit_code == 0
    assert decisions(golden_project)[0]["reference_tier"] is None
    assert cli("validate").exit_code == 0


def test_a_bad_tier_is_a_usage_error(golden_project, cli):
    result = cli("dataset", "freeze", "data/golden.jsonl", "--reference-tier", "platinum")
    assert result.exit_code == 2 and "'platinum' is not one of 'gold', 'silver', 'model'" in result.output
