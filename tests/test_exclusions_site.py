"""An excluded run (``evalsite runs --exclude``) is read by no claim, as by no leaderboard, and is
shown only on its own page and in the runs table, marked; the site's incremental build follows
exclusions and evalsite.toml settings (issue 26, item 8)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sitekit import parse

from evalsite.site import paths

REPO = Path(__file__).resolve().parent.parent


def scratch_run(cli) -> str:
    """A run of careful on a 10-item slice: another dataset id, as guide §8 makes one."""
    done = cli("run", "experiments/arithmetic.yaml", "--arm", "careful", "--set", "dataset.limit=10", "--set", "repeat=1",
               "--allow-failures")
    assert done.exit_code == 0, done.output
    [scratch] = [row["run_id"] for row in cli.json("runs") if row["cases"] == 10]
    return scratch


def test_check_claims_ignores_an_excluded_run(cli, example_with_runs):
    shutil.copytree(REPO / "reports", example_with_runs / "reports")
    assert cli("check-claims").exit_code == 0
    scratch = scratch_run(cli)
    confused = json.loads(cli("check-claims", "--json").stdout)
    assert "cannot be checked" in {r["status"] for r in confused}  # arm careful now has runs on two datasets
    assert cli("runs", "--exclude", scratch, "--reason", "scratch: 10 items").exit_code == 0
    result = cli("check-claims", "--json")
    assert result.exit_code == 0, result.stdout
    assert all(scratch not in r["runs"] for r in json.loads(result.stdout))
    pinned = example_with_runs / "reports" / "pinned.md"
    pinned.write_text(f"{{{{ claim: n(run={scratch}) == 10 }}}}\n{{{{ claim: run={scratch} beats arm=sampler }}}}\n")
    for verdict in json.loads(cli("check-claims", str(pinned), "--json").stdout):
        assert verdict["status"] == "cannot be checked"
        assert f"run {scratch} is excluded from comparisons (scratch: 10 items)" in verdict["detail"]
        assert f"evalsite runs --include {scratch}" in verdict["detail"]


def page_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_an_excluded_run_is_shown_only_on_its_page_and_in_the_runs_table(cli, example_with_runs):
    scratch = scratch_run(cli)
    site = example_with_runs / "site"
    assert cli("build").exit_code == 0
    assert scratch in page_text(site / "index.html")  # a listed run, before the exclusion
    assert cli("runs", "--exclude", scratch, "--reason", "scratch: 10 items").exit_code == 0
    built = cli.json("build")
    assert built["rendered"] > 0
    home = page_text(site / "index.html")
    assert scratch not in home and "arithmetic@" in home
    scratch_dataset = cli.json("show", scratch)["dataset_id"]
    assert scratch_dataset not in home
    search = "".join(page_text(path) for path in (site / "search").glob("*.js"))
    assert scratch not in search and scratch_dataset not in search and "arithmetic@" in search
    rows = [row for row in parse(site / "runs.html").find_all("tr") if scratch in row.text()]
    assert len(rows) == 1 and "run-excluded" in rows[0].attrs.get("class", "")
    assert "scratch: 10 items" in rows[0].text()
    page = page_text(site / "runs" / f"{scratch}.html")
    assert "excluded from comparisons</strong>: scratch: 10 items" in page
    assert cli("runs", "--include", scratch, "--reason", "needed after all").exit_code == 0
    assert cli("build").exit_code == 0
    assert scratch in page_text(site / "index.html")
    assert "excluded from comparisons" not in page_text(site / "runs" / f"{scratch}.html")


def test_an_incremental_build_follows_analysis_settings(cli, example_with_runs):
    site = example_with_runs / "site"
    assert cli("build").exit_code == 0
    dataset_page = next((site / "datasets").glob("*.html"))
    assert "too few units to detect any difference" not in page_text(dataset_page)
    (example_with_runs / "evalsite.toml").write_text('[analysis]\ncluster_key = "kind"\n')
    built = cli.json("build")
    assert built["rendered"] > 0
    incremental = {path.relative_to(site): path.read_bytes() for path in site.rglob("*") if path.is_file()}
    assert "too few units to detect any difference" in page_text(dataset_page)
    assert cli("build", "--full").exit_code == 0
    full = {path.relative_to(site): path.read_bytes() for path in site.rglob("*") if path.is_file()}
    assert incremental == full


def listings(site: Path, scratch_dataset: str) -> dict[str, str]:
    """The dataset page's runs table, the experiment page and the item pages of the scratch run's dataset."""
    dataset_runs = parse(site / paths.dataset(scratch_dataset)).find("div", id="runs").text()
    items = "".join(page_text(path) for path in (site / paths.items_folder(scratch_dataset)).glob("*.html"))
    return {"dataset runs table": dataset_runs, "experiment page": page_text(site / paths.experiment("arithmetic")),
            "item pages": items}


def test_an_excluded_run_leaves_the_dataset_experiment_and_item_listings(cli, example_with_runs):
    scratch = scratch_run(cli)
    scratch_dataset = cli.json("show", scratch)["dataset_id"]
    site = example_with_runs / "site"
    assert cli("build").exit_code == 0
    assert all(scratch in text for text in listings(site, scratch_dataset).values())  # listed before the exclusion
    assert cli("runs", "--exclude", scratch, "--reason", "scratch: 10 items").exit_code == 0
    assert cli("build").exit_code == 0  # incremental: the exclusion re-renders these pages
    for where, text in listings(site, scratch_dataset).items():
        assert scratch not in text, where
    run_page = page_text(site / paths.run(scratch))
    assert paths.items_folder(scratch_dataset) in run_page  # its own page still links its items, and they exist
    assert list((site / paths.items_folder(scratch_dataset)).glob("*.html"))
    assert cli("runs", "--include", scratch, "--reason", "needed after all").exit_code == 0
    assert cli("build").exit_code == 0
    assert all(scratch in text for text in listings(site, scratch_dataset).values())
