"""An import's runs written by two processes (``write_runs``'s second share in a forked child) are
the runs one process writes, byte for byte; an error in either share is the error, and the only
one, that one process raises, and nothing is left behind. A small import starts no second process. A file's sha256 computed in a thread,
or for a large file in a child process, while it is read is the one recorded."""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from import_support import INSPECT_JSON, PLAIN, PROMPTFOO, run_files

import evalsite.execute.importers as importers
from evalsite import forked as forked_module
from evalsite.errors import AlreadyImportedError, SourceError
from evalsite.execute.importers import ImportOptions, import_files
from evalsite.execute.importers import writer as import_writer
from evalsite.execute.importers.source_records import SourceCase, SourceItem
from evalsite.forked import forked
from evalsite.project import Project

SOURCES = [
    ("promptfoo", PROMPTFOO / "results.json"),
    ("promptfoo", PROMPTFOO / "results.jsonl"),
    ("promptfoo", PROMPTFOO / "results-repeat.json"),
    ("jsonl", PLAIN / "scored.jsonl"),
    ("inspect", INSPECT_JSON[0]),
]


def _import(root: Path, format_name: str, source: Path) -> tuple[list[str], dict[str, dict[str, object]]]:
    """The import's arms in the order reported, and each run's files and summary."""
    (root / "data").mkdir(parents=True)
    report = import_files(Project(root), format_name, [source], ImportOptions(again=True))
    runs = run_files(report, root)
    for run in report.runs:
        runs[run.arm_id]["summary"] = run.summary
    return [run.arm_id for run in report.runs], runs


