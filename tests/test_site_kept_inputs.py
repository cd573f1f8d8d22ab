"""What a rebuild after one new run no longer reads again: the other runs' files (their hashes kept
by file state) and the dataset file (what it gives kept by its content), while the site stays the
bytes of a build from nothing, and an edited file is always read again."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from sitekit import case, tree_bytes, write_run

from evalsite.analysis import dataset_versions, parquet
from evalsite.experiment import datasets
from evalsite.experiment.datasets import dataset_id, item_identity
from evalsite.project import PACKAGE_DIR, Project, find_project
from evalsite.runlog import hashing
from evalsite.runlog.hashing import file_sha256 as read_sha256
from evalsite.runlog.store import CASES_FILE, CASES_SHA256, END_FILE
from evalsite.site import build_site, inputs, paths
from evalsite.site.figures import KeptValues

ITEMS = [f"i{n}" for n in range(8)]
A1, B1, A2 = "20260101T000001Z-a-0001", "20260101T000002Z-b-0001", "20260101T000003Z-a-0002"


def dataset_file(root: Path, note: str) -> str:
    """data/data.jsonl, every row with metadata ``note``; its dataset id."""
    rows = [{"id": item, "input": f"Q{item}", "expected": "ok", "metadata": {"note": note}} for item in ITEMS]
    path = root / "data" / "data.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return dataset_id("data", item_identity(rows, "data/data.jsonl"))


def flagged_run(root: Path, run_id: str, arm: str, failing: set[str], data_id: str) -> None:
    """A run whose cases record their critical flag (so no dataset file stands in for it)."""
    cases = [
        dict(case(item, passed=item not in failing, score=0.0 if item in failing else 1.0), critical=False)
        for item in ITEMS
    ]
    write_run(root / "runs", run_id, cases, arm=arm, dataset_id=data_id, config={"arm_id": arm, "params": {}})


@pytest.fixture()
def metadata_project(tmp_path, monkeypatch) -> Project:
    """Two arms on a dataset with metadata; files count as settled as soon as written (no racy window)."""
    monkeypatch.setattr(inputs, "RACY_SECONDS", 0.0)
    root = tmp_path / "p"
    data_id = dataset_file(root, "first")
    flagged_run(root, A1, "a", {"i1"}, data_id)
    flagged_run(root, B1, "b", {"i2", "i3"}, data_id)
    return find_project(root)


@pytest.fixture()
def input_reads(monkeypatch) -> dict[str, list[str]]:
    """Files hashed (``hashed``: their paths) and dataset files parsed (``parsed``: their names)."""
    seen: dict[str, list[str]] = {"hashed": [], "parsed": []}
    hashed, load_dataset, load_rows = inputs.file_hash, dataset_versions.load_dataset, datasets.load_rows

    def hashing(*files: Path) -> str:
        seen["hashed"] += [str(file) for file in files]
        return hashed(*files)

    def parsing(load):
        def parse(path: Path, *args, **kwargs):
            seen["parsed"].append(Path(path).name)
            return load(path, *args, **kwargs)

        return parse

    monkeypatch.setattr(inputs, "file_hash", hashing)
    monkeypatch.setattr(dataset_versions, "load_dataset", parsing(load_dataset))
    monkeypatch.setattr(datasets, "load_rows", parsing(load_rows))
    return seen


def assert_same_as_a_fresh_build(metadata_project: Project, tmp_path: Path) -> None:
    shutil.rmtree(metadata_project.root / ".evalsite" / "site-cache")
    build_site(metadata_project, tmp_path / "fresh")
    assert tree_bytes(metadata_project.root / "site") == tree_bytes(tmp_path / "fresh")


def metadata_scripts(metadata_project: Project) -> bytes:
    data_id = json.loads((metadata_project.runs_dir / A1 / "run.json").read_text())["dataset"]["dataset_id"]
    return b"".join(
        tree_bytes(metadata_project.root / "site" / Path(paths.item_metadata(data_id, "00")).parent).values()
    )


def test_a_new_runs_rebuild_hashes_its_own_files_and_parses_no_dataset_file(metadata_project, input_reads, tmp_path):
    build_site(metadata_project)
    assert input_reads["parsed"] and b"first" in metadata_scripts(metadata_project)
    data_id = json.loads((metadata_project.runs_dir / A1 / "run.json").read_text())["dataset"]["dataset_id"]
    flagged_run(metadata_project.root, A2, "a", {"i5"}, data_id)
    for seen in input_reads.values():
        seen.clear()
    build_site(metadata_project)
    hashed = {
        Path(name).relative_to(metadata_project.root).as_posix()
        for name in input_reads["hashed"]
        if metadata_project.root in Path(name).parents
    }
    assert hashed == {f"runs/{A2}/{name}" for name in ("run.json", "cases.jsonl", "end.json")} | {
        "runs/decisions.jsonl"
    }
    assert input_reads["parsed"] == []
    assert not [name for name in input_reads["hashed"] if PACKAGE_DIR in Path(name).parents]  # nor evalsite's code
    assert b"first" in metadata_scripts(metadata_project)
    assert_same_as_a_fresh_build(metadata_project, tmp_path)


@pytest.mark.parametrize(("racy_seconds", "reads_expected"), [(0.0, 1), (3600.0, 2)])
def test_a_new_runs_cases_are_read_once_to_hash_them_and_check_them_against_its_footer(metadata_project, monkeypatch,
                                                                                       racy_seconds, reads_expected):
    # a run written just now (racy) is hashed afresh for the site, then once for its footer and every view
    build_site(metadata_project)
    data_id = json.loads((metadata_project.runs_dir / A1 / "run.json").read_text())["dataset"]["dataset_id"]
    flagged_run(metadata_project.root, A2, "a", {"i5"}, data_id)
    new_cases = metadata_project.runs_dir / A2 / CASES_FILE
    footer = new_cases.parent / END_FILE  # vouching for the cases, as the run writer's does
    footer.write_text(json.dumps({**json.loads(footer.read_text()), CASES_SHA256: read_sha256(new_cases)}))
    reads: list[str] = []
    read = hashing.file_sha256

    def counted(path):
        reads.append(os.fspath(path))
        return read(path)

    monkeypatch.setattr(hashing, "file_sha256", counted)
    monkeypatch.setattr(inputs, "file_sha256", counted)
    monkeypatch.setattr(inputs, "RACY_SECONDS", racy_seconds)
    checked: list[bool] = []
    check = parquet.cases_as_written
    monkeypatch.setattr(parquet, "cases_as_written", lambda cases, recorded: checked.append(check(cases, recorded)) or checked[-1])
    build_site(metadata_project)
    assert checked and all(checked)  # read as the footer vouches
    assert reads.count(str(new_cases)) == reads_expected


def test_a_file_changed_within_the_racy_window_is_read_at_each_hash(tmp_path, monkeypatch):
    reads: list[str] = []
    monkeypatch.setattr(inputs, "file_sha256", lambda path: reads.append(os.fspath(path)) or "digest")
    file = tmp_path / "cases.jsonl"
    file.write_text("one\n")  # just now: a change in the same clock tick would keep its size and times
    assert inputs.file_hash(file) == inputs.file_hash(file)
    assert reads == [str(file)] * 2


def test_an_edited_dataset_file_is_read_again(metadata_project, input_reads, tmp_path):
    build_site(metadata_project)
    assert b"first" in metadata_scripts(metadata_project)
    dataset_file(
        metadata_project.root, "second, longer"
    )  # the runs' rows are no longer the file's: their metadata is not shown
    for seen in input_reads.values():
        seen.clear()
    build_site(metadata_project)
    assert "data.jsonl" in input_reads["parsed"]
    assert b"first" not in metadata_scripts(metadata_project) and b"second" not in metadata_scripts(metadata_project)
    assert_same_as_a_fresh_build(metadata_project, tmp_path)


def test_a_file_hash_is_kept_while_its_state_holds(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "RACY_SECONDS", 0.0)
    file = tmp_path / "cases.jsonl"
    file.write_text("one\n")
    kept = KeptValues.unsaved()
    first = inputs.kept_file_hash(kept, file)
    assert first == inputs.file_hash(file) and list(kept.used.values()) == [first]
    kept.used = {key: "kept" for key in kept.used}
    assert inputs.kept_file_hash(kept, file) == "kept"  # the same state: not read again
    stat = file.stat()
    file.write_text("two\n")  # the same size, its modification time put back: its change time still moves
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert inputs.kept_file_hash(kept, file) == inputs.file_hash(file) != first


def test_a_file_changed_within_the_racy_window_is_always_hashed(tmp_path):
    file = tmp_path / "cases.jsonl"
    file.write_text("one\n")  # just now: within RACY_SECONDS
    kept = KeptValues.unsaved()
    assert inputs.kept_file_hash(kept, file) == inputs.file_hash(file)
    assert kept.used == {}  # nothing remembered for the next build
