"""An incremental build redoes exactly what a change touches, and its site is the same bytes as a
build from nothing.

Each test builds a small project, changes one input (a new run of an arm, an exclusion in the
decisions log, a run's cases, the dataset file, the code), builds again, and checks which runs were
parsed, which pairs were compared, which jobs were rendered, and that the site equals a build of
the same project into a fresh folder without the cache.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest
from sitekit import case, tree_bytes, write_run

from evalsite import forked as forked_module
from evalsite.analysis import compare as compare_module
from evalsite.analysis import items
from evalsite.analysis.exclusions import exclude_run
from evalsite.errors import SiteError
from evalsite.experiment.datasets import dataset_id, item_identity
from evalsite.project import Project, find_project
from evalsite.site import build, build_site, matrixdata, paths
from evalsite.site.figures import COLUMNS_SUFFIX, PAIRS_FILE, SiteCache
from evalsite.site.inputs import ProjectInputs
from evalsite.site.output import BUILD_RECORD
from evalsite.site.pages import compare, runs

ITEMS = [f"i{n}" for n in range(8)]
ROWS = [{"id": item, "input": f"Q{item}", "expected": "ok"} for item in ITEMS]
A1, B1, C1 = "20260101T000001Z-a-0001", "20260101T000002Z-b-0001", "20260101T000003Z-c-0001"
A2, B2 = "20260101T000004Z-a-0002", "20260101T000005Z-b-0002"


def dataset_file(root: Path, rows: list[dict]) -> str:
    """Write data/data.jsonl and return its dataset id (the id a run of it records)."""
    path = root / "data" / "data.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return dataset_id("data", item_identity(rows, "data/data.jsonl"))


def arm_run(root: Path, run_id: str, arm: str, failing: set[str], data_id: str) -> None:
    cases = [case(item, passed=item not in failing, score=0.0 if item in failing else 1.0,
                  output="no" if item in failing else "ok", latency_ms=10.0 + n) for n, item in enumerate(ITEMS)]
    write_run(root / "runs", run_id, cases, arm=arm, dataset_id=data_id, config={"arm_id": arm, "params": {}})


@pytest.fixture()
def small_project(tmp_path) -> Project:
    """Three arms (a, b, c) of one experiment on one eight-item dataset whose rows mark ``i1`` critical."""
    root = tmp_path / "p"
    rows = [dict(row, metadata={"critical": True}) if row["id"] == "i1" else row for row in ROWS]
    data_id = dataset_file(root, rows)
    for run_id, arm, failing in ((A1, "a", {"i1", "i2"}), (B1, "b", {"i3"}), (C1, "c", {"i4", "i5", "i6"})):
        arm_run(root, run_id, arm, failing, data_id)
    return find_project(root)


@pytest.fixture()
def spy(monkeypatch) -> dict[str, list]:
    """What a build reads and compares: ``reads`` (run folders whose cases.jsonl is read) and
    ``pairs`` ((run, baseline) whose comparison is computed)."""
    seen: dict[str, list] = {"reads": [], "pairs": []}
    scan_cases, compare_runs = build.scan_cases, compare.compare_runs

    def reading(directory: Path, **options):
        seen["reads"].append(directory.name)
        return scan_cases(directory, **options)

    def comparing(project, run_id, *, baseline, **options):
        seen["pairs"].append((run_id, baseline))
        return compare_runs(project, run_id, baseline=baseline, **options)

    monkeypatch.setattr(build, "scan_cases", reading)
    monkeypatch.setattr(compare, "compare_runs", comparing)
    return seen


def record(project: Project) -> dict[str, str]:
    jobs = json.loads((project.root / "site" / BUILD_RECORD).read_text())["jobs"]
    return {key: job["input_hash"] for key, job in jobs.items()}


def rebuild(project: Project, spy: dict[str, list]) -> set[str]:
    """Build again after a change; the keys of the jobs it rendered."""
    before = record(project)
    for seen in spy.values():
        seen.clear()
    build_site(project)
    return {key for key, input_hash in record(project).items() if before.get(key) != input_hash}


def assert_same_as_a_fresh_build(project: Project, tmp_path: Path) -> None:
    shutil.rmtree(project.root / ".evalsite" / "site-cache")
    build_site(project, tmp_path / "fresh")
    assert tree_bytes(project.root / "site") == tree_bytes(tmp_path / "fresh")


def recorded_dataset(project: Project) -> str:
    return json.loads((project.runs_dir / A1 / "run.json").read_text())["dataset"]["dataset_id"]


def test_a_new_run_of_an_arm_reads_and_compares_only_that_run(small_project, spy, tmp_path):
    build_site(small_project)
    data_id = recorded_dataset(small_project)
    arm_run(small_project.root, A2, "a", {"i2"}, data_id)
    rendered = rebuild(small_project, spy)
    assert spy["reads"] == [A2]
    assert spy["pairs"] == [(A2, A1)]  # the runs table and the new compare page share one comparison
    shared = {"home", "runs", "decisions", "search", f"dataset:{data_id}", f"items:{data_id}", "experiment:exp"}
    assert rendered == shared | {f"run:{A2}", f"compare:{A2}--{A1}"}  # the other runs' pages are kept
    assert_same_as_a_fresh_build(small_project, tmp_path)


def test_the_runs_table_compares_a_pair_once_and_later_builds_reuse_its_counts(small_project, spy, tmp_path):
    data_id = recorded_dataset(small_project)
    arm_run(small_project.root, A2, "a", {"i2"}, data_id)
    build_site(small_project)
    arm_run(small_project.root, B2, "b", {"i3", "i7"}, data_id)
    rendered = rebuild(small_project, spy)
    assert "runs" in rendered and f"compare:{A2}--{A1}" not in rendered
    assert spy["pairs"] == [(B2, B1)]  # the a pair's change counts come from the cache
    assert_same_as_a_fresh_build(small_project, tmp_path)


def test_excluding_a_run_reads_only_it_and_redraws_the_pages_that_choose_runs(small_project, spy, tmp_path):
    build_site(small_project)
    exclude_run(small_project, C1, "scratch run")
    rendered = rebuild(small_project, spy)
    assert spy["reads"] == [C1]  # only to mark its own page: every other figure and matrix cell comes from the cache
    assert {"home", "runs", "decisions", "search", "experiment:exp", f"dataset:{recorded_dataset(small_project)}"} <= rendered
    assert {key for key in rendered if key.startswith("run:")} == {f"run:{C1}"}
    assert_same_as_a_fresh_build(small_project, tmp_path)


def test_a_changed_run_is_read_again_and_only_its_pairs_are_compared_again(small_project, spy, tmp_path):
    data_id = recorded_dataset(small_project)
    arm_run(small_project.root, A2, "a", {"i2"}, data_id)
    arm_run(small_project.root, B2, "b", {"i3"}, data_id)
    build_site(small_project)
    cases = small_project.runs_dir / B2 / "cases.jsonl"
    lines = cases.read_text().splitlines()
    edited = json.loads(lines[0]) | {"output": "changed", "score": 0.0, "passed": False}
    cases.write_text("\n".join([json.dumps(edited), *lines[1:]]) + "\n")
    rendered = rebuild(small_project, spy)
    assert spy["reads"] == [B2] and spy["pairs"] == [(B2, B1)]
    assert f"run:{B2}" in rendered and f"compare:{B2}--{B1}" in rendered
    assert not {f"run:{A1}", f"run:{A2}", f"compare:{A2}--{A1}"} & rendered
    assert_same_as_a_fresh_build(small_project, tmp_path)


def test_a_changed_dataset_file_rereads_the_runs_whose_critical_flags_it_holds(small_project, spy, tmp_path):
    build_site(small_project)
    dataset_file(small_project.root, ROWS)  # i1 is no longer marked critical: the file no longer holds the runs' rows
    rendered = rebuild(small_project, spy)
    assert sorted(spy["reads"]) == [A1, B1, C1]
    assert {f"run:{A1}", f"run:{B1}", f"run:{C1}", "runs", "home"} <= rendered
    assert_same_as_a_fresh_build(small_project, tmp_path)


def test_new_code_recomputes_everything(small_project, spy, monkeypatch, tmp_path):
    data_id = recorded_dataset(small_project)
    arm_run(small_project.root, A2, "a", {"i2"}, data_id)
    build_site(small_project)
    hashed = build.kept_file_hash
    monkeypatch.setattr(build, "kept_file_hash", lambda kept, *paths: hashed(kept, *paths) + "-edited")  # as if a module changed
    rendered = rebuild(small_project, spy)
    assert sorted(spy["reads"]) == sorted([A1, A2, B1, C1])
    assert spy["pairs"] == [(A2, A1)]
    assert rendered == set(record(small_project)) - {"static"}
    assert_same_as_a_fresh_build(small_project, tmp_path)


def test_a_new_run_is_the_only_file_its_leaderboard_and_comparison_read(tmp_path, monkeypatch):
    """The other runs' cells and case columns come from the cache (cases that record their critical
    flag: no dataset stands in for them)."""
    root = tmp_path / "p"
    data_id = dataset_file(root, ROWS)

    def flagged_run(run_id: str, arm: str, failing: set[str]) -> None:
        cases = [dict(case(item, passed=item not in failing, score=0.0 if item in failing else 1.0), critical=item == "i1")
                 for item in ITEMS]
        write_run(root / "runs", run_id, cases, arm=arm, dataset_id=data_id, config={"arm_id": arm, "params": {}})

    for run_id, arm, failing in ((A1, "a", {"i1", "i2"}), (B1, "b", {"i3"}), (C1, "c", {"i4"})):
        flagged_run(run_id, arm, failing)
    project = find_project(root)
    build_site(project)
    flagged_run(A2, "a", {"i2", "i5"})
    read: dict[str, list] = {"duckdb": [], "scanned": []}
    chosen, scan = items._chosen_cases, compare_module.scan_cases
    monkeypatch.setattr(items, "_chosen_cases",
                        lambda database, run_ids, *names: read["duckdb"].extend(run_ids) or chosen(database, run_ids, *names))
    monkeypatch.setattr(compare_module, "scan_cases", lambda directory: read["scanned"].append(directory.name) or scan(directory))
    build_site(project)
    assert read["duckdb"] == []  # the leaderboard waited for the build's own read of A2, which kept its cells
    assert read["scanned"] == []
    assert_same_as_a_fresh_build(project, tmp_path)


def test_a_new_runs_leaderboards_start_once_its_cells_are_kept_before_anything_else(small_project, monkeypatch, tmp_path):
    """The leaderboards a new run joins wait only for its reading: the build keeps its cells and
    starts them before it summarises the run, loads the other runs' kept figures or renders a page."""
    build_site(small_project)
    data_id = recorded_dataset(small_project)
    arm_run(small_project.root, A2, "a", {"i2"}, data_id)
    events: list[str] = []
    prefetch, summarise, kept, run_job = (ProjectInputs.prefetch_leaderboards, build.summarise_run, SiteCache.get,
                                          build._run_job)
    monkeypatch.setattr(ProjectInputs, "prefetch_leaderboards",
                        lambda self, ids: events.extend(f"leaderboards {i}" for i in ids) or prefetch(self, ids))
    monkeypatch.setattr(build, "summarise_run", lambda columns: events.append("summary") or summarise(columns))
    monkeypatch.setattr(SiteCache, "get", lambda self, *args, **options: events.append("kept") or kept(self, *args, **options))
    monkeypatch.setattr(build, "_run_job", lambda kit, writer, job, *args: events.append(job.key) or run_job(kit, writer, job, *args))
    build_site(small_project)
    assert events[0] == f"leaderboards {data_id}" and events.count(events[0]) == 1
    assert {"summary", "kept", f"run:{A2}", "home"} <= set(events[1:])
    assert_same_as_a_fresh_build(small_project, tmp_path)


