"""The site's CSV downloads name a figure as the CLI's ``-o FILE.csv`` does: the leaderboard as
``evalsite leaderboard -o``, a compare page's items as ``evalsite compare -o`` (one name per
figure, listed in docs/reference/site.md's "Download columns")."""

from __future__ import annotations

import csv
import io
import json

import pytest

from evalsite.project import find_project
from evalsite.site import build_site, paths

DATASET = "arithmetic-854dec43a471"


def read_csv(path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_the_leaderboard_download_uses_the_cli_names_and_values(example_with_runs, cli):
    build_site(find_project(example_with_runs))
    site_rows = read_csv(example_with_runs / "site" / f"{paths.dataset(DATASET).removesuffix('.html')}.leaderboard-1.csv")
    result = cli("leaderboard", "-o", "board.csv")
    assert result.exit_code == 0, result.output
    cli_rows = read_csv(example_with_runs / "board.csv")
    shared = ["arm", "value", "ci_low", "ci_high", "group", "pass_rate", "items", "cases",
              "cost_per_case_usd", "cost_per_correct_usd", "p50_ms", "p95_ms", "noise_std", "run_id"]
    assert set(shared) <= set(site_rows[0]) and set(shared) <= set(cli_rows[0])
    # figures only the site shows; rank_range is the places without the CLI's "(not separated)" note
    assert set(site_rows[0]) - set(cli_rows[0]) == {"rank_range", "delta", "cost_usd", "experiment"}
    by_arm = {row["arm"]: row for row in cli_rows}
    for row in site_rows:
        other = by_arm[row["arm"]]
        for name in shared:
            if name in ("arm", "group", "run_id"):
                assert row[name] == other[name], (row["arm"], name)
            elif row[name] or other[name]:
                assert float(row[name]) == pytest.approx(float(other[name])), (row["arm"], name)
        assert other["places"].startswith(row["rank_range"])


def test_the_compare_items_download_uses_the_cli_names(example_with_runs, cli):
    from evalsite.execute.runner import execute_plan
    from evalsite.experiment.manifest import load_manifest
    from evalsite.experiment.plan import build_plan

    project = find_project(example_with_runs)
    execute_plan(project, build_plan(project, load_manifest(example_with_runs / "experiments/arithmetic.yaml"),
                                     arm_ids=("sampler",), repeat=1))
    build_site(find_project(example_with_runs))
    (page,) = (example_with_runs / "site/compare").glob("*.html")
    site_rows = read_csv(page.with_suffix(".items.csv"))
    run_id, baseline_id = page.stem.split("--")
    result = cli("compare", run_id, "--baseline", baseline_id, "-o", "items.csv")
    assert result.exit_code in (0, 1), result.output
    cli_rows = {row["item_id"]: row for row in read_csv(example_with_runs / "items.csv")}
    assert site_rows and list(site_rows[0]) == ["item_id", "baseline_score", "score", "delta", "classification", "rescored"]
    for row in site_rows:
        other = cli_rows[row["item_id"]]
        assert row["classification"] == other["classification"]
        for name in ("baseline_score", "score", "delta"):
            assert float(row[name]) == pytest.approx(float(other[name])), (row["item_id"], name)
    assert json.loads(page.with_suffix(".items.json").read_text())  # the JSON download is still written


def test_the_flaky_items_download_uses_the_noise_command_names(example_with_runs, cli):
    build_site(find_project(example_with_runs))
    page = next((example_with_runs / "site/runs").glob("*sampler*.html"))
    site_rows = read_csv(page.with_suffix(".flaky.csv"))
    result = cli("noise", page.stem, "-o", "noise.csv")
    assert result.exit_code == 0, result.output
    cli_rows = {row["item_id"]: row for row in read_csv(example_with_runs / "noise.csv")}
    assert site_rows and set(site_rows[0]) <= set(next(iter(cli_rows.values())))
    assert list(site_rows[0])[:6] == ["item_id", "runs", "passed", "pass_rate", "wilson_low", "wilson_high"]
    for row in site_rows:
        other = cli_rows[row["item_id"]]
        for name in row:
            if name != "item_id":
                assert float(row[name]) == pytest.approx(float(other[name])), (row["item_id"], name)