@pytest.fixture
def children(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Second processes from every import with any cases in its second share; their pids, as started."""
    started: list[int] = []

    def counted(work):  # type: ignore[no-untyped-def]
        child = forked(work)
        started.append(child.child.pid if child else 0)
        return child

    monkeypatch.setattr(import_writer, "forked", counted)
    monkeypatch.setattr(forked_module, "spare_core", lambda: True)
    monkeypatch.setattr(import_writer, "PARALLEL_MIN_CASES", 1)
    return started


@pytest.mark.parametrize(("format_name", "source"), SOURCES, ids=lambda value: getattr(value, "name", value))
def test_two_processes_write_the_runs_one_writes(
    tmp_path: Path, children: list[int], format_name: str, source: Path, monkeypatch: pytest.MonkeyPatch
):
    parallel = _import(tmp_path / "parallel", format_name, source)
    with monkeypatch.context() as patch:
        patch.setattr(import_writer, "PARALLEL_MIN_CASES", 10**9)
        serial = _import(tmp_path / "serial", format_name, source)
    several = len(serial[0]) > 1
    assert len(children) == several and all(children)  # a second process exactly when there are two runs
    assert parallel == serial


@pytest.mark.parametrize(("format_name", "source"), SOURCES, ids=lambda value: getattr(value, "name", value))
def test_two_processes_with_the_items_hashed_in_halves_write_the_runs_one_writes(
    tmp_path: Path, children: list[int], format_name: str, source: Path, monkeypatch: pytest.MonkeyPatch
):
    """The second share's first run compared with the first while the items are hashed (found alike
    for these files' arms), then written with the first's items."""
    monkeypatch.setattr(import_writer, "PARALLEL_MIN_ITEMS", 2)
    parallel = _import(tmp_path / "parallel", format_name, source)
    monkeypatch.setattr(import_writer, "PARALLEL_MIN_CASES", 10**9)
    monkeypatch.setattr(import_writer, "PARALLEL_MIN_ITEMS", 10**9)
    assert parallel == _import(tmp_path / "serial", format_name, source)


def test_the_dataset_identity_is_computed_once_before_the_fork(
    tmp_path: Path, children: list[int], monkeypatch: pytest.MonkeyPatch
):
    """Both shares' runs are on the same items: their identity is computed here, once, and the
    second process starts writing with it (it waits for nothing)."""
    computed = tmp_path / "computed"
    original = import_writer.dataset_identity

    def identity(*args):  # type: ignore[no-untyped-def]
        with open(computed, "a") as pids:
            pids.write(f"{os.getpid()} {len(children)}\n")
        return original(*args)

    monkeypatch.setattr(import_writer, "dataset_identity", identity)
    _import(tmp_path / "runs", "jsonl", PLAIN / "scored.jsonl")
    assert computed.read_text() == f"{os.getpid()} 0\n" and len(children) == 1  # (no child yet)


def _failing(monkeypatch: pytest.MonkeyPatch, arms: set[str]) -> None:
    original = import_writer._write_run

    def write_run(source, draft, run, *rest):  # type: ignore[no-untyped-def]
        if run.arm_id in arms:
            raise SourceError(f"cannot write {run.arm_id}")
        return original(source, draft, run, *rest)

    monkeypatch.setattr(import_writer, "_write_run", write_run)


@pytest.mark.parametrize(
    ("failing", "expected"), [({"model-b"}, "model-b"), ({"model-a", "model-b"}, "model-a"), ({"model-a"}, "model-a")]
)
def test_an_error_in_either_share_is_the_one_process_error_and_leaves_nothing(
    tmp_path: Path, children: list[int], monkeypatch: pytest.MonkeyPatch, failing: set[str], expected: str
):
    _failing(monkeypatch, failing)
    (tmp_path / "data").mkdir()
    with pytest.raises(SourceError, match=f"^cannot write {expected}$"):
        import_files(Project(tmp_path), "jsonl", [PLAIN / "scored.jsonl"], ImportOptions(again=True))
    assert len(children) == 1
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data"]  # no run, no staging folder


def test_an_unexpected_error_in_the_second_process_is_raised_here(
    tmp_path: Path, children: list[int], monkeypatch: pytest.MonkeyPatch
):
    original = import_writer._write_run

    def write_run(source, draft, run, *rest):  # type: ignore[no-untyped-def]
        if run.arm_id == "model-b":
            raise OSError(28, "No space left on device")
        return original(source, draft, run, *rest)

    monkeypatch.setattr(import_writer, "_write_run", write_run)
    (tmp_path / "data").mkdir()
    with pytest.raises(OSError, match="No space left"):
        import_files(Project(tmp_path), "jsonl", [PLAIN / "scored.jsonl"], ImportOptions(again=True))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data"]


def test_a_second_process_killed_before_it_answers_leaves_its_share_to_this_one(
    tmp_path: Path, children: list[int], monkeypatch: pytest.MonkeyPatch
):
    """The second process dies (as by the out-of-memory killer) after writing its run, before it
    answers: this process writes that share itself, and the run the child left is not published."""
    importing = os.getpid()
    original = import_writer._write_run

    def write_run(source, draft, run, *rest):  # type: ignore[no-untyped-def]
        written = original(source, draft, run, *rest)
        if os.getpid() != importing:
            os.kill(os.getpid(), signal.SIGKILL)
        return written

    with monkeypatch.context() as patch:
        patch.setattr(import_writer, "PARALLEL_MIN_CASES", 10**9)
        serial = _import(tmp_path / "serial", "jsonl", PLAIN / "scored.jsonl")
    monkeypatch.setattr(import_writer, "_write_run", write_run)
    survived = _import(tmp_path / "survived", "jsonl", PLAIN / "scored.jsonl")
    assert len(children) == 1 and all(children)
    assert survived == serial
    assert len(list((tmp_path / "survived" / "runs").iterdir())) == len(serial[0])  # the child's run is not among them
    assert sorted(path.name for path in (tmp_path / "survived").iterdir()) == ["data", "runs"]  # no staging folder


@pytest.mark.parametrize(("format_name", "source"), SOURCES, ids=lambda value: getattr(value, "name", value))
def test_a_small_import_starts_no_second_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, format_name: str, source: Path
):
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("a second process was started"))
    (tmp_path / "data").mkdir()
    assert import_files(Project(tmp_path), format_name, [source], ImportOptions(again=True)).runs


@pytest.mark.parametrize(
    ("cases", "first"),
    [
        ([5], 1),  # one run: nothing to share
        ([50, 50], 1),
        ([10, 80, 10], 1),  # two cuts as near the middle (10 | 90, 90 | 10): the first
        ([30, 30, 30, 30], 2),
        ([100, 1], 2),  # a second share below the minimum: one process
        ([0, 0, 40, 40], 3),
    ],
)
def test_the_runs_are_shared_in_order_and_as_evenly_as_a_cut_allows(
    monkeypatch: pytest.MonkeyPatch, cases: list[int], first: int
):
    monkeypatch.setattr(import_writer, "PARALLEL_MIN_CASES", 10)
    described = [(SimpleNamespace(arm_id=str(n)), SimpleNamespace(cases=c)) for n, c in enumerate(cases)]
    share, rest = import_writer._shares(described)  # type: ignore[arg-type]
    if first == len(cases):
        assert (share, rest) == (described, [])
    else:
        assert share == described[:first] and rest == described[first:]


def _recorded_sha(root: Path) -> list[tuple[str, list[str]]]:
    headers = [json.loads(path.read_text()) for path in sorted((root / "runs").glob("*/run.json"))]
    return [(h["source"]["sha256"], [f["sha256"] for f in h["source"]["files"]]) for h in headers]


@pytest.mark.parametrize("again", [True, False])
def test_a_file_hashed_while_it_is_read_records_its_sha256(tmp_path: Path, again: bool):
    source = PROMPTFOO / "results.json"
    expected = hashlib.sha256(source.read_bytes()).hexdigest()
    (tmp_path / "data").mkdir()
    import_files(Project(tmp_path), "promptfoo", [source], ImportOptions(again=again))
    assert _recorded_sha(tmp_path) == [(expected, [expected])] * 2
    with pytest.raises(AlreadyImportedError, match="already imported"):  # now hashed before reading
        import_files(Project(tmp_path), "promptfoo", [source], ImportOptions())


def test_a_hash_that_fails_in_its_thread_fails_the_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def unreadable(path: Path) -> str:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(importers, "file_sha256", unreadable)
    (tmp_path / "data").mkdir()
    with pytest.raises(PermissionError):
        import_files(Project(tmp_path), "jsonl", [PLAIN / "scored.jsonl"], ImportOptions(again=True))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data"]


@pytest.fixture
def hashing_children(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every file counts as large enough for a hashing child, and a core as spare; the pids of the
    hashing children started (none: hashed by the thread)."""
    started: list[int] = []

    def counted(work):  # type: ignore[no-untyped-def]
        child = forked(work)
        started.append(0 if child is None else child.child.pid)
        return child

    monkeypatch.setattr(importers, "HASH_CHILD_MIN_BYTES", 0)
    monkeypatch.setattr(importers, "forked", counted)
    monkeypatch.setattr(forked_module, "spare_core", lambda: True)
    return started


def test_a_large_file_is_hashed_by_a_child_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   hashing_children: list[int]):
    source = PROMPTFOO / "results.json"
    importing, hashed_in = os.getpid(), tmp_path / "hashed-in"
    original = importers.file_sha256

    def noted(path: Path) -> str:
        hashed_in.write_text(str(os.getpid()))
        return original(path)

    monkeypatch.setattr(importers, "file_sha256", noted)
    (tmp_path / "data").mkdir()
    import_files(Project(tmp_path), "promptfoo", [source], ImportOptions(again=True))
    expected = hashlib.sha256(source.read_bytes()).hexdigest()
    assert _recorded_sha(tmp_path) == [(expected, [expected])] * 2
    assert len(hashing_children) == 1 and int(hashed_in.read_text()) == hashing_children[0] != importing


