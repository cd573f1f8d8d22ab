"""`evalsite docs`: the documentation that ships with the package, listed and printed in any folder;
the wheel carries it."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from evalsite.cli.docs import docs_dir

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.fixture
def outside_any_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_checkout_reads_the_repository_docs():
    assert docs_dir() == DOCS


def test_the_list_names_every_page_with_its_heading_the_guide_first(cli, outside_any_project):
    shown = cli("docs")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0].split() == ["guide", "Guide"]
    names = [line.split()[0] for line in lines]
    assert sorted(names) == sorted(path.relative_to(DOCS).with_suffix("").as_posix() for path in DOCS.rglob("*.md"))
    row = next(line for line in lines if line.startswith("reference/targets "))
    assert row.split(None, 1)[1] == (DOCS / "reference" / "targets.md").read_text().splitlines()[0].removeprefix("# ")


@pytest.mark.parametrize("given, page", [
    ("guide", "guide.md"), ("reference/targets", "reference/targets.md"), ("targets", "reference/targets.md"),
    ("targets.md", "reference/targets.md"), ("commands/run", "reference/commands/run.md"), ("run", "reference/commands/run.md"),
])
def test_a_page_is_printed_whole_by_its_name_or_a_unique_ending(cli, outside_any_project, given, page):
    shown = cli("docs", given)
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == (DOCS / page).read_text(encoding="utf-8")
    assert cli("docs", given, "--path").stdout.strip() == str(DOCS / page)


def test_a_misspelt_page_is_a_usage_error_naming_the_closest(cli, outside_any_project):
    shown = cli("docs", "targts")
    assert shown.exit_code == 2
    assert shown.stderr.strip() == "Error: no docs page 'targts'; did you mean 'targets'? ('evalsite docs' lists the pages)"


def test_an_ending_shared_by_two_pages_lists_both(cli, outside_any_project, tmp_path, monkeypatch):
    folder = tmp_path / "docs"
    for name in ("reference/site.md", "reference/commands/site.md", "guide.md"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(f"# {name}\n")
    monkeypatch.setattr("evalsite.cli.docs.docs_dir", lambda: folder)
    shown = cli("docs", "site")
    assert shown.exit_code == 2
    assert "ambiguous: reference/commands/site, reference/site" in shown.stderr
    assert cli("docs", "commands/site").stdout == "# reference/commands/site.md\n"


def test_the_wheel_carries_the_docs(tmp_path):
    """What a pip user gets: hatchling builds the wheel from this checkout (no network, no install)."""
    from hatchling.builders.wheel import WheelBuilder

    built = Path(next(WheelBuilder(str(DOCS.parent)).build(directory=str(tmp_path), versions=["standard"])))
    names = set(zipfile.ZipFile(built).namelist())
    expected = {f"evalsite/docs/{path.relative_to(DOCS).as_posix()}" for path in DOCS.rglob("*.md")}
    assert expected <= names