def test_runs_of_the_same_items_write_the_matrix_row_starts_once(small_project, monkeypatch, tmp_path):
    written: list[str] = []
    row_start = matrixdata._row_start
    monkeypatch.setattr(matrixdata, "_row_start", lambda item_id: written.append(item_id) or row_start(item_id))
    build_site(small_project)
    assert sorted(written) == ITEMS  # three runs of the same items: the first run's row starts serve the other two
    written.clear()
    arm_run(small_project.root, A2, "a", {"i2"}, recorded_dataset(small_project))
    build_site(small_project)
    assert written == []  # the new run's come from the kept runs' matrix parts
    assert_same_as_a_fresh_build(small_project, tmp_path)


def item_texts_files(project: Project) -> dict[str, int]:
    """The dataset's shared item texts files (name → modification time in ns)."""
    found = (project.root / "site" / "data" / "items").glob("*/texts/*.js")
    return {path.name: path.stat().st_mtime_ns for path in found}


def test_runs_share_item_texts_files_and_a_changed_text_gets_its_own(small_project, spy, tmp_path):
    report = build_site(small_project)
    site = small_project.root / "site"
    on_disk = [p for p in site.rglob("*") if p.is_file() and p.name != BUILD_RECORD]
    assert (report.files, report.bytes) == (len(on_disk), sum(p.stat().st_size for p in on_disk))  # a shared file counted once
    data_id = recorded_dataset(small_project)
    shared = item_texts_files(small_project)
    assert len(shared) == len({paths.item_bucket(item) for item in ITEMS})  # one file a bucket for the three runs
    arm_run(small_project.root, A2, "a", {"i2"}, data_id)  # the same texts: the files are neither new nor rewritten
    rebuild(small_project, spy)
    assert item_texts_files(small_project) == shared
    cases = [case(item, expected="changed" if item == "i3" else "ok") for item in ITEMS]
    write_run(small_project.runs_dir, B2, cases, arm="b", dataset_id=data_id, config={"arm_id": "b", "params": {}})
    rebuild(small_project, spy)
    now = item_texts_files(small_project)
    assert set(now) - set(shared) and set(now) > set(shared)  # i3's bucket gets a second file; the first is still used
    assert_same_as_a_fresh_build(small_project, tmp_path)
    for run_id in (A1, B1, C1, A2):
        shutil.rmtree(small_project.runs_dir / run_id)
    rebuild(small_project, spy)
    assert len(item_texts_files(small_project)) == len(shared)  # the file only the removed runs used is deleted


