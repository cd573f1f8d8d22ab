"""Names from outside (imported dataset, experiment and arm names) never break a later build: they
are length-limited and slugged safely for file names (issue 15, defect 9)."""

from __future__ import annotations

from import_support import PLAIN, read_jsonl, write_jsonl

from evalsite.project import find_project
from evalsite.site import build_site
from evalsite.site.paths import MAX_SLUG, compare, dataset, experiment, slug


def test_long_names_become_short_unique_slugs():
    long_a, long_b = "x" * 300 + "a", "x" * 300 + "b"
    assert len(slug(long_a)) == MAX_SLUG and slug(long_a) != slug(long_b)
    assert slug("arithmetic@1a2b") == "arithmetic-1a2b" and slug("a" * MAX_SLUG) == "a" * MAX_SLUG
    for page in (dataset(long_a), experiment("é/" * 300), compare(long_a, long_b)):
        assert all(len(part.encode()) <= 255 for part in page.split("/"))


def test_a_long_dataset_name_is_refused_at_import(import_project, cli, tmp_path):
    source = write_jsonl(tmp_path / "scored.jsonl", read_jsonl(PLAIN / "scored.jsonl"))
    result = cli("import", "jsonl", str(source), "--dataset", "d" * 300)
    assert result.exit_code == 1 and "--dataset" in result.output and "at most 100" in result.output
    assert not (import_project / "runs").exists() or not any((import_project / "runs").iterdir())


def test_a_long_imported_file_name_does_not_break_later_builds(import_project, cli, tmp_path):
    source = write_jsonl(tmp_path / ("r" * 240 + ".jsonl"), read_jsonl(PLAIN / "scored.jsonl"))
    assert cli("import", "jsonl", str(source)).exit_code == 0
    report = build_site(find_project(import_project))
    assert report.pages > 3
    assert all(len(p.name.encode()) <= 255 for p in (import_project / "site").rglob("*"))
