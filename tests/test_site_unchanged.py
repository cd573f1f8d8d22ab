"""A nothing-new build is recognised before the renderer is loaded (evalsite/site/unchanged.py): it
reports exactly what a build that renders nothing reports, and any change to what a build reads or
wrote sends the next build through the full check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from sitekit import case, write_run

from evalsite.experiment.datasets import dataset_id, item_identity
from evalsite.project import Project, find_project
from evalsite.site import build, build_site, unchanged

ITEMS = [f"i{n}" for n in range(6)]


@pytest.fixture()
def two_arm_site(tmp_path, monkeypatch) -> Project:
    """Two arms on one dataset, with a report; files may be trusted as soon as they are written."""
    monkeypatch.setattr(unchanged, "RACY_SECONDS", 0.0)
    root = tmp_path / "p"
    rows = [{"id": item, "input": f"Q{item}", "expected": "ok"} for item in ITEMS]
    (root / "data").mkdir(parents=True)
    (root / "data" / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    data_id = dataset_id("data", item_identity(rows, "data/data.jsonl"))
    for run_id, arm, failing in (("20260101T000001Z-a-0001", "a", {"i1"}), ("20260101T000002Z-b-0001", "b", {"i2", "i3"})):
        cases = [case(item, passed=item not in failing, score=0.0 if item in failing else 1.0) for item in ITEMS]
        write_run(root / "runs", run_id, cases, arm=arm, dataset_id=data_id, config={"arm_id": arm, "params": {}})
    (root / "reports").mkdir()
    (root / "reports" / "notes.md").write_text("# Notes\n", encoding="utf-8")
    return find_project(root)


def without_seconds(report):
    return replace(report, seconds=0.0)


def test_a_nothing_new_build_reports_what_the_full_check_reports(two_arm_site):
    first = build_site(two_arm_site)
    assert first.rendered > 0
    quick = unchanged.recorded_report(two_arm_site, None, None)
    assert quick is not None
    checked = build.build_site(two_arm_site)  # the full check: scans, lists every page, renders none
    assert checked.rendered == 0
    assert without_seconds(quick) == without_seconds(checked)
    assert without_seconds(build_site(two_arm_site)) == without_seconds(checked)


@pytest.mark.parametrize("change", ["report", "new data file", "settings", "run deleted", "page deleted", "page edited"])
def test_any_change_sends_the_next_build_through_the_full_check(two_arm_site, change):
    build_site(two_arm_site)
    assert unchanged.recorded_report(two_arm_site, None, None) is not None
    root = two_arm_site.root
    if change == "report":
        with open(root / "reports" / "notes.md", "a", encoding="utf-8") as handle:
            handle.write("more\n")
    elif change == "new data file":
        (root / "data" / "other.jsonl").write_text("", encoding="utf-8")
    elif change == "settings":
        (root / "evalsite.toml").write_text('[site]\ntitle = "T"\n', encoding="utf-8")
        two_arm_site = find_project(root)
    elif change == "run deleted":
        for path in (root / "runs" / "20260101T000002Z-b-0001").iterdir():
            path.unlink()
        (root / "runs" / "20260101T000002Z-b-0001").rmdir()
    elif change == "page deleted":
        (root / "site" / "index.html").unlink()
    else:
        page = root / "site" / "index.html"
        before = page.stat()
        page.write_bytes(page.read_bytes())  # same bytes, a new write (its time set apart from the build's tick)
        os.utime(page, ns=(before.st_atime_ns, before.st_mtime_ns - 10**9))
    assert unchanged.recorded_report(two_arm_site, None, None) is None
    again = build_site(two_arm_site)
    assert again.rendered > 0 or change in ("new data file", "page edited")  # those change no page
    assert unchanged.recorded_report(two_arm_site, None, None) is not None


def test_other_options_and_full_builds_do_not_use_the_record(two_arm_site, tmp_path):
    build_site(two_arm_site)
    assert unchanged.recorded_report(two_arm_site, None, True) is None  # --redact
    assert unchanged.recorded_report(two_arm_site, tmp_path / "elsewhere", None) is None  # --out
    assert build_site(two_arm_site, full=True).rendered > 0


def test_a_build_over_files_changed_just_before_it_records_nothing(two_arm_site, monkeypatch):
    monkeypatch.setattr(unchanged, "RACY_SECONDS", 3600.0)  # every file counts as changed in the same tick
    build_site(two_arm_site)
    assert not (two_arm_site.root / unchanged.RECORD).exists()
    assert unchanged.recorded_report(two_arm_site, None, None) is None


def loaded_by_build(project: Project, args: list[str]) -> tuple[set[str], str]:
    """The top-level modules ``evalsite build ARGS`` loads in a fresh interpreter, and its output."""
    probe = ("import json, sys\nfrom evalsite.cli import main\n"
             f"try:\n    main({['build', *args]!r}, standalone_mode=False)\nfinally:\n"
             "    print('LOADED ' + json.dumps(sorted({name.split('.')[0] for name in sys.modules})))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=project.root, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    output, _, loaded = done.stdout.rpartition("LOADED ")
    return set(json.loads(loaded)), output


def test_a_nothing_new_evalsite_build_loads_no_renderer(two_arm_site):
    build_site(two_arm_site)
    loaded, output = loaded_by_build(two_arm_site, [])
    assert "(0 jobs rendered" in output
    assert not loaded & {"jinja2", "duckdb", "numpy", "pyarrow", "scipy", "yaml", "markdown_it"}
    assert Path(two_arm_site.root / "site" / "index.html").is_file()


def test_a_rebuild_served_from_the_cache_loads_no_scipy(two_arm_site):
    """A run's file touched: the build goes through the full check, renders from the site's cache
    and computes no statistic, so it never imports scipy.special (stats/distributions.py imports it
    where a figure is computed); a build that computes one does (tests/test_cli_lazy.py)."""
    build_site(two_arm_site)
    os.utime(two_arm_site.root / "runs" / "20260101T000002Z-b-0001" / "end.json")
    loaded, output = loaded_by_build(two_arm_site, ["--json"])
    assert json.loads(output)["rendered"] == 0
    assert "numpy" in loaded and "scipy" not in loaded


def test_a_symlinked_evalsite_folder_is_neither_read_nor_written_through(two_arm_site, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (two_arm_site.root / ".evalsite").symlink_to(elsewhere, target_is_directory=True)
    build_site(two_arm_site)
    assert not (elsewhere / Path(unchanged.RECORD).name).exists()
    assert unchanged.recorded_report(two_arm_site, None, None) is None