# A new run's own page rendered in a child process (``build._render_aside``): the same bytes as a
# build that renders it in its turn, its failure the build's, and no child left behind. The build
# forks only while it has one thread and ``forked.spare_core`` finds a free core; the tests say both,
# since a test worker has threads of its own and the machine may be busy.
@pytest.fixture()
def page_children(monkeypatch) -> list[int]:
    """Fork whenever the build may (one thread, a spare core); the pids of the children it made."""
    made: list[int] = []
    forked = build.forked

    def counted(work):
        child = forked(work)
        if child is not None:
            made.append(child.child.pid)
        return child

    monkeypatch.setattr(forked_module, "spare_core", lambda: True)
    monkeypatch.setattr(build, "_one_thread", lambda: True)
    monkeypatch.setattr(build, "forked", counted)
    return made


def no_child_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_a_new_runs_page_renders_in_a_child_with_the_same_bytes(small_project, page_children, monkeypatch, tmp_path):
    build_site(small_project)
    assert page_children == []  # a build from nothing starts its leaderboards at once: it never forks
    arm_run(small_project.root, A2, "a", {"i2"}, recorded_dataset(small_project))
    rendered_by: list[int] = []
    run_data = runs.run_data
    monkeypatch.setattr(runs, "run_data", lambda *args, **options: rendered_by.append(os.getpid()) or run_data(*args, **options))
    build_site(small_project)
    assert len(page_children) == 1 and rendered_by == []  # rendered in the child, whose list this one never sees
    assert no_child_left()
    assert_same_as_a_fresh_build(small_project, tmp_path)


