"""Every page renders the one verdict (issue 26, items 2, 3, 4 and 6): real builds, parsed HTML.

* ranks are the verdict's places: ``1``, or a range ``2–3`` where the paired tests do not separate
  an arm (the site printed the display position 1, 2, 3 beside the command's ``2–3``), on the
  dataset page, the home card and the experiment page's aggregate row;
* letters are the verdict's, and the legend names the test and correction it used (it named
  "Friedman, then Nemenyi" for groups that came from the Holm-corrected paired tests);
* the critical-difference diagram (Nemenyi) is drawn only when Friedman rejects, and the page says
  why when it does not;
* with clusters declared, every arm interval the site shows — dataset table and its download,
  forest plot, scatter, home card, experiment page — is the command's cluster interval (the site
  showed a second bootstrap over items).
"""

from __future__ import annotations

import json
import re

import numpy as np
from clustered_support import write_clustered_project
from sitekit import case, parse, table_rows, write_run

from evalsite.site import paths


def places(arm: dict) -> str:
    """The command's places of an arm (``--json``), written as the site writes them."""
    best, worst = arm["places"]
    return str(best) if best == worst else f"{best}–{worst}"


def leaderboard_table(page):
    return page.find("div", id="leaderboard-1").find("table")


def column(table, label: str) -> list[str]:
    headers = [" ".join(th.text().split()) for th in table.find("thead").find_all("th")]
    index = headers.index(label)
    return [row[index] for row in table_rows(table)]


def legend(page) -> dict[str, str]:
    block = page.find("div", id="leaderboard-1").find("dl", class_="legend")
    return {" ".join(item.find("dt").text().split()): " ".join(item.find("dd").text().split())
            for item in block.find_all("div")}


def test_ranks_letters_and_the_legend_are_the_verdicts(cli, example_with_runs):
    board = cli.json("leaderboard")
    verdict = board["verdict"]
    assert [places(arm) for arm in board["arms"]] == ["1", "2–3", "2–3"]  # careful, then two arms not separated
    assert cli("build").exit_code == 0
    site = example_with_runs / "site"
    page = parse(site / paths.dataset(board["selection"]["dataset_id"]))
    table = leaderboard_table(page)
    assert column(table, "arm") == [arm["label"] for arm in board["arms"]]
    assert column(table, "rank") == [places(arm) for arm in board["arms"]]
    assert column(table, "group") == [arm["letters"] for arm in board["arms"]]
    assert "rank interval" not in [th.text() for th in table.find("thead").find_all("th")]  # no second, narrower rank
    download = json.loads((site / paths.dataset(board["selection"]["dataset_id"]).replace(".html", ".leaderboard-1.json")).read_text())
    assert [row["rank_range"] for row in download] == [places(arm) for arm in board["arms"]]
    shown = legend(page)
    for name in ("group", "rank"):
        assert f"paired sign-flip tests over items, {verdict['correction']}, α = {verdict['alpha']}" in shown[name]
        assert "Nemenyi" not in shown[name] and "Friedman" not in shown[name]
    # Friedman rejects here, so Nemenyi's critical-difference diagram is drawn
    assert verdict["friedman"]["p_value"] < verdict["alpha"]
    assert any("Critical-difference diagram" in svg.text() for svg in page.find_all("svg"))

    card = parse(site / "index.html").find("article", class_="verdict-card")
    assert " ".join(card.find("span", class_="rank").text().split()) == f"· rank {places(board['arms'][0])}"
    experiment = parse(site / "experiments" / "arithmetic.html")
    matrix = experiment.find("table", id="matrix-table")
    arms = [th.text() for th in matrix.find("thead").find_all("th")][1:-1]
    ranks = [" ".join(span.text().split()) for span in matrix.find("tfoot").find_all("span", class_="cell-rank")]
    by_label = {arm["label"]: places(arm) for arm in board["arms"]}
    assert ranks == [f"rank {by_label[arm]}" for arm in arms]
    stars = [td for td in matrix.find("tfoot").find_all("td") if "★" in td.text()]
    assert len(stars) == 1  # careful is separated from both others: places 1 alone


