"""What a forged or symlinked run file can make `evalsite build` publish (issue 32, Medium 5 and Low 8):
a run file that is a symlink is never read for the site, and paths made of run-log values stay
inside the project."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sitekit import case, write_run

SECRET = "SECRET_0123456789_abcdef"
RUN = "20260102T000000Z-b-0000"


@pytest.fixture
def published_runs(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "p"
    (root / "data").mkdir(parents=True)
    (root / "data/data.jsonl").write_text('{"id": "i1", "input": "q", "expected": "ok"}\n')
    write_run(root / "runs", "20260101T000000Z-a-0000", [case("i1")])
    monkeypatch.chdir(root)
    return root


def site_text(root: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in (root / "site").rglob("*") if p.is_file())


def test_an_end_json_symlinked_to_a_json_file_outside_is_not_quoted(cli, published_runs, tmp_path):
    outside = tmp_path / "config.json"
    outside.write_text(json.dumps({"status": SECRET, "auths": {"registry": SECRET}}))
    directory = write_run(published_runs / "runs", RUN, [case("i1")], arm="b")
    (directory / "end.json").unlink()
    os.symlink(outside, directory / "end.json")
    report = cli.json("build")
    assert SECRET not in site_text(published_runs) and SECRET not in json.dumps(report)
    assert f"runs/{RUN}/end.json: a symlink to outside the project; left out of the site" in report["warnings"]


@pytest.mark.parametrize("name", ["run.json", "end.json", "cases.jsonl"])
def test_a_run_file_symlinked_inside_the_project_skips_the_run_with_the_reason(cli, published_runs, name):
    directory = write_run(published_runs / "runs", RUN, [case("i1", output=SECRET)], arm="b")
    (published_runs / "notes").mkdir()
    planted = published_runs / "notes" / name
    planted.write_bytes((directory / name).read_bytes().replace(b'"completed"', f'"{SECRET}"'.encode()))
    (directory / name).unlink()
    os.symlink(planted, directory / name)
    report = cli.json("build")
    assert SECRET not in site_text(published_runs) and SECRET not in json.dumps(report)
    assert f"{RUN}/{name}: a symlink; run files are read only as regular files" in report["skipped_runs"]
    assert not (published_runs / f"site/runs/{RUN}.html").exists() and (published_runs / "site/runs/20260101T000000Z-a-0000.html").is_file()
    assert RUN in (published_runs / "site/index.html").read_text()  # listed among the skipped runs, with its reason


def test_an_experiment_named_out_of_the_project_publishes_no_artifact(cli, published_runs, tmp_path):
    forged = "../../x/results/e"
    folder = tmp_path / "x/results/e/b"  # where results/<experiment>/<batch> leads from the project
    folder.mkdir(parents=True)
    (folder / "secret.txt").write_text(SECRET)
    (folder / "end.json").write_text(json.dumps({"artifacts": {"leak": {"path": "secret.txt", "type": "text"}}}))
    (published_runs / "results").mkdir()  # any study run makes it
    assert (published_runs / "results" / forged / "b" / "end.json").resolve() == (folder / "end.json").resolve()
    write_run(published_runs / "runs", RUN, [case("i1")], arm="b", experiment=forged)
    report = cli.json("build")
    assert SECRET not in site_text(published_runs)
    assert not list((published_runs / "site").rglob("*leak*"))
    note = f"runs/{RUN}/run.json: experiment {forged!r}, batch 'b' is not a folder under results/; its artifacts are not published"
    assert note in report["warnings"]


def test_the_experiment_artifacts_of_a_plain_name_are_still_published(cli, published_runs):
    folder = published_runs / "results/exp/b"
    folder.mkdir(parents=True)
    (folder / "plot.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><text>kept</text></svg>')
    (folder / "end.json").write_text(json.dumps({"artifacts": {"plot": {"path": "plot.svg", "type": "plot"}}}))
    report = cli.json("build")
    assert (published_runs / "site/experiments/exp/artifacts/plot.svg").is_file()
    assert not any("results/" in w for w in report["warnings"])
