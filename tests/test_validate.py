"""`evalsite validate`: every manifest, dataset, lock and run, every problem listed."""

from __future__ import annotations

import json

from evalsite.experiment.locks import freeze_dataset
from evalsite.project import find_project
from evalsite.validate import check_datasets, check_locks, check_manifests, check_runs, validate_project


def test_the_example_project_is_valid(example_project, cli):
    result = cli("validate")
    assert result.exit_code == 0, result.output
    assert result.output == "ok: 1 manifest, 1 dataset, 1 lock, 0 runs checked\n"
    cli("run", "experiments/arithmetic.yaml", "--repeat", "1")
    report = json.loads(cli("validate", "--json").output)
    assert report == {"ok": True, "problems": [], "warnings": [],
                      "checked": {"manifests": 1, "datasets": 1, "locks": 1, "runs": 3}}


def test_every_problem_in_the_project_is_listed(example_project, cli):
    data = example_project / "data"
    (data / "broken.jsonl").write_text('{"input": 1}\n{"id": "a", "input": "x"}\n{"id": "a", "input": "y"}\n')
    (data / "gone.jsonl.lock.json").write_text("{}")
    manifest = example_project / "experiments/arithmetic.yaml"
    manifest.write_text(manifest.read_text().replace("type: exact", "type: exat"))
    (example_project / "experiments/second.yaml").write_text("name: second\nrows: [{input: a}]\narms: [{id: a, target: none}]\nrepet: 2\n")
    (example_project / "runs/not-a-run").mkdir(parents=True)  # no run.json: a crash leftover, ignored

    result = cli("validate")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith("experiments/arithmetic.yaml: evaluators[0].type: unknown evaluator 'exat'; did you mean 'exact'? (known: ")
    assert lines[1:] == [
        "experiments/second.yaml: repet: unknown key; did you mean 'repeat'? (allowed: $schema, arms, artifacts, checkpoints, concurrency, "
        "dataset, description, design, emulation, evaluators, hooks, limits, models, name, output_schema, overlays, prompt, repeat, rows, schedule, stop_when, sweep)",
        "data/broken.jsonl: line 1: 'input' must be a string or a list of messages, got a number",
        "data/broken.jsonl: duplicate item id 'a' on line 2 and line 3",
        "data/gone.jsonl.lock.json: locks data/gone.jsonl, which does not exist",
        "5 problems (2 manifests, 2 datasets, 2 locks, 0 runs checked)",
    ]
    report = json.loads(cli("validate", "--json").output)
    assert report["ok"] is False and len(report["problems"]) == 5


def test_manifest_checks_build_the_plan(example_project):
    manifest = example_project / "experiments/arithmetic.yaml"
    manifest.write_text(manifest.read_text().replace("data/arithmetic.jsonl", "data/missing.jsonl"))
    assert check_manifests(find_project()) == [
        "experiments/arithmetic.yaml: data/missing.jsonl: dataset file not found"
    ]


def test_lock_checks_name_the_changed_items(example_project):
    path = example_project / "data/arithmetic.jsonl"
    freeze_dataset(path)
    path.write_text(path.read_text().replace('"expected": "480"', '"expected": "481"'))
    assert check_locks(find_project()) == [
        "data/arithmetic.jsonl: differs from data/arithmetic.jsonl.lock.json: "
        "item 'q000' changed: expected only (the ground truth was edited)"
    ]


def test_dataset_checks_skip_locks_and_report_unreadable_files(example_project):
    freeze_dataset(example_project / "data/arithmetic.jsonl")
    (example_project / "data/notes.csv").write_text("a,b\n1,2,3\n")
    assert check_datasets(find_project()) == ["data/notes.csv: line 2 has 3 fields but the header has 2"]


def test_run_checks(example_project, cli):
    cli("run", "experiments/arithmetic.yaml", "--repeat", "1", "--arm", "careful")
    (run,) = (example_project / "runs").iterdir()
    cases = run / "cases.jsonl"
    lines = cases.read_text().splitlines()
    cases.write_text("\n".join([lines[0], "{torn", *lines[1:]]) + "\n")
    header = json.loads((run / "run.json").read_text())
    newer = example_project / "runs/20990101T000000Z-future-0000"
    newer.mkdir()
    (newer / "run.json").write_text(json.dumps({**header, "run_id": newer.name, "format_version": 2}))
    moved = example_project / "runs/20000101T000000Z-moved-0000"
    moved.mkdir()
    (moved / "run.json").write_text(json.dumps(header))
    assert check_runs(find_project()) == [
        f"runs/{moved.name}/run.json: names run_id {run.name!r}, not its folder's name",
        f"runs/{run.name}/cases.jsonl: line 2 is not valid JSON; skipped",
        f"runs/{newer.name}/run.json: run format_version 2 is newer than this evalsite reads (1); upgrade evalsite",
    ]


def test_checks_are_a_list_a_new_check_joins(example_project):
    extra = [lambda project: ["runs/decisions.jsonl: line 1: an example"], lambda project: ["runs/decisions.jsonl: line 1: an example"]]
    assert validate_project(find_project(), checks=extra) == ["runs/decisions.jsonl: line 1: an example"]


def test_site_settings_are_checked_with_every_problem_named(example_project, cli):
    (example_project / "evalsite.toml").write_text("[site]\nredact = 'yes'\ncases_per_pag = 10\n")
    result = cli("validate")
    assert result.exit_code == 1
    first = result.output.splitlines()[0]
    assert first.startswith("evalsite.toml [site]: ") and "redact" in first and "cases_per_pag" in first