def test_a_hash_that_fails_in_its_child_fails_the_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        hashing_children: list[int]):
    def unreadable(path: Path) -> str:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(importers, "file_sha256", unreadable)
    (tmp_path / "data").mkdir()
    with pytest.raises(PermissionError, match="Permission denied"):
        import_files(Project(tmp_path), "jsonl", [PLAIN / "scored.jsonl"], ImportOptions(again=True))
    assert len(hashing_children) == 1 and all(hashing_children)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data"]


def test_a_hashing_child_killed_before_it_answers_leaves_the_hash_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hashing_children: list[int]
):
    importing, original = os.getpid(), importers.file_sha256

    def killed_in_a_child(path: Path) -> str:
        if os.getpid() != importing:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(path)

    monkeypatch.setattr(importers, "file_sha256", killed_in_a_child)
    source = PROMPTFOO / "results.json"
    (tmp_path / "data").mkdir()
    import_files(Project(tmp_path), "promptfoo", [source], ImportOptions(again=True))
    expected = hashlib.sha256(source.read_bytes()).hexdigest()
    assert len(hashing_children) == 1 and all(hashing_children) and _recorded_sha(tmp_path) == [(expected, [expected])] * 2


def test_an_import_that_fails_while_reading_stops_its_hashing_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  hashing_children: list[int]):
    release = tmp_path / "release"

    def slow(path: Path) -> str:  # in the child: still hashing when the reading fails
        while not release.exists():
            time.sleep(0.01)
        return "0" * 64

    monkeypatch.setattr(importers, "file_sha256", slow)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "1", "input": "a", "output": "a"}\nnot json\n')
    (tmp_path / "data").mkdir()
    with pytest.raises(SourceError, match="line 2"):
        import_files(Project(tmp_path), "jsonl", [broken], ImportOptions(again=True))
    release.touch()
    (pid,) = hashing_children
    with pytest.raises(ChildProcessError):  # stopped and reaped by the import, not left running
        os.waitpid(pid, os.WNOHANG)


