"""Hostile paths for what evalsite writes (``-o``, ``--junit``, ``--summary``, ``init``, the site
folder): each refusal is one line naming the culprit, never a traceback, and overwrites nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


def project_files(root: Path) -> dict[str, bytes]:
    """Every file of the project's inputs: evalsite.toml, runs/, data/ and experiments/."""
    files = [root / "evalsite.toml", *(path for folder in ("runs", "data", "experiments") for path in (root / folder).rglob("*"))]
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in files if path.is_file()}


@pytest.mark.parametrize("command, culprit", [
    (("leaderboard", "-o", "runs/RUN/run.json"), "-o would write into the project's runs/ folder"),
    (("show", "RUN", "-o", "runs/RUN/end.json"), "-o would write into the project's runs/ folder"),
    (("leaderboard", "-o", "data/rows.csv"), "-o would write into the project's data/ folder"),
    (("leaderboard", "-o", "link.json"), "-o would write into the project's runs/ folder"),
    (("check-claims", "--junit", "data/d.jsonl"), "--junit would write into the project's data/ folder"),
    (("compare", "RUN", "--summary", "experiments/e.yaml"), "--summary would write into the project's experiments/ folder"),
    (("check-claims", "--summary", "evalsite.toml"), "--summary would overwrite the project's evalsite.toml"),
])
def test_a_file_option_naming_one_of_the_project_s_inputs_is_refused_and_overwrites_nothing(hostile_project, cli, command, culprit):
    """-o replaced a run's run.json (the run vanished from every listing) or a .csv/.json dataset with a
    leaderboard; --junit replaced a dataset with XML; --summary appended markdown to evalsite.toml or a
    manifest, so every later command failed on invalid TOML. All silently, exit 0."""
    run = sorted(path.name for path in (hostile_project / "runs").iterdir())[0]
    (hostile_project / "evalsite.toml").write_text("[site]\nredact = false\n")
    (hostile_project / "data/rows.csv").write_text("id,input\nq0,hello\n")
    (hostile_project / "link.json").symlink_to(hostile_project / "runs" / run / "run.json")
    before = project_files(hostile_project)
    result = cli(*(part.replace("RUN", run) for part in command))
    path = next(part for part in command if "/" in part or "." in part).replace("RUN", run)
    assert result.exit_code == 1 and result.output.startswith(f"Error: {path}: {culprit}"), result.output
    assert len(result.output.splitlines()) == 1
    assert project_files(hostile_project) == before


@pytest.mark.parametrize("plant, message", [
    ({"p": "dangling"}, "p: exists and is not a folder"),
    ({"p/data": "file"}, "p/data: exists and is not a folder"),
    ({"p/runs": "file"}, "p/runs: exists and is not a folder"),
    ({"p/evalsite.toml": "dangling"}, "p/evalsite.toml already exists"),
    ({"f": "file"}, "f/p/runs: evalsite init cannot write it: Not a directory"),
])
def test_init_where_something_is_in_the_way_writes_nothing_and_is_one_line(cli, tmp_path, monkeypatch, plant, message):
    """A dangling symlink (the folder, or a file of the scaffold) or a file where the scaffold makes a
    folder was a FileExistsError or NotADirectoryError traceback, after part of the scaffold was written;
    a dangling evalsite.toml was written through, to wherever it pointed."""
    monkeypatch.chdir(tmp_path)
    for name, kind in plant.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        if kind == "file":
            (tmp_path / name).write_text("mine\n")
        else:
            (tmp_path / name).symlink_to(tmp_path / "elsewhere" / "x")
    before = sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*"))
    result = cli("init", "f/p" if "f" in plant else "p")
    assert result.exit_code == 1 and result.output.startswith(f"Error: {message}") and len(result.output.splitlines()) == 1
    assert sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("plant, out, message", [
    ("notes.txt", "notes.txt/site", "{root}/notes.txt/site: cannot make the folder: Not a directory"),
    ("site/runs", "site", "{root}/site/runs: cannot make the folder: File exists"),
    ("site/runs.html/", "site", "{root}/site/runs.html: cannot write: Is a directory"),
])
def test_a_file_or_folder_in_the_way_of_the_site_is_one_line_and_stays(hostile_project, cli, plant, out, message):
    """--out under a file, a file where the site has a folder (site/runs) or a folder where it has a page
    was a NotADirectoryError, FileExistsError or IsADirectoryError traceback (also from `serve`)."""
    assert cli("build").exit_code == 0
    target = hostile_project / plant.rstrip("/")
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink(missing_ok=True)
    if plant.endswith("/"):
        (target / "mine").mkdir(parents=True)
    else:
        target.write_text("mine\n")
    result = cli("build", "--full", "--out", out)
    root = hostile_project.resolve()
    assert result.exit_code == 1 and len(result.output.splitlines()) == 1, result.output
    assert result.output.startswith(f"Error: {message.format(root=root)}; move what is in the way or choose another --out")
    assert (target / "mine").is_dir() if plant.endswith("/") else target.read_text() == "mine\n"
    assert not list(root.glob("site/.*.tmp"))


def test_two_pages_mapping_to_one_file_are_both_named(hostile_project, cli):
    """Experiments 'x y' and 'x-y' both become experiments/x-y.html: the refusal named only one."""
    manifest = (hostile_project / "experiments" / "e.yaml").read_text()
    for file, name in (("a.yaml", "x y"), ("b.yaml", "x-y")):
        (hostile_project / "experiments" / file).write_text(manifest.replace("name: e", f"name: {name}", 1))
    result = cli("build")
    assert result.exit_code == 1
    assert result.output == ("Error: experiments/x-y.html: written by two pages (experiment:x y and experiment:x-y); "
                             "rename one of them\n")


def test_a_page_a_failed_build_wrote_is_deleted_by_the_next_build_once_no_page_makes_it(hostile_project, cli):
    """A build that fails part-way had written pages no build record named: later builds never
    deleted them (here experiments/x-y.html, written for 'x y' before 'x-y' was refused)."""
    manifest = (hostile_project / "experiments" / "e.yaml").read_text()
    for file, name in (("a.yaml", "x y"), ("b.yaml", "x-y")):
        (hostile_project / "experiments" / file).write_text(manifest.replace("name: e", f"name: {name}", 1))
    assert cli("build").exit_code == 1
    assert (hostile_project / "site" / "experiments" / "x-y.html").is_file()
    for file in ("a.yaml", "b.yaml"):
        (hostile_project / "experiments" / file).unlink()
    result = cli("build")
    assert result.exit_code == 0, result.output
    assert not (hostile_project / "site" / "experiments" / "x-y.html").exists()
    assert {path.name.split(".")[0] for path in (hostile_project / "site" / "experiments").iterdir()} == {"e"}
