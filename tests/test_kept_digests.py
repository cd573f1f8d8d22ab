"""``evalsite runs`` checks each finished run's cases against its footer's sha256; the sha256s are kept
between processes by the files' states (``evalsite.runlog.digests.KeptDigests``), so a settled run is
read once, not at every listing, while any change to its cases is still seen."""

from __future__ import annotations

import json
import os

import pytest

from evalsite.analysis.run_views import run_listing
from evalsite.analysis.summary import summarise_run
from evalsite.project import Project
from evalsite.runlog import digests, hashing
from evalsite.runlog.digests import DIGESTS_FILE, KeptDigests
from evalsite.runlog.store import CASES_FILE, RunWriter


def write_run(root, scores: list[float]) -> str:
    """A finished run whose footer records its totals (as every writer's does)."""
    cases = [{"item_id": f"q{n}", "repeat": 0, "output": "x", "error": None, "score": score, "passed": score >= 0.5,
              "scores": [{"evaluator": "exact", "version": "1", "score": score, "passed": score >= 0.5}]}
             for n, score in enumerate(scores)]
    (root / "data").mkdir(parents=True, exist_ok=True)  # a project (a runs/ folder alone keeps nothing beside it)
    writer = RunWriter.create(root / "runs", "main", {"arm_id": "main", "dataset": {"path": "d.jsonl", "dataset_id": "d@0"}})
    for case in cases:
        writer.append_case(case)
    writer.finish({"status": "completed", "totals": summarise_run(cases).totals().to_json()})
    return writer.run_id


@pytest.fixture
def hashed(monkeypatch) -> list[str]:
    """The files hashed from disk, in a fresh process each listing (the in-process memo cleared)."""
    found: list[str] = []
    read = hashing.file_sha256
    monkeypatch.setattr(hashing, "file_sha256", lambda path: found.append(os.path.basename(path)) or read(path))
    monkeypatch.setattr(hashing, "RACY_SECONDS", 0.0)  # the files' change times are not settable
    hashing._sha256_of.cache_clear()
    return found


def listing(project: Project) -> dict[str, tuple]:
    """``evalsite runs``' figures as a new process reads them: nothing hashed in memory, its keep
    saved at the end (as the CLI does after each command)."""
    digests._KEEPS.clear()
    hashing._sha256_of.cache_clear()
    rows = run_listing(project).rows
    digests.save_kept()
    return {row["run_id"]: (row["cases"], row["mean_score"]) for row in rows}


def test_a_settled_run_is_hashed_once_across_listings(tmp_path, hashed):
    project = Project(tmp_path)
    run_id = write_run(tmp_path, [1.0, 0.0, 1.0, 1.0])
    assert listing(project) == {run_id: (4, 0.75)}
    assert hashed == [CASES_FILE]
    assert listing(project) == {run_id: (4, 0.75)} and listing(project) == {run_id: (4, 0.75)}
    assert hashed == [CASES_FILE], "kept in .evalsite/digests.json"
    assert (tmp_path / ".evalsite" / DIGESTS_FILE).is_file()


def test_a_same_size_edit_with_its_time_put_back_is_seen(tmp_path, hashed):
    project = Project(tmp_path)
    run_id = write_run(tmp_path, [1.0, 0.0, 1.0, 1.0])
    assert listing(project) == {run_id: (4, 0.75)}
    cases = tmp_path / "runs" / run_id / CASES_FILE
    state = cases.stat()
    text = cases.read_text()
    cases.write_text(text.replace('"score":0.0', '"score":1.0', 1).replace('"score": 0.0', '"score": 1.0', 1))
    assert cases.stat().st_size == state.st_size and cases.read_text() != text
    os.utime(cases, ns=(state.st_atime_ns, state.st_mtime_ns))  # its change time still moves
    assert listing(project)[run_id][1] != 0.75, "the edited cases are summarised, not the footer's"
    assert hashed == [CASES_FILE, CASES_FILE]