@pytest.mark.parametrize(
    ("cores", "load", "spare"),
    [(1, 0.0, False), (2, 0.0, True), (2, 1.9, True), (2, 2.0, False), (2, 8.5, False), (8, 6.0, True)],
)
def test_a_second_process_only_with_a_core_to_spare(
    monkeypatch: pytest.MonkeyPatch, cores: int, load: float, spare: bool
):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert forked_module.spare_core() is spare
    child = forked_module.fork_child(lambda writing: None)
    assert (child is not None) is spare
    if child is not None:
        os.close(child.reading)
        child.stop()


@pytest.mark.parametrize(("format_name", "source"), SOURCES, ids=lambda value: getattr(value, "name", value))
def test_items_hashed_half_by_a_second_process_give_the_runs_one_process_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, format_name: str, source: Path
):
    monkeypatch.setattr(forked_module, "spare_core", lambda: True)
    monkeypatch.setattr(import_writer, "PARALLEL_MIN_CASES", 10**9)
    halves: list[int] = []
    original = forked_module.fork_child

    def counted(body):  # type: ignore[no-untyped-def]
        halves.append(1)
        return original(body)

    monkeypatch.setattr(forked_module, "fork_child", counted)
    monkeypatch.setattr(import_writer, "PARALLEL_MIN_ITEMS", 2)
    halved = _import(tmp_path / "halved", format_name, source)
    assert halves
    monkeypatch.setattr(import_writer, "PARALLEL_MIN_ITEMS", 10**9)
    assert halved == _import(tmp_path / "serial", format_name, source)


@pytest.mark.parametrize("where", [0, 5])
def test_a_lone_surrogate_in_either_half_of_the_items_is_the_one_process_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: int
):
    rows = [{"arm": "a", "id": f"q{n}", "input": "x\ud800" if n == where else "x", "score": 1} for n in range(6)]
    source = tmp_path / "s.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    monkeypatch.setattr(forked_module, "spare_core", lambda: True)
    errors = []
    for minimum in (2, 10**9):
        monkeypatch.setattr(import_writer, "PARALLEL_MIN_ITEMS", minimum)
        (tmp_path / str(minimum) / "data").mkdir(parents=True)
        with pytest.raises(SourceError) as caught:
            import_files(Project(tmp_path / str(minimum)), "jsonl", [source], ImportOptions(again=True))
        errors.append(caught.value.message)
    assert errors[0] == errors[1] and "lone surrogate \\ud800" in errors[0]