def test_a_page_that_fails_in_the_child_fails_the_build(small_project, page_children, monkeypatch):
    build_site(small_project)
    arm_run(small_project.root, A2, "a", {"i2"}, recorded_dataset(small_project))

    def failing(*args, **options):
        raise SiteError("the run's data could not be drawn")

    monkeypatch.setattr(runs, "run_data", failing)
    with pytest.raises(SiteError, match="could not be drawn"):
        build_site(small_project)
    assert len(page_children) == 1 and no_child_left()


def test_a_build_that_fails_before_the_pages_turn_stops_its_child(small_project, page_children, monkeypatch):
    build_site(small_project)
    arm_run(small_project.root, A2, "a", {"i2"}, recorded_dataset(small_project))

    def failing(*args, **options):
        raise SiteError("the matrix column could not be drawn")

    monkeypatch.setattr(build, "run_column", failing)  # after the fork, before the run's page is collected
    with pytest.raises(SiteError, match="could not be drawn"):
        build_site(small_project)
    assert len(page_children) == 1 and no_child_left()


def killed_in_a_child(function):
    """``function`` for the build; a child process calling it ends at once without a result, as the
    kernel's out-of-memory killer would end it."""
    builder = os.getpid()

    def calling(*args, **options):
        if os.getpid() != builder:
            os._exit(9)
        return function(*args, **options)

    return calling


