"""Dataset versions (issue 26, item 10): ``run`` refuses a dataset that no longer matches its lock,
as the guide says, with one line naming the change and the command that freezes it again."""

from __future__ import annotations

import json
import re

from compare_support import edit_row, run_arm
from runner_support import all_runs, questions, write_experiment

from evalsite.site import paths


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


def test_compare_says_the_dataset_changed_and_why_the_baseline_mean_differs(golden_project, cli):
    """After one expected value is edited, compare said "same ground truth" and showed the baseline's
    mean re-scored against the new ground truth (11/12) beside a run page showing 12/12, unexplained."""
    baseline = run_arm(cli, golden_project)
    edit_row(golden_project, "g05", expected="A5 (corrected)")
    current = run_arm(cli, golden_project)
    cases = [json.loads(line) for line in (golden_project / "runs" / baseline / "cases.jsonl").read_text().splitlines()]
    own_mean = sum(c["score"] for c in cases) / len(cases)
    assert own_mean == 1.0  # the baseline against the ground truth it ran with
    report = cli.json("compare", current, "--baseline", baseline)
    summary = report["regression"]["summary"]
    assert summary["baseline_mean"] == 11 / 12 and summary["rescored"] == 1
    before = json.loads((golden_project / "runs" / baseline / "run.json").read_text())["dataset"]["dataset_id"]
    after = json.loads((golden_project / "runs" / current / "run.json").read_text())["dataset"]["dataset_id"]
    note = report["dataset_note"]
    assert note == (
        f"The dataset changed between the runs ({before} → {after}): same questions, 1 item with edited expected "
        "values. The baseline's recorded outputs of 1 item were re-scored against the current expected values, so its "
        "mean here (0.917) is against the new ground truth, not the one on its run page (scored against the ground "
        "truth it ran with).")
    assert note in cli("compare", current, "--baseline", baseline).stdout
    assert cli("build").exit_code == 0
    page = (golden_project / "site" / "compare" / f"{current}--{baseline}.html").read_text()
    assert "same ground truth" not in page and "on the same dataset" not in page
    assert "re-scored against the current expected values" in page


def test_one_dataset_version_has_no_note(golden_project, cli):
    baseline = run_arm(cli, golden_project)
    current = run_arm(cli, golden_project)
    assert cli.json("compare", current, "--baseline", baseline)["dataset_note"] is None


def cards(project) -> list[str]:
    html = (project / "site" / "index.html").read_text()
    return [" ".join(re.sub(r"<[^>]+>", " ", card).split()) for card in re.findall(r'<article class="verdict-card">(.*?)</article>', html, re.S)]


def test_the_home_page_leads_only_with_the_current_version_of_a_file(golden_project, cli):
    """After one expected value was edited the home page showed two "leading" cards for one file."""
    first = run_arm(cli, golden_project)
    edit_row(golden_project, "g05", expected="A5 (corrected)")
    second = run_arm(cli, golden_project)
    ids = [json.loads((golden_project / "runs" / run / "run.json").read_text())["dataset"]["dataset_id"]
           for run in (first, second)]
    assert ids[0] != ids[1]
    assert cli("build").exit_code == 0
    current, older = cards(golden_project)
    assert current.startswith(f"{ids[1]} current version of data/golden.jsonl leading main")
    assert older.startswith(f"{ids[0]} older version of data/golden.jsonl (the file has changed since) led, on this "
                            "older version, main")
    assert "leading" not in older
    for dataset_id, word in zip(ids, ("older version of data/golden.jsonl (the file has changed since)",
                                      "current version of data/golden.jsonl")):
        page = (golden_project / "site" / paths.dataset(dataset_id)).read_text()
        assert f"This dataset is the {word}." in page
    edit_row(golden_project, "g05", expected="A5")  # back to the first version, without a new run
    assert cli("build").exit_code == 0  # incremental: the file's version is part of the home page's inputs
    first_card, second_card = cards(golden_project)
    assert first_card.startswith(f"{ids[0]} current version of data/golden.jsonl leading")
    assert second_card.startswith(f"{ids[1]} older version of data/golden.jsonl")


def test_a_selection_of_the_file_now_is_the_current_version_and_any_edit_makes_it_older(tmp_path):
    from evalsite.analysis.dataset_versions import CURRENT, OLDER, UNKNOWN, DatasetVersions
    from evalsite.experiment.datasets import load_dataset, select_items
    from evalsite.runlog.records import DatasetRef

    rows = [{"id": f"r{i}", "input": f"q{i}", "expected": "a", "metadata": {"split": "ab"[i % 2]}} for i in range(6)]
    path = tmp_path / "data" / "x.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    whole = load_dataset(path)
    refs = [DatasetRef("data/x.jsonl", whole.dataset_id, len(whole.items))]
    for split, limit in ((None, 2), ("b", None), ("a", 2)):
        chosen = select_items(whole.items, split=split, limit=limit)
        refs.append(DatasetRef("data/x.jsonl", type(whole)(path, "x", chosen).dataset_id, len(chosen)))
    assert [DatasetVersions(tmp_path).of(ref).state for ref in refs] == [CURRENT] * 4
    path.write_text("".join(json.dumps({**row, "expected": "b"} if row["id"] == "r0" else row) + "\n" for row in rows))
    versions = DatasetVersions(tmp_path)
    assert [versions.of(ref).state for ref in refs] == [OLDER, OLDER, CURRENT, OLDER]  # split b does not hold r0
    assert versions.of(refs[0]).label == "older version of data/x.jsonl (the file has changed since)"
    path.unlink()
    assert DatasetVersions(tmp_path).of(refs[0]).state == UNKNOWN


def version_line(page_path) -> str:
    """The page's dataset-version line, as text."""
    found = re.findall(r'<p class="dataset-version[^"]*">(.*?)</p>', page_path.read_text(), re.S)
    assert len(found) == 1, found
    return " ".join(re.sub(r"<[^>]+>", " ", found[0]).split())


def test_run_and_experiment_pages_name_the_version_of_the_dataset_file(golden_project, cli):
    """The run page and the experiment page did not say whether a run's dataset is the file as it is now."""
    first = run_arm(cli, golden_project)
    site = golden_project / "site"
    experiment = json.loads((golden_project / "runs" / first / "run.json").read_text())["experiment"]
    assert cli("build").exit_code == 0
    current, older = "Dataset: current version of data/golden.jsonl.", \
        "Dataset: older version of data/golden.jsonl (the file has changed since)."
    assert version_line(site / paths.run(first)) == current
    assert version_line(site / paths.experiment(experiment)) == current
    edit_row(golden_project, "g05", expected="A5 (corrected)")
    assert cli("build").exit_code == 0  # incremental, no new run: the file's version is in both pages' keys
    assert version_line(site / paths.run(first)) == older
    assert version_line(site / paths.experiment(experiment)) == older
    second = run_arm(cli, golden_project)
    assert cli("build").exit_code == 0
    assert version_line(site / paths.run(first)) == older
    assert version_line(site / paths.run(second)) == current
    assert version_line(site / paths.experiment(experiment)) == current  # its matrix shows the newest group
