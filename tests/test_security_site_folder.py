"""The site folder: `evalsite build` deletes no folder it cannot prove it made, creates nothing through
a symlinked folder and keeps no planted symlink as a page (issue 32, Low 8)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sitekit import case, write_run

GENERATOR = '<html><head><meta name="generator" content="evalsite 0.1"></head></html>'
SECRET = "SECRET_0123456789_abcdef"


@pytest.fixture
def planted_site(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "p"
    (root / "data").mkdir(parents=True)
    (root / "data/data.jsonl").write_text('{"id": "i1", "input": "q", "expected": "ok"}\n')
    write_run(root / "runs", "20260101T000000Z-a-0000", [case("i1")])
    (root / "reports").mkdir()
    (root / "reports/findings.md").write_text("# Findings\n\nNot a site page.\n")
    monkeypatch.chdir(root)
    return root


def test_site_out_naming_an_input_folder_is_refused_and_deletes_nothing(cli, planted_site):
    (planted_site / "evalsite.toml").write_text('[site]\nout = "reports"\n')
    (planted_site / "reports/index.html").write_text(GENERATOR)  # planted: "a site an older evalsite built"
    result = cli("build")
    assert result.exit_code == 1
    assert f"Error: {planted_site / 'reports'}: the site folder would mix with the project's reports/ folder, which the build reads"\
        in result.output
    assert sorted(p.name for p in (planted_site / "reports").iterdir()) == ["findings.md", "index.html"]


@pytest.mark.parametrize("out", ["runs", "data/site", "experiments", ".evalsite", "templates"])
def test_every_input_folder_or_one_inside_it_is_refused_as_the_site_folder(cli, planted_site, out):
    before = sorted(str(p) for p in planted_site.rglob("*"))
    result = cli("build", "--out", out)
    assert result.exit_code == 1 and "the site folder would mix with the project's" in result.output
    assert sorted(str(p) for p in planted_site.rglob("*")) == before


def test_a_folder_with_an_evalsite_index_but_no_record_is_refused_not_deleted(cli, planted_site):
    other = planted_site / "docs"
    other.mkdir()
    (other / "index.html").write_text(GENERATOR)
    (other / "notes.txt").write_text("mine")
    result = cli("build", "--out", "docs")
    assert result.exit_code == 1 and "folder is not empty and was not built by evalsite" in result.output
    assert (other / "notes.txt").read_text() == "mine" and (other / "index.html").read_text() == GENERATOR


def test_a_symlinked_folder_in_the_site_makes_no_folder_outside_it(cli, planted_site, tmp_path):
    assert cli("build").exit_code == 0
    site = planted_site / "site"
    victim = tmp_path / "victim"
    victim.mkdir()
    for child in sorted((site / "data").rglob("*"), reverse=True):
        child.rmdir() if child.is_dir() else child.unlink()
    (site / "data").rmdir()
    os.symlink(victim, site / "data")
    result = cli("build", "--full")
    assert result.exit_code == 1 and "Error: refusing to write 'data/" in result.output
    assert "a symlink in the site folder leads outside it" in result.output
    assert list(victim.iterdir()) == []


def test_a_symlink_planted_at_a_page_is_rendered_again_not_kept(cli, planted_site, tmp_path):
    assert cli("build").exit_code == 0
    secret = tmp_path / "passwd"
    secret.write_text(SECRET)
    site = planted_site / "site"
    for name in ("index.html", "runs.html"):
        (site / name).unlink()
        os.symlink(secret, site / name)
    report = cli.json("build")  # nothing changed: without the check both jobs count as fresh
    assert report["rendered"] >= 2
    for name in ("index.html", "runs.html"):
        assert not (site / name).is_symlink() and SECRET not in (site / name).read_text()
    assert secret.read_text() == SECRET
    assert json.loads((site / ".evalsite-build.json").read_text())["jobs"]


def test_a_symlink_planted_at_any_site_or_cache_path_changes_nothing_outside(cli, planted_site, tmp_path):
    """A fuzz over the paths a build writes: each one in turn (every eighth, in order) replaced by a
    symlink to a file or folder outside, then an incremental and a full build: nothing outside
    changes and each build either succeeds or stops with one `Error:` line."""
    assert cli("build").exit_code == 0
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "f").write_text("precious")
    cache = planted_site / ".evalsite/site-cache"
    planted = sorted([*(planted_site / "site").rglob("*"), *cache.rglob("*"), cache, planted_site / "site/runs"])[::8]
    assert len(planted) > 6
    for path in planted:
        if not path.exists():
            continue
        if path.is_dir():
            os.rename(path, tmp_path / "moved")
            os.symlink(victim, path)
        else:
            path.unlink()
            os.symlink(victim / "f", path)
        for args in (("build",), ("build", "--full")):
            result = cli(*args)
            assert result.exit_code == 0 or result.output.startswith("Error: "), (path, result.output)
            assert sorted(p.name for p in victim.iterdir()) == ["f"] and (victim / "f").read_text() == "precious", path
        path.unlink()
        if (tmp_path / "moved").exists():
            os.rename(tmp_path / "moved", path)
