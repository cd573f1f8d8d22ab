"""Names from outside (imported dataset, experiment and arm names) never break a later build: they
are length-limited and slugged safely for file names (issue 15, defect 9)."""

from __future__ import annotations

from import_support import PLAIN, project, read_jsonl, write_jsonl  # noqa: F401

from evalsite.project import find_project
from evalsite.site import build_site
from evalsite.site.paths import MAX_SLUG, compare, dataset, experiment, slug


def test_long_names_become_short_unique_slugs():
    long_a, long_b = "x" * 300 + "a", "x" * 300 + "b"
    assert len(slug(long_a)) == MAX_SLUG and slug(long_a) != slug(long_b)
    assert slug("arithmetic@1a2b") == "arithmetic-1a2b" and slug("a" * MAX_SLUG) == "a" * MAX_SLUG
    for page in (dataset(long_a), experiment("é/" * 300), compare(long_a, long_b)):
        assert all(len(part.encode()) <= 255 for part in page.split("/"))


def test_a_long_dataset_name_is_refused_at_import(project, cli, tmp_path):  # noqa: F811
    source = write_jsonl(tmp_path / "scored.jsonl", read_jsonl(PLAIN / "scored.jsonl"))
    result = cli("import", "jsonl", str(source), "--dataset", "d" * 300)
    assert result.exit_code == 1 and "--dataset" in result.output and "at most 100" in result.output
    assert not (project / "runs").exists() or not any((project / "runs").iterdir())


def test_a_long_imported_file_name_does_not_break_later_builds(project, cli, tmp_path):  # noqa: F811
    source = write_jsonl(tmp_path / ("r" * 240 + ".jsonl"), read_jsonl(PLAIN / "scored.jsonl"))
    assert cli("import", "jsonl", str(source)).exit_code == 0
    report = build_site(find_project(project))
    assert report.pages > 3
    assert all(len(p.name.encode()) <= 255 for p in (project / "site").rglob("*"))