def _drafts(tmp_path: Path, second: list[tuple[str, object]], first: object = 1) -> list[import_writer._RunDraft]:
    """Runs ``a`` (items q0-q3, expected ``first``) and ``b`` (``second``'s items and expected values) of one source."""
    source = import_writer.SourceImport(Project(tmp_path), tmp_path / "rows.jsonl", "jsonl", "0" * 64)
    for run, rows in (("a", [(f"q{n}", first) for n in range(4)]), ("b", second)):
        for item_id, expected in rows:
            source.add_case(SourceCase(run, SourceItem(item_id, f"input {item_id}", expected)))
    return source.drafts()


@pytest.mark.parametrize(("second", "alike", "first"), [
    ([(f"q{n}", 1) for n in range(4)], True, 1),
    ([(f"q{n}", [None]) for n in range(4)], True, [None]),
    ([(f"q{n}", [math.nan if n == 3 else None]) for n in range(4)], False, [None]),  # the same text, not equal
    ([(f"q{n}", 1.0 if n == 2 else 1) for n in range(4)], False, 1),  # equal, but hashed otherwise
    ([(f"q{n}", 1) for n in (1, 0, 2, 3)], False, 1),  # another order
    ([(f"q{n}", 1) for n in range(3)], False, 1),  # one item fewer
])
def test_the_second_shares_first_run_takes_the_items_unchecked_only_when_found_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second: list[tuple[str, object]], alike: bool, first: object
):
    """Compared by the child hashing half of the first run's items; a run found otherwise is checked
    (and, when not the same items, hashed) as any other run, as one process does."""
    monkeypatch.setattr(forked_module, "spare_core", lambda: True)
    monkeypatch.setattr(import_writer, "PARALLEL_MIN_ITEMS", 2)
    ran, then = _drafts(tmp_path, second, first)
    memo = import_writer._ItemsMemo("rows.jsonl")
    items = memo.items_by_key(ran, then)
    memo.compared()
    found = memo.items_by_key(then)
    assert (found is items) == alike  # (found again, the same items make a dict of their own)
    monkeypatch.setattr(import_writer, "PARALLEL_MIN_ITEMS", 10**9)
    alone = import_writer._ItemsMemo("rows.jsonl")
    alone.items_by_key(ran)
    assert found == alone.items_by_key(then)  # the items one process finds


@pytest.mark.parametrize("minimum", [2, 10**9])
def test_of_two_rows_that_fail_to_hash_the_first_in_the_sources_order_is_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minimum: int
):
    """The rows are hashed in their order of arrival (half by a child from ``minimum`` items on); a
    failure has them hashed again in the source's order, so the error is the one process's."""
    monkeypatch.setattr(forked_module, "spare_core", lambda: True)
    monkeypatch.setattr(import_writer, "PARALLEL_MIN_ITEMS", minimum)
    source = import_writer.SourceImport(Project(tmp_path), tmp_path / "rows.jsonl", "jsonl", "0" * 64)
    for item_id, text, order in (("q0", "late\ud800", 3.0), ("q1", "early\ud801", 0.0), ("q2", "x", 1.0),
                                 ("q3", "y", 2.0)):  # q0 arrives first, but is last in the source's order
        source.add_case(SourceCase("a", SourceItem(item_id, text, order=order)))
    with pytest.raises(UnicodeEncodeError) as caught:
        import_writer._ItemsMemo("rows.jsonl").items_by_key(source.drafts()[0])
    assert ord(caught.value.object[caught.value.start]) == 0xD801  # (a number: pytest-xdist cannot send a lone surrogate)
