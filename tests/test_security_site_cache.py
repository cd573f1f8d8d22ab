"""Symlinks planted in the build cache (`.evalsite/site-cache`) never lead `evalsite build` to write,
read or delete outside it (issue 32, High 1): a cloned repository or a pull request can commit them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from sitekit import case, tree_bytes, write_run

CACHE = Path(".evalsite/site-cache")


@pytest.fixture
def cached_site(tmp_path, monkeypatch) -> Path:
    """Two runs of one dataset, built once (so the cache exists), as the working folder."""
    root = tmp_path / "p"
    (root / "data").mkdir(parents=True)
    (root / "data/data.jsonl").write_text("".join(json.dumps({"id": f"i{n}", "input": "q", "expected": "ok"}) + "\n"
                                                  for n in range(4)))
    for run_id, arm in (("20260101T000000Z-a-0000", "a"), ("20260102T000000Z-b-0000", "b")):
        write_run(root / "runs", run_id, [case(f"i{n}", passed=n % 2 == 0, score=float(n % 2 == 0)) for n in range(4)],
                  arm=arm)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def victim(tmp_path) -> Path:
    """A folder outside the project holding files the cache's names could match."""
    folder = tmp_path / "victim"
    folder.mkdir()
    for name in ("f", "a.json", "b.npz", "c.cells.arrow", "intervals.json", ".x.json.tmp"):
        (folder / name).write_text(f"precious {name}")
    return folder


def untouched(folder: Path) -> bool:
    return sorted(p.name for p in folder.iterdir()) == sorted(["f", "a.json", "b.npz", "c.cells.arrow", "intervals.json",
                                                               ".x.json.tmp"])\
        and all(p.read_text() == f"precious {p.name}" for p in folder.iterdir())


def build(cli, *args: str) -> dict:
    return cli.json("build", *args)


def test_a_symlink_planted_at_a_temporary_name_is_never_written_through(cli, cached_site, victim):
    build(cli)
    cache = cached_site / CACHE
    os.symlink(victim / "f", cache / ".intervals.json.tmp")
    os.symlink(victim / "a.json", cache / ".pairs.json.tmp")
    entry = next(p.name for p in cache.glob("*.json") if p.name not in ("intervals.json", "pairs.json"))
    os.symlink(victim / "b.npz", cache / f".{entry}.tmp")
    build(cli, "--full")
    assert untouched(victim)
    assert json.loads((cache / "intervals.json").read_text())["version"]  # the cache still works


def test_a_symlink_at_a_cache_name_is_replaced_not_written_through(cli, cached_site, victim):
    build(cli)
    cache = cached_site / CACHE
    for entry in [*cache.glob("*.json"), *cache.glob("*.npz"), *cache.glob("*.arrow")]:
        entry.unlink()
        os.symlink(victim / "intervals.json", entry)  # read would be refused, write replaces the link
    build(cli, "--full")
    assert untouched(victim)
    assert (cache / "intervals.json").is_file() and not (cache / "intervals.json").is_symlink()


@pytest.mark.parametrize("linked", [".evalsite/site-cache", ".evalsite"])
def test_a_symlinked_cache_folder_is_not_used_and_nothing_outside_changes(cli, cached_site, victim, linked):
    reference = build(cli)
    pages = tree_bytes(cached_site / "site")
    shutil.rmtree(cached_site / ".evalsite")
    (cached_site / linked).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(victim, cached_site / linked)
    shutil.rmtree(cached_site / "site")
    report = build(cli)
    assert untouched(victim)
    assert f"{linked}: a symlink or not a folder; the build cache is not used" in " ".join(report["warnings"])
    assert tree_bytes(cached_site / "site") == pages and report["pages"] == reference["pages"]  # nothing lost
    build(cli, "--full")  # a second build: still nothing read, written or deleted there
    assert untouched(victim)


def test_pruning_deletes_only_regular_files_of_the_cache_folder(cli, cached_site, victim):
    build(cli)
    cache = cached_site / CACHE
    os.symlink(victim / "a.json", cache / "0000dead.json")  # a stale name: pruning would delete it
    os.symlink(victim, cache / "0000dead.npz")
    (cache / "0000gone.json").write_text("{}")  # a regular entry of a run that is gone
    (cache / ".0000gone.json.abc.tmp").write_text("{")  # left by a killed build
    build(cli)
    assert untouched(victim)
    assert not (cache / "0000gone.json").exists() and not (cache / ".0000gone.json.abc.tmp").exists()
    assert (cache / "intervals.json").is_file()
