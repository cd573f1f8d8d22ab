"""Every reading command over runs on object storage (a local moto S3 server): `runs`, `show`,
`compare`, `query` and `build` read the store and print what they print over the local runs."""

from __future__ import annotations

import shutil

import pytest
from analysis_support import example_runs, invoke, json_of, project, run_id  # noqa: F401

pytest.importorskip("s3fs", reason="the S3 store needs the optional extra: pip install 'evalsite[s3]'")
from test_store_s3 import s3  # noqa: E402, F401  (the moto server fixture)

from evalsite.runlog.store import read_cases  # noqa: E402


def local_and_remote(project, s3, monkeypatch, *commands: tuple[str, ...]) -> tuple[list, list]:
    """Each command's --json output over the local runs, then over the store alone."""
    local = [json_of(*command) for command in commands]
    json_of("compact", "--to", s3)
    shutil.rmtree(project / "runs")  # nothing local left: only the store has the runs
    monkeypatch.setenv("EVALSITE_RUNS", s3)
    return local, [json_of(*command) for command in commands]


def without_paths(value):
    """The same report without local file paths (a run's folder differs between the two)."""
    if isinstance(value, dict):
        return {k: without_paths(v) for k, v in value.items() if k not in ("directory", "path", "parquet")}
    if isinstance(value, list):
        return [without_paths(v) for v in value]
    return value


def test_runs_show_compare_and_query_read_the_store(project, s3, monkeypatch):
    careful, sampler = run_id(project, "careful"), run_id(project, "sampler")
    sql = "SELECT run_id, count(*) AS n, sum(score) AS total FROM cases GROUP BY ALL ORDER BY ALL"
    local, remote = local_and_remote(project, s3, monkeypatch, ("runs",), ("show", careful),
                                     ("compare", careful, "--baseline", sampler), ("query", sql))
    assert not (project / "runs").exists()
    assert len(remote[0]) == 3 and without_paths(remote[0]) == without_paths(local[0])
    assert without_paths(remote[1]) == without_paths(local[1])
    assert without_paths(remote[2]) == without_paths(local[2])
    assert remote[3] == local[3]


def test_build_renders_the_runs_of_the_store(project, s3, monkeypatch):
    careful = run_id(project, "careful")
    local = json_of("build", "--out", "site-local")
    json_of("compact", "--to", s3)
    shutil.rmtree(project / "runs")
    monkeypatch.setenv("EVALSITE_RUNS", s3)
    remote = json_of("build", "--out", "site-remote")
    local_pages = sorted(p.relative_to(project / "site-local") for p in (project / "site-local").rglob("*.html"))
    remote_pages = sorted(p.relative_to(project / "site-remote") for p in (project / "site-remote").rglob("*.html"))
    assert remote_pages == local_pages and len(remote_pages) > 3, (local, remote)
    page = next(p for p in remote_pages if careful in str(p))
    assert "careful" in (project / "site-remote" / page).read_text(encoding="utf-8")


def test_the_mirror_writes_each_runs_cases_once_per_version(project, s3, monkeypatch):
    json_of("compact", "--to", s3)
    monkeypatch.setenv("EVALSITE_RUNS", s3)
    json_of("runs")
    (mirrored,) = [p for p in (project / ".evalsite" / "store").iterdir()]
    folders = sorted(p for p in mirrored.iterdir() if p.is_dir())
    assert len(folders) == 3
    local = {c.item_id for c in read_cases(project / "runs" / folders[0].name / "cases.jsonl")}
    assert {c.item_id for c in read_cases(folders[0] / "cases.jsonl")} == local
    written = {p: (p / "cases.jsonl").stat().st_mtime_ns for p in folders}
    from evalsite.analysis import remote

    remote._REFRESHED.clear()  # as a new process would
    json_of("runs")
    assert {p: (p / "cases.jsonl").stat().st_mtime_ns for p in folders} == written


def test_the_python_api_reads_the_store(project, s3, monkeypatch):
    import evalsite

    local = {run.run_id: len(run.cases) for run in evalsite.load_runs()}
    json_of("compact", "--to", s3)
    shutil.rmtree(project / "runs")
    monkeypatch.setenv("EVALSITE_RUNS", s3)
    from evalsite.analysis import remote

    remote._REFRESHED.clear()  # a fresh process
    assert {run.run_id: len(run.cases) for run in evalsite.load_runs()} == local