def test_a_child_killed_before_its_result_leaves_the_page_to_the_build(small_project, page_children, monkeypatch, tmp_path):
    """A child that ends without a result (the kernel's out-of-memory killer, say) costs only its
    work: the build renders the page itself, the same bytes."""
    build_site(small_project)
    arm_run(small_project.root, A2, "a", {"i2"}, recorded_dataset(small_project))
    monkeypatch.setattr(runs, "run_data", killed_in_a_child(runs.run_data))
    build_site(small_project)
    assert len(page_children) == 1 and no_child_left()
    assert_same_as_a_fresh_build(small_project, tmp_path)


# A new run's compare page rendered in a second child: its comparison from the cases the build holds
# (the run's, just read; the baseline's kept columns), never a DuckDB read, and the runs table's
# change counts for the pair handed back with the page. Only for cases that record their own
# critical flags: the project below has no dataset file.
@pytest.fixture()
def project_without_dataset_file(small_project) -> Project:
    (small_project.root / "data" / "data.jsonl").unlink()
    return small_project


def duckdb_refused_in_children(monkeypatch) -> None:
    """Every way the build reads a run with DuckDB fails in a child process."""
    builder = os.getpid()

    def guarded(read):
        def reading(*args, **options):
            if os.getpid() != builder:
                raise AssertionError("a child process read a run with DuckDB")
            return read(*args, **options)
        return reading

    monkeypatch.setattr(compare_module, "scan_cases", guarded(compare_module.scan_cases))
    monkeypatch.setattr(build, "scan_cases", guarded(build.scan_cases))
    monkeypatch.setattr(duckdb, "connect", guarded(duckdb.connect))  # every connection (analysis.db.connect's)


def pair_counts_kept(project: Project) -> dict:
    return json.loads((project.root / ".evalsite" / "site-cache" / PAIRS_FILE).read_text())["values"]


