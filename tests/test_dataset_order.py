"""``evalsite.cases_in_dataset_order``: a run's cases in dataset order, whatever order the file has."""

from __future__ import annotations

from runner_support import all_runs, write_experiment

import evalsite

IDS = ["zeta", "alpha", "c10", "c9"]  # neither sorted nor natural order


def _run(project, cli):
    rows = [{"id": item_id, "input": item_id, "output": item_id, "expected": item_id} for item_id in IDS]
    manifest = write_experiment(project, rows, [{"id": "recorded", "target": "none"}], repeat=2)
    assert cli("run", manifest).exit_code == 0
    (run,) = all_runs(project)
    path = run.directory / "cases.jsonl"  # as a concurrent or coverage-ordered run may have written it
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[3], lines[0], *reversed(lines[4:]), lines[2], lines[1]]) + "\n")
    return path


def test_the_reader_presents_dataset_order_then_repeats(runner_project, cli):
    _run(runner_project, cli)
    (run,) = evalsite.load_runs(project=runner_project)
    assert [c.key for c in run.cases][:2] == [("alpha", 1), ("zeta", 0)]  # the file's order
    ordered = evalsite.cases_in_dataset_order(run, project=runner_project)
    assert [c.key for c in ordered] == [(item_id, repeat) for item_id in IDS for repeat in (0, 1)]


def test_without_its_dataset_file_items_keep_their_first_appearance(runner_project, cli):
    _run(runner_project, cli)
    (runner_project / "data/exp.jsonl").unlink()
    (run,) = evalsite.load_runs(project=runner_project)
    ordered = evalsite.cases_in_dataset_order(run, project=runner_project)
    firsts = list(dict.fromkeys(c.item_id for c in run.cases))
    assert [c.key for c in ordered] == [(item_id, repeat) for item_id in firsts for repeat in (0, 1)]
