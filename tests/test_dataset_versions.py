"""Dataset versions (issue 26, item 10): ``run`` refuses a dataset that no longer matches its lock,
as the guide says, with one line naming the change and the command that freezes it again."""

from __future__ import annotations

import json

from runner_support import all_runs, questions, write_experiment


def edit_expected(path, item_id: str, expected: str) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**row, "expected": expected} if row["id"] == item_id else row) + "\n"
                            for row in rows))


def test_run_refuses_a_dataset_that_no_longer_matches_its_lock(runner_project, cli):
    manifest = write_experiment(runner_project, questions(4), [{"id": "echo", "target": "none"}])
    assert cli("dataset", "freeze", "data/exp.jsonl").exit_code == 0
    edit_expected(runner_project / "data" / "exp.jsonl", "q2", "something else")
    for args in ((manifest,), (manifest, "--dry-run")):
        refused = cli("run", *args)
        assert refused.exit_code == 1
        assert refused.stderr == (
            "Error: data/exp.jsonl: no longer matches its lock exp.jsonl.lock.json (item 'q2' changed: expected only "
            "(the ground truth was edited)); refusing to run on a changed dataset. If the change is intended, freeze "
            "it again: evalsite dataset freeze data/exp.jsonl\n")
    assert all_runs(runner_project) == []  # nothing ran, nothing was spent
    validated = cli("validate")
    assert validated.exit_code == 1 and "item 'q2' changed" in validated.output
    assert cli("dataset", "freeze", "data/exp.jsonl").exit_code == 0  # the command the error names
    assert cli("run", manifest).exit_code in (0, 1)
    assert len(all_runs(runner_project)) == 1


def test_a_dataset_without_a_lock_or_with_only_reformatted_bytes_runs(runner_project, cli):
    manifest = write_experiment(runner_project, questions(3), [{"id": "echo", "target": "none"}])
    assert cli("run", manifest, "--dry-run").exit_code == 0
    assert cli("dataset", "freeze", "data/exp.jsonl").exit_code == 0
    path = runner_project / "data" / "exp.jsonl"
    path.write_text("".join(json.dumps(json.loads(line), indent=None, separators=(", ", " : ")) + "\n"
                            for line in path.read_text().splitlines()))
    assert cli("run", manifest, "--dry-run").exit_code == 0