def test_a_new_runs_compare_page_renders_in_a_child_with_the_same_bytes(project_without_dataset_file, page_children,
                                                                          monkeypatch, tmp_path):
    project = project_without_dataset_file
    build_site(project)
    twin = tmp_path / "twin" / project.root.name  # the site is titled by the project folder's name
    shutil.copytree(project.root, twin)  # built again below with no child at all
    arm_run(project.root, A2, "a", {"i2"}, recorded_dataset(project))
    arm_run(twin, A2, "a", {"i2"}, recorded_dataset(project))
    compared_by: list[int] = []
    compare_runs = compare.compare_runs
    monkeypatch.setattr(compare, "compare_runs", lambda *args, **options: compared_by.append(os.getpid()) or compare_runs(*args, **options))
    duckdb_refused_in_children(monkeypatch)
    build_site(project)
    assert len(page_children) == 2 and compared_by == []  # the run page's child and the compare page's
    assert no_child_left()
    monkeypatch.setattr(build, "forked", lambda work: None)
    build_site(find_project(twin))
    assert compared_by == [os.getpid()]  # the same build without children compares in its turn
    assert tree_bytes(project.root / "site") == tree_bytes(twin / "site")
    assert pair_counts_kept(project) == pair_counts_kept(find_project(twin)) != {}  # the runs table's counts came back
    assert_same_as_a_fresh_build(project, tmp_path)


def test_a_compare_page_whose_baseline_has_no_kept_columns_renders_in_the_build(project_without_dataset_file, page_children,
                                                                                 monkeypatch, tmp_path):
    project = project_without_dataset_file
    build_site(project)
    for kept in (project.root / ".evalsite" / "site-cache").glob(f"*{COLUMNS_SUFFIX}"):
        kept.unlink()  # the comparison would read the baseline's file: never in a child
    arm_run(project.root, A2, "a", {"i2"}, recorded_dataset(project))
    duckdb_refused_in_children(monkeypatch)
    build_site(project)
    assert len(page_children) == 1 and no_child_left()  # the run page's alone
    assert_same_as_a_fresh_build(project, tmp_path)


def test_a_compare_child_killed_before_its_result_leaves_the_page_and_counts_to_the_build(project_without_dataset_file,
                                                                                         page_children, monkeypatch, tmp_path):
    project = project_without_dataset_file
    build_site(project)
    arm_run(project.root, A2, "a", {"i2"}, recorded_dataset(project))
    monkeypatch.setattr(compare, "compare_runs", killed_in_a_child(compare.compare_runs))
    build_site(project)
    assert len(page_children) == 2 and no_child_left()
    assert pair_counts_kept(project) != {}  # the build counted the pair itself
    assert_same_as_a_fresh_build(project, tmp_path)


def test_a_new_runs_page_from_its_child_is_written_after_the_other_pages(small_project, page_children, monkeypatch, tmp_path):
    """The build renders its other pages while the run page's child works, and takes that page last."""
    build_site(small_project)
    arm_run(small_project.root, A2, "a", {"i2"}, recorded_dataset(small_project))
    written: list[str] = []
    run_job = build._run_job
    monkeypatch.setattr(build, "_run_job", lambda kit, writer, job, *args: written.append(job.key) or run_job(kit, writer, job, *args))
    build_site(small_project)
    assert len(page_children) == 1 and no_child_left()
    assert len(written) > 1 and written[-1] == f"run:{A2}"
    assert_same_as_a_fresh_build(small_project, tmp_path)


def test_a_compare_child_that_cannot_read_the_baselines_kept_columns_leaves_the_page_to_the_build(
        project_without_dataset_file, page_children, monkeypatch, tmp_path):
    """The compare child reads the baseline's kept columns itself (the build forks without waiting
    for them); columns it cannot read end it as a lost worker, and the build compares the pair."""
    project = project_without_dataset_file
    build_site(project)
    for kept in (project.root / ".evalsite" / "site-cache").glob(f"*{COLUMNS_SUFFIX}"):
        kept.write_bytes(b"damaged")  # still a regular file: the child is started, then cannot read it
    arm_run(project.root, A2, "a", {"i2"}, recorded_dataset(project))
    compared_by: list[int] = []
    compare_runs = compare.compare_runs
    monkeypatch.setattr(compare, "compare_runs", lambda *args, **options: compared_by.append(os.getpid()) or compare_runs(*args, **options))
    duckdb_refused_in_children(monkeypatch)
    build_site(project)
    assert len(page_children) == 2 and no_child_left()
    assert compared_by == [os.getpid()]  # in the build, once
    assert pair_counts_kept(project) != {}
    assert_same_as_a_fresh_build(project, tmp_path)
