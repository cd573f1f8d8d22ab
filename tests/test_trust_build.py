"""A hostile site folder or project cannot make `evalsite build` delete, overwrite or publish files
outside the site (issue 15, defects 1, 9 and 10 of the build)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sitekit import case, write_run

from evalsite.errors import ProjectError, SiteError
from evalsite.project import find_project
from evalsite.site import build_site
from evalsite.site.output import BUILD_RECORD


@pytest.fixture
def one_run_project(tmp_path):
    """A Project with one dataset row, one experiment, a python module and one written run."""
    root = tmp_path / "p"
    (root / "data").mkdir(parents=True)
    (root / "data/data.jsonl").write_text('{"input": "q", "expected": "ok"}\n')
    (root / "experiments").mkdir()
    (root / "experiments/p.yaml").write_text("name: p\n")
    (root / "sut.py").write_text("def f(x):\n    return x\n")
    write_run(root / "runs", "20260101T000000Z-a-0000", [case("i1")])
    return find_project(root)


def tamper(site: Path, names: list[str]) -> None:
    record = json.loads((site / BUILD_RECORD).read_text())
    record["jobs"]["stale-job"] = {"input_hash": "x", "files": names}
    (site / BUILD_RECORD).write_text(json.dumps(record))


def test_a_tampered_build_record_deletes_nothing_outside_the_site(one_run_project, tmp_path):
    build_site(one_run_project)
    site = one_run_project.root / "site"
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (tmp_path / "lonely").mkdir()
    (tmp_path / "lonely/f.txt").write_text("keep me too")
    tamper(site, ["../experiments/p.yaml", "../sut.py", str(outside), "../../lonely/f.txt", "runs/../../sut.py"])
    report = build_site(one_run_project)
    assert (one_run_project.root / "experiments/p.yaml").read_text() == "name: p\n"
    assert (one_run_project.root / "sut.py").is_file() and outside.read_text() == "keep me"
    assert (tmp_path / "lonely/f.txt").is_file()
    assert any("../sut.py" in w and "ignoring" in w for w in report.warnings)
    assert "stale-job" not in json.loads((site / BUILD_RECORD).read_text())["jobs"]


def test_a_symlinked_folder_in_the_site_leads_no_deletion_or_write_outside(one_run_project, tmp_path):
    build_site(one_run_project)
    site = one_run_project.root / "site"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "x.html").write_text("precious")
    os.symlink(victim, site / "linked")
    tamper(site, ["linked/x.html"])
    build_site(one_run_project)
    assert (victim / "x.html").read_text() == "precious"
    # A page folder replaced by a symlink to outside is refused, not written through.
    runs = site / "runs"
    for child in runs.iterdir():
        child.unlink()
    runs.rmdir()
    os.symlink(victim, runs)
    with pytest.raises(SiteError, match="symlink"):
        build_site(one_run_project, full=True)
    assert sorted(p.name for p in victim.iterdir()) == ["x.html"]


def test_a_planted_symlink_at_the_build_record_is_replaced_not_written_through(one_run_project, tmp_path):
    build_site(one_run_project)
    site = one_run_project.root / "site"
    target = tmp_path / "target.txt"
    target.write_text(json.dumps({"record_version": 1, "jobs": {}}))
    (site / BUILD_RECORD).unlink()
    os.symlink(target, site / BUILD_RECORD)
    build_site(one_run_project)
    assert json.loads(target.read_text()) == {"record_version": 1, "jobs": {}}
    assert not (site / BUILD_RECORD).is_symlink()


def test_out_through_a_missing_folder_does_not_bypass_the_non_empty_refusal(one_run_project, monkeypatch):
    monkeypatch.chdir(one_run_project.root)
    with pytest.raises(SiteError, match="would mix with the project's runs/ folder"):
        build_site(one_run_project, Path("missing/../runs"))
    assert not (one_run_project.root / "missing").exists() and not (one_run_project.root / "runs/index.html").exists()


def test_site_out_setting_must_stay_inside_the_project(one_run_project, tmp_path):
    (one_run_project.root / "evalsite.toml").write_text('[site]\nout = "../elsewhere"\n')
    with pytest.raises(ProjectError, match="outside the project"):
        build_site(find_project(one_run_project.root))
    assert not (tmp_path / "elsewhere").exists()
    (one_run_project.root / "evalsite.toml").write_text('[site]\nout = "."\n')
    with pytest.raises(SiteError, match="whole project"):
        build_site(find_project(one_run_project.root))


def test_a_first_build_killed_before_its_record_does_not_block_the_next(one_run_project, monkeypatch):
    from evalsite.site import build as build_module

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # stands for a SIGKILL after the first pages were written

    real = build_module._run_job
    calls = []

    def first_then_killed(kit, writer, job, *rest):
        if calls:
            killed()
        calls.append(job.key)
        real(kit, writer, job, *rest)

    monkeypatch.setattr(build_module, "_run_job", first_then_killed)
    with pytest.raises(KeyboardInterrupt):
        build_site(one_run_project)
    site = one_run_project.root / "site"
    partial = list(site.rglob("*.html"))
    assert len(calls) == 1 and len(partial) == 1  # the first job wrote its page, then the kill
    monkeypatch.setattr(build_module, "_run_job", real)
    report = build_site(one_run_project)
    assert (site / "index.html").is_file() and report.pages > len(partial)


SECRET = "CI_SECRET_TOKEN_value_0123456789"


@pytest.fixture
def secret_file(tmp_path) -> Path:
    """Stands for /proc/self/environ or /etc/passwd: a file outside the project holding a secret."""
    path = tmp_path / "environ"
    path.write_text(f"name: leaked\nAWS={SECRET}\n# {SECRET}\n")
    return path


def site_text(site: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in site.rglob("*") if p.is_file())


def test_symlinks_to_outside_the_project_never_reach_the_site(one_run_project, secret_file, tmp_path):
    root = one_run_project.root
    for folder in ("reports", "static", "templates"):
        (root / folder).mkdir()
    os.symlink(secret_file, root / "reports/x.md")
    os.symlink(secret_file, root / "static/x.css")
    os.symlink(secret_file, root / "static/style.css")  # would replace a built-in asset
    os.symlink(secret_file, root / "templates/base.html")  # would replace a built-in template
    os.symlink(secret_file, root / "experiments/x.yaml")
    (tmp_path / "outside-reports").mkdir()
    (tmp_path / "outside-reports/y.md").write_text(f"# {SECRET}\n")
    os.symlink(tmp_path / "outside-reports", root / "reports/linked")
    report = build_site(one_run_project)
    site = root / "site"
    assert SECRET not in site_text(site)
    assert not (site / "reports/x.html").exists() and not (site / "experiments/leaked.html").exists()
    assert (site / "index.html").is_file()
    refused = " ".join(report.warnings)
    for name in ("reports/x.md", "static/x.css", "static/style.css", "templates/base.html", "experiments/x.yaml"):
        assert f"{name}: a symlink to outside the project" in refused


def test_symlinks_inside_the_project_are_followed(one_run_project):
    root = one_run_project.root
    (root / "reports").mkdir()
    (root / "notes").mkdir()
    (root / "notes/real.md").write_text("# Findings inside\n\nPlain text.\n")
    os.symlink(root / "notes/real.md", root / "reports/real.md")
    report = build_site(one_run_project)
    assert "Findings inside" in (root / "site/reports/real.html").read_text()
    assert not any("symlink" in w for w in report.warnings)



def test_a_run_folder_symlinked_from_outside_is_left_out(one_run_project, tmp_path):
    elsewhere = write_run(tmp_path / "other-runs", "20260105T000000Z-x-0000", [case("i1", output=SECRET)], arm="x")
    os.symlink(elsewhere, one_run_project.runs_dir / elsewhere.name)
    inside = write_run(one_run_project.runs_dir, "20260106T000000Z-y-0000", [case("i1")], arm="y")
    os.symlink(tmp_path / "environ-like", inside.parent / "20260107T000000Z-z-0000")
    report = build_site(one_run_project)
    site = one_run_project.root / "site"
    assert SECRET not in site_text(site) and not (site / f"runs/{elsewhere.name}.html").exists()
    assert (site / f"runs/{inside.name}.html").is_file()
    assert any(f"runs/{elsewhere.name}/run.json: a symlink to outside the project" in w for w in report.warnings)
