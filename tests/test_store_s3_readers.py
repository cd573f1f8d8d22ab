"""Every reading command over runs on object storage (a local moto S3 server): `runs`, `show`,
`compare`, `query` and `build` read the store and print what they print over the local runs."""

from __future__ import annotations

import shutil

import pytest
from analysis_support import run_id

from evalsite.runlog.store import read_cases

pytest.importorskip("s3fs", reason="the S3 store needs the optional extra: pip install 'evalsite[s3]'")


def local_and_remote(cli, project, s3, monkeypatch, *commands: tuple[str, ...]) -> tuple[list, list]:
    """Each command's --json output over the local runs, then over the store alone."""
    local = [cli.json(*command) for command in commands]
    cli.json("compact", "--to", s3)
    shutil.rmtree(project / "runs")  # nothing local left: only the store has the runs
    monkeypatch.setenv("EVALSITE_RUNS", s3)
    return local, [cli.json(*command) for command in commands]


def without_paths(value):
    """The same report without local file paths (a run's folder differs between the two)."""
    if isinstance(value, dict):
        return {k: without_paths(v) for k, v in value.items() if k not in ("directory", "path", "parquet")}
    if isinstance(value, list):
        return [without_paths(v) for v in value]
    return value


def test_runs_show_compare_and_query_read_the_store(cli, example_with_runs, s3, monkeypatch):
    careful, sampler = run_id(example_with_runs, "careful"), run_id(example_with_runs, "sampler")
    sql = "SELECT run_id, count(*) AS n, sum(score) AS total FROM cases GROUP BY ALL ORDER BY ALL"
    local, remote = local_and_remote(cli, example_with_runs, s3, monkeypatch, ("runs",), ("show", careful),
                                     ("compare", careful, "--baseline", sampler), ("query", sql))
    assert not (example_with_runs / "runs").exists()
    assert len(remote[0]) == 3 and without_paths(remote[0]) == without_paths(local[0])
    assert without_paths(remote[1]) == without_paths(local[1])
    assert without_paths(remote[2]) == without_paths(local[2])
    assert remote[3] == local[3]


def test_build_renders_the_runs_of_the_store(cli, example_with_runs, s3, monkeypatch):
    careful = run_id(example_with_runs, "careful")
    local = cli.json("build", "--out", "site-local")
    cli.json("compact", "--to", s3)
    shutil.rmtree(example_with_runs / "runs")
    monkeypatch.setenv("EVALSITE_RUNS", s3)
    remote = cli.json("build", "--out", "site-remote")
    local_pages = sorted(p.relative_to(example_with_runs / "site-local") for p in (example_with_runs / "site-local").rglob("*.html"))
    remote_pages = sorted(p.relative_to(example_with_runs / "site-remote") for p in (example_with_runs / "site-remote").rglob("*.html"))
    assert remote_pages == local_pages and len(remote_pages) > 3, (local, remote)
    page = next(p for p in remote_pages if careful in str(p))
    assert "careful" in (example_with_runs / "site-remote" / page).read_text(encoding="utf-8")


def test_the_mirror_writes_each_runs_cases_once_per_version(cli, example_with_runs, s3, monkeypatch):
    cli.json("compact", "--to", s3)
    monkeypatch.setenv("EVALSITE_RUNS", s3)
    cli.json("runs")
    (mirrored,) = [p for p in (example_with_runs / ".evalsite" / "store").iterdir()]
    folders = sorted(p for p in mirrored.iterdir() if p.is_dir())
    assert len(folders) == 3
    local = {c.item_id for c in read_cases(example_with_runs / "runs" / folders[0].name / "cases.jsonl")}
    assert {c.item_id for c in read_cases(folders[0] / "cases.jsonl")} == local
    written = {p: (p / "cases.jsonl").stat().st_mtime_ns for p in folders}
    from evalsite.analysis import remote

    remote._REFRESHED.clear()  # as a new process would
    cli.json("runs")
    assert {p: (p / "cases.jsonl").stat().st_mtime_ns for p in folders} == written


def test_the_python_api_reads_the_store(cli, example_with_runs, s3, monkeypatch):
    import evalsite

    local = {run.run_id: len(run.cases) for run in evalsite.load_runs()}
    cli.json("compact", "--to", s3)
    shutil.rmtree(example_with_runs / "runs")
    monkeypatch.setenv("EVALSITE_RUNS", s3)
    from evalsite.analysis import remote

    remote._REFRESHED.clear()  # a fresh process
    assert {run.run_id: len(run.cases) for run in evalsite.load_runs()} == local