def test_no_critical_difference_diagram_when_friedman_does_not_reject(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiments").mkdir()
    rng = np.random.default_rng(5)
    same = rng.random(40) < 0.6
    for serial, arm in enumerate(("first", "second", "third")):
        flipped = same.copy()
        flipped[serial] = not flipped[serial]  # one item apart: nothing to tell the arms apart
        write_run(tmp_path / "runs", f"20260101T00000{serial}Z-{arm}-000{serial}",
                  [case(f"q{i:02d}", score=float(ok), passed=bool(ok)) for i, ok in enumerate(flipped)], arm=arm)
    board = cli.json("leaderboard")
    assert board["verdict"]["friedman"]["p_value"] >= board["verdict"]["alpha"]
    assert cli("build").exit_code == 0
    page = parse(tmp_path / "site" / paths.dataset(board["selection"]["dataset_id"]))
    section = page.find("section", id="leaderboard-1")
    assert not [svg for svg in section.find_all("svg") if "Critical-difference" in svg.text()]
    assert "No critical-difference diagram: Friedman's omnibus test does not reject at α = 0.05" in section.text()
    assert column(leaderboard_table(page), "rank") == [places(arm) for arm in board["arms"]] == ["1–3"] * 3


def test_with_clusters_every_page_shows_the_commands_interval(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiments").mkdir()
    (dataset,) = write_clustered_project(tmp_path, np.random.default_rng(4), datasets=1, arms=3)
    board = cli.json("leaderboard")
    assert (board["verdict"]["unit"], board["verdict"]["n_clusters"]) == ("cluster", 30)
    expected = {arm["label"]: (arm["value"], arm["interval"]["low"], arm["interval"]["high"]) for arm in board["arms"]}
    assert all(arm["interval"]["method"].startswith("cluster") for arm in board["arms"])
    assert cli("build").exit_code == 0
    site = tmp_path / "site"
    page_path = site / paths.dataset(dataset.dataset_id)
    download = json.loads(page_path.with_name(page_path.stem + ".leaderboard-1.json").read_text())
    assert {row["arm"]: (row["value"]["value"], row["value"]["low"], row["value"]["high"]) for row in download} == expected

    def text(label: str) -> str:
        value, low, high = expected[label]
        return f"{value:.3f} [{low:.3f}, {high:.3f}]"

    page = parse(page_path)
    table = leaderboard_table(page)
    assert dict(zip(column(table, "arm"), column(table, "mean score"))) == {label: text(label) for label in expected}
    titles = point_titles(page.find("section", id="leaderboard-1"))
    assert titles["forest"] == {f"{label}: {text(label)}" for label in expected}  # forest plot
    assert titles["scatter"] == {f"{label}: {text(label)}" for label in expected}  # quality against cost

    card = parse(site / "index.html").find("article", class_="verdict-card")
    leader = board["arms"][0]["label"]
    assert f"{leader} {text(leader)}" in " ".join(card.find("p", class_="leader").text().split())
    experiment = parse(site / "experiments" / "clustered.html")
    sweep = {title for svg in experiment.find_all("svg") if "against temperature" in svg.text()
             for title in _titles(svg)}
    assert {f"{label}: {text(label)}" for label in expected} <= sweep


def point_titles(section) -> dict[str, set[str]]:
    """The tooltips of the points of the forest plot and of the scatter (``label: value [low, high]``)."""
    found = {}
    for svg in section.find_all("svg"):
        if "Mean score per arm" in svg.text():
            found["forest"] = _titles(svg)
        elif "Pareto frontier" in svg.text():
            found["scatter"] = _titles(svg)
    return found


def _titles(svg) -> set[str]:
    return {" ".join(title.text().split()) for circle in svg.find_all("circle") for title in circle.find_all("title")
            if re.search(r": -?\d", title.text())}


def test_the_home_card_reads_the_group_the_command_reads(cli, tmp_path, monkeypatch):
    """Two comparable groups on one dataset (evaluator v1, then v2): the older has more configs, so
    `evalsite leaderboard` reads it; the home card showed the newest group instead."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiments").mkdir()
    rng = np.random.default_rng(8)
    arms = [("v1", "wide", 0.9), ("v1", "middle", 0.5), ("v1", "narrow", 0.2), ("v2", "late", 0.9), ("v2", "later", 0.1)]
    for serial, (version, arm, rate) in enumerate(arms):
        passes = rng.random(40) < rate
        write_run(tmp_path / "runs", f"20260101T00000{serial}Z-{arm}-000{serial}",
                  [case(f"q{i:02d}", score=float(ok), passed=bool(ok), version=version) for i, ok in enumerate(passes)],
                  arm=arm, evaluators={"exact": {"type": "exact", "version": version}})
    board = cli.json("leaderboard")
    assert {arm["label"] for arm in board["arms"]} == {"wide", "middle", "narrow"}
    assert cli("build").exit_code == 0
    card = parse(tmp_path / "site" / "index.html").find("article", class_="verdict-card")
    leader = " ".join(card.find("p", class_="leader").text().split())
    assert leader.startswith(f"leading {board['arms'][0]['label']} "), leader
    assert "Holm over the 3 pairs shown" in " ".join(card.text().split())  # three arms, not the newest two
    datasets = parse(tmp_path / "site" / "index.html").find("div", id="datasets").find("table")
    assert column(datasets, "highest mean") == [board["arms"][0]["label"]]
