"""The site's dataset leaderboard and `evalsite leaderboard` come from one definition
(evalsite.analysis): on the example project the leaderboard's JSON download and the command's
--json agree on arms, means, intervals, pass rates and tied groups."""

from __future__ import annotations

import json

from evalsite.site import paths


def test_site_leaderboard_download_agrees_with_the_leaderboard_command(cli, example_with_runs):
    board = cli.json("leaderboard")
    assert cli("build").exit_code == 0
    dataset_id = board["selection"]["dataset_id"]
    page = paths.dataset(dataset_id).removesuffix(".html")
    rows = json.loads((example_with_runs / "site" / f"{page}.leaderboard-1.json").read_text())
    expected = [
        (arm["letters"], arm["summary"]["arm"]["label"], arm["summary"]["arm"]["run_id"], arm["summary"]["mean"],
         arm["summary"]["mean_interval"]["low"], arm["summary"]["mean_interval"]["high"], arm["summary"]["pass_rate"],
         arm["summary"]["n_items"], arm["summary"]["n_cases"])
        for arm in board["arms"]
    ]
    shown = [
        (row["group"], row["arm"], row["run_id"], row["value"]["value"], row["value"]["low"], row["value"]["high"],
         row["pass_rate"], row["items"], row["cases"])
        for row in rows
    ]
    assert shown == expected  # exactly: both are one computation
    assert [row["group"] for row in rows] == ["a", "b", "b"]
