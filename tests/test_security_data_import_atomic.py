"""Issue 32, Medium 3: an import appears in ``runs/`` whole or not at all.

An import that failed midway (here a disk that fills up after a few case lines) used to leave a
half-written run in ``runs/``, after which every ``build`` crashed. Runs are now written into a
staging folder beside ``runs/`` and renamed into it only when every run of the import is whole.
"""

from __future__ import annotations

import errno
import fcntl
import json
from pathlib import Path

import pytest
from import_support import PLAIN, imported_runs, write_jsonl

from evalsite.execute.importers import ImportOptions, import_files
from evalsite.execute.importers import writer as import_writer
from evalsite.project import find_project
from evalsite.runlog.store import RunWriter


def _rows(arms: tuple[str, ...], items: int = 6) -> list[dict]:
    return [{"arm": arm, "id": f"q{i}", "input": f"question {i}", "output": "x", "score": i % 2}
            for arm in arms for i in range(items)]


def _disk_fills_after(monkeypatch: pytest.MonkeyPatch, lines: int) -> None:
    """Writing case lines fails with ENOSPC once a write would pass ``lines`` lines in all (any run,
    one line a write or an import's batch)."""
    written = {"lines": 0}
    write = RunWriter._write

    def write_or_fail(self, encoded, count):
        if written["lines"] + count > lines:
            raise OSError(errno.ENOSPC, "No space left on device")
        written["lines"] += count
        write(self, encoded, count)

    monkeypatch.setattr(RunWriter, "_write", write_or_fail)


def _leftovers(project: Path) -> list[Path]:
    return sorted(project.glob(f".runs{import_writer.STAGING_MARK}*"))


@pytest.mark.parametrize("fails_after", [3, 8])  # inside the first run; inside the second of two
def test_an_import_failing_midway_leaves_nothing_in_runs(import_project, cli, monkeypatch, fails_after):
    source = write_jsonl(import_project / "results.jsonl", _rows(("a", "b")))
    with monkeypatch.context() as patch, pytest.raises(OSError, match="No space left"):
        _disk_fills_after(patch, fails_after)
        import_files(find_project(), "jsonl", [source], ImportOptions())
    runs = import_project / "runs"
    assert not runs.exists() or not any(runs.iterdir())
    assert _leftovers(import_project) == []
    assert cli("build").exit_code == 0
    imported = cli("import", "jsonl", str(source))  # nothing was recorded as imported: no --again needed
    assert imported.exit_code == 0, imported.output
    assert sorted(run.header.arm_id for run in imported_runs(import_project)) == ["a", "b"]
    assert all(len(run.cases) == 6 and run.footer is not None for run in imported_runs(import_project))


def test_a_killed_imports_staging_folder_is_ignored_then_cleaned(import_project, cli, tmp_path):
    first = write_jsonl(tmp_path / "first.jsonl", _rows(("a",)))
    assert cli("import", "jsonl", str(first)).exit_code == 0
    (run,) = imported_runs(import_project)
    killed = import_project / f".runs{import_writer.STAGING_MARK}dead0000"
    half = killed / "20990101T000000Z-half-0000"
    half.mkdir(parents=True)
    header = json.loads((run.directory / "run.json").read_text())
    (half / "run.json").write_text(json.dumps({**header, "run_id": half.name}))
    (half / "cases.jsonl").write_text('{"item_id": "q0", "rep')  # killed mid-line
    (killed / import_writer.STAGING_LOCK).touch()

    listed = cli.json("runs")
    assert [row["run_id"] for row in listed] == [run.run_id]
    assert cli("build").exit_code == 0
    assert cli("validate").exit_code == 0

    second = write_jsonl(tmp_path / "second.jsonl", _rows(("b",)))
    assert cli("import", "jsonl", str(second)).exit_code == 0
    assert not killed.exists()
    assert sorted(r.header.arm_id for r in imported_runs(import_project)) == ["a", "b"]


def test_a_running_imports_staging_folder_is_left_alone(import_project, cli, tmp_path):
    live = import_project / f".runs{import_writer.STAGING_MARK}live0000"
    live.mkdir()
    with open(live / import_writer.STAGING_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as the other import's process holds it
        source = write_jsonl(tmp_path / "results.jsonl", _rows(("a",)))
        assert cli("import", "jsonl", str(source)).exit_code == 0
        assert live.is_dir()
    assert _leftovers(import_project) == [live]


@pytest.mark.parametrize("occupant", ["file", "dangling link"])
def test_a_runs_path_that_cannot_be_a_folder_is_refused_and_nothing_is_left(import_project, cli, occupant):
    """A file (or a link to nowhere) named runs: the publish step's mkdir raised FileExistsError, a traceback."""
    runs = import_project / "runs"
    if occupant == "file":
        runs.write_text("not a folder")
    else:
        runs.symlink_to(import_project / "nowhere")
    result = cli("import", "jsonl", str(PLAIN / "scored.jsonl"))
    assert (result.exit_code, result.output) == (
        1, f"Error: {runs}: not a folder, so the runs cannot go there; nothing was imported\n")
    assert sorted(path.name for path in import_project.iterdir()) == ["data", "runs"]