def test_a_file_changed_within_racy_seconds_is_not_kept(tmp_path, hashed, monkeypatch):
    monkeypatch.setattr(hashing, "RACY_SECONDS", 3600.0)
    project = Project(tmp_path)
    run_id = write_run(tmp_path, [0.0, 1.0])
    assert listing(project) == {run_id: (2, 0.5)} and listing(project) == {run_id: (2, 0.5)}
    assert hashed == [CASES_FILE, CASES_FILE]
    assert not (tmp_path / ".evalsite" / DIGESTS_FILE).exists()


@pytest.mark.parametrize("kept", [b"not json", b'{"version": 99, "digests": {}}', b"[1, 2]",
                                  b'{"version": 1, "digests": {"x": [1, 2, 3]}}'])
def test_a_malformed_keep_is_ignored(tmp_path, hashed, kept):
    project = Project(tmp_path)
    run_id = write_run(tmp_path, [1.0, 1.0])
    (tmp_path / ".evalsite").mkdir()
    (tmp_path / ".evalsite" / DIGESTS_FILE).write_bytes(kept)
    assert listing(project) == {run_id: (2, 1.0)}
    assert hashed == [CASES_FILE]
    assert listing(project) == {run_id: (2, 1.0)} and hashed == [CASES_FILE], "written anew"


def test_a_wrong_kept_digest_only_sends_the_run_to_its_cases(tmp_path, hashed):
    project = Project(tmp_path)
    run_id = write_run(tmp_path, [1.0, 0.0])
    listing(project)
    keep = tmp_path / ".evalsite" / DIGESTS_FILE
    data = json.loads(keep.read_text())
    (entry,) = data["digests"].values()
    entry[5] = "0" * 64
    keep.write_text(json.dumps(data))
    assert listing(project) == {run_id: (2, 0.5)}, "the footer is not vouched: its cases are summarised"


def test_a_keep_that_cannot_be_written_is_left(tmp_path, hashed):
    project = Project(tmp_path)
    run_id = write_run(tmp_path, [1.0])
    (tmp_path / ".evalsite").write_text("a file where the folder would be")
    assert listing(project) == {run_id: (1, 1.0)} and listing(project) == {run_id: (1, 1.0)}
    assert hashed == [CASES_FILE, CASES_FILE]


def test_entries_of_files_gone_are_dropped(tmp_path, hashed):
    keep = KeptDigests(tmp_path)
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("a")
    second.write_text("b")
    keep.sha256(first), keep.sha256(second)
    keep.save()
    second.unlink()
    third = tmp_path / "c"
    third.write_text("c")
    again = KeptDigests(tmp_path)
    again.sha256(third)
    again.save()
    assert set(json.loads((tmp_path / ".evalsite" / DIGESTS_FILE).read_text())["digests"]) == {str(first), str(third)}


def test_a_symlinked_keep_folder_or_file_is_never_followed(tmp_path, hashed):
    project = Project(tmp_path)
    run_id = write_run(tmp_path, [1.0])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".evalsite").symlink_to(elsewhere)
    assert listing(project) == {run_id: (1, 1.0)} and listing(project) == {run_id: (1, 1.0)}
    assert hashed == [CASES_FILE, CASES_FILE] and list(elsewhere.iterdir()) == [], "nothing read or written there"
    (tmp_path / ".evalsite").unlink()
    (tmp_path / ".evalsite").mkdir()
    victim = tmp_path / "victim.json"
    victim.write_text("untouched")
    (tmp_path / ".evalsite" / DIGESTS_FILE).symlink_to(victim)
    assert listing(project) == {run_id: (1, 1.0)}
    assert victim.read_text() == "untouched" and not (tmp_path / ".evalsite" / DIGESTS_FILE).is_symlink()


def test_each_command_keeps_what_it_hashed_for_the_next(tmp_path, hashed, cli, monkeypatch):
    """The CLI saves the keep after any command that checked a footer: a comparison, then `runs`."""
    baseline = write_run(tmp_path, [1.0, 0.0])
    current = write_run(tmp_path, [1.0, 1.0])
    monkeypatch.chdir(tmp_path)
    digests._KEEPS.clear()
    hashing._sha256_of.cache_clear()
    shown = cli("compare", current, "--baseline", baseline)
    assert shown.exit_code == 0, shown.output
    assert hashed == [CASES_FILE, CASES_FILE]
    digests._KEEPS.clear()
    hashing._sha256_of.cache_clear()
    assert cli("runs").exit_code == 0 and hashed == [CASES_FILE, CASES_FILE], "read from the comparison's keep"


def test_a_build_takes_the_cases_sha256s_another_command_kept(tmp_path, hashed, cli, monkeypatch):
    from evalsite.site import inputs

    monkeypatch.setattr(inputs, "RACY_SECONDS", 0.0)
    write_run(tmp_path, [1.0, 0.0])
    write_run(tmp_path, [1.0, 1.0])
    monkeypatch.chdir(tmp_path)
    digests._KEEPS.clear()
    hashing._sha256_of.cache_clear()
    assert cli("runs").exit_code == 0 and hashed == [CASES_FILE, CASES_FILE]
    digests._KEEPS.clear()
    hashing._sha256_of.cache_clear()
    built = cli("build")
    assert built.exit_code == 0, built.output
    assert hashed.count(CASES_FILE) == 2, "the site's run hashes took the cases' sha256s from the keep"


def test_nothing_is_kept_beside_runs_outside_a_project_nor_for_other_files(tmp_path, hashed):
    shared = tmp_path / "shared"
    run_id = write_run(shared, [1.0])
    (shared / "data").rmdir()  # a runs/ folder on its own, e.g. EVALSITE_RUNS=/shared/runs
    digests._KEEPS.clear()
    assert digests.kept_sha256(shared / "runs" / run_id / CASES_FILE) == hashing.file_sha256(shared / "runs" / run_id / CASES_FILE)
    other = tmp_path / "p" / "runs" / "notes" / "todo.txt"  # a project's, but no run file
    other.parent.mkdir(parents=True)
    other.write_text("x")
    (tmp_path / "p" / "data").mkdir()
    digests.kept_sha256(other)
    digests.save_kept()
    assert not (shared / ".evalsite").exists() and not (tmp_path / "p" / ".evalsite").exists()


def test_runs_not_yet_kept_are_hashed_side_by_side_on_every_core(tmp_path, monkeypatch):
    """A first listing hashes each run's cases on a thread of its own core (reading and hashing a
    large buffer release the GIL): the same figures as one after another."""
    import threading

    project = Project(tmp_path)
    run_ids = [write_run(tmp_path, [1.0, 0.0] * n) for n in (1, 2, 3)]
    threads: list[str] = []
    read = hashing.file_sha256
    monkeypatch.setattr(hashing, "file_sha256", lambda path: threads.append(threading.current_thread().name) or read(path))
    monkeypatch.setattr(hashing.os, "cpu_count", lambda: 2)
    found = listing(project)
    assert found == {run_id: (2 * n, 0.5) for run_id, n in zip(run_ids, (1, 2, 3))}
    assert len(threads) == 3 and all(name.startswith("evalsite-hash") for name in threads)


def test_side_by_side_keeps_the_order_and_raises_a_failure():
    assert hashing.side_by_side(lambda n: n * n, list(range(50))) == [n * n for n in range(50)]
    assert hashing.side_by_side(str, [7]) == ["7"]

    def failing(n: int) -> int:
        if n == 3:
            raise OSError("cases.jsonl: unreadable")
        return n

    with pytest.raises(OSError, match="unreadable"):
        hashing.side_by_side(failing, list(range(6)))
