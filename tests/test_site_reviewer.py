"""The site as a reviewer reads it, in headless Chromium from file://: an item's page with every
arm's answer, the compare page linking it, whole-site search, the diff picker."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import drawn, load, navigated, needs_browser, problems_in
from sitekit import case, parse, table_rows, write_run

from evalsite.analysis import leaderboard
from evalsite.analysis.compare import compare_runs
from evalsite.project import find_project
from evalsite.site import build_site, paths

DATASET = "data@000000000000"
UNIQUE = "zebrafish quokka marmalade"

pytestmark = needs_browser


@pytest.fixture(scope="module")
def reviewer_site(tmp_path_factory) -> Path:
    """A built site of two arms answering twelve questions, for a reviewer's reading."""
    root = tmp_path_factory.mktemp("reviewer")
    (root / "data").mkdir()
    (root / "evalsite.toml").write_text('[site]\ntitle = "Reviewer demo"\ndescription = "Two arms answer twelve questions."\n')
    runs = root / "runs"
    items = [f"q{n}" for n in range(12)]
    write_run(runs, "20260101T000000Z-a-0001", [case(i, output=f"answer {i}", expected=f"answer {i}", input=f"ask {i}")
                                                  for i in items], arm="a")
    write_run(runs, "20260101T000001Z-b-0002", [case(i, output=UNIQUE if i == "q3" else f"answer {i}", score=0.0 if i == "q3" else 1.0,
                                                     passed=i != "q3", expected=f"answer {i}", input=f"ask {i}") for i in items], arm="b")
    write_run(runs, "20260101T000002Z-a-0003", [case(i, output="wrong" if i == "q5" else f"answer {i}", score=0.0 if i == "q5" else 1.0,
                                                     passed=i != "q5", expected=f"answer {i}", input=f"ask {i}") for i in items], arm="a")
    build_site(find_project(root))
    return root / "site"


def test_an_item_page_shows_input_expected_and_every_runs_output(browser, reviewer_site):
    from selenium.webdriver.common.by import By

    load(browser, (reviewer_site / paths.item_page(DATASET, paths.item_bucket("q3"))).as_uri() + "#" + paths.item_anchor("q3"))
    section = drawn(browser, f"section#{paths.item_anchor('q3')}")[0]
    text = " ".join(section.text.split())
    assert "ask q3" in text and "answer q3" in text and UNIQUE in text
    runs = {a.get_attribute("href").rsplit("/", 1)[1].removesuffix(".html") for a in section.find_elements(By.TAG_NAME, "a")
            if "/runs/" in a.get_attribute("href")}
    assert runs == {"20260101T000000Z-a-0001", "20260101T000001Z-b-0002", "20260101T000002Z-a-0003"}
    assert problems_in(browser, reviewer_site) == []


def test_the_compare_page_lists_changed_items_linking_their_item_pages(browser, reviewer_site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    load(browser, (reviewer_site / paths.compare("20260101T000002Z-a-0003", "20260101T000000Z-a-0001")).as_uri())
    visible = [row for row in browser.find_elements(By.CSS_SELECTOR, "#items tbody tr") if row.is_displayed()]
    assert [row.find_element(By.TAG_NAME, "td").text for row in visible] == ["q5"]
    browser.find_element(By.CSS_SELECTOR, "input.show-unchanged").click()  # the 11 unchanged items load from a data script
    WebDriverWait(browser, 10).until(lambda d: len([row for row in d.find_elements(By.CSS_SELECTOR, "#items tbody tr")
                                                    if row.is_displayed()]) == 12)
    browser.find_element(By.CSS_SELECTOR, "input.show-unchanged").click()
    assert [row.find_element(By.TAG_NAME, "td").text for row in browser.find_elements(By.CSS_SELECTOR, "#items tbody tr")
            if row.is_displayed()] == ["q5"]
    navigated(browser, browser.find_element(By.LINK_TEXT, "q5").click)  # to the item's page
    target = drawn(browser, f"#{paths.item_anchor('q5')}")[0]
    assert "wrong" in target.text and "answer q5" in target.text
    assert problems_in(browser, reviewer_site) == []


def test_search_from_file_finds_an_item_by_a_unique_output(browser, reviewer_site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    load(browser, (reviewer_site / "index.html").as_uri())
    box = browser.find_element(By.CSS_SELECTOR, "form.site-search input")
    box.send_keys("quokka marma")
    link = WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "ol.search-results a"))[0]
    assert "q3" in link.text
    navigated(browser, link.click)
    assert UNIQUE in drawn(browser, f"#{paths.item_anchor('q3')}")[0].text
    assert problems_in(browser, reviewer_site) == []


def test_the_pair_picker_diffs_two_answers(browser, reviewer_site):
    from selenium.webdriver.common.by import By

    load(browser, (reviewer_site / paths.item_page(DATASET, paths.item_bucket("q3"))).as_uri() + "#" + paths.item_anchor("q3"))
    picker = drawn(browser, f"#{paths.item_anchor('q3')} .pair-picker")[0]
    assert picker.is_displayed()
    removed = [e.text for e in picker.find_elements(By.CSS_SELECTOR, ".worddiff-out del")]
    added = [e.text for e in picker.find_elements(By.CSS_SELECTOR, ".worddiff-out ins")]
    assert "zebrafish" in " ".join(added + removed)


def test_home_opens_with_the_verdict_of_each_dataset(browser, reviewer_site):
    from selenium.webdriver.common.by import By

    project = find_project(reviewer_site.parent)
    board = leaderboard(project, DATASET)
    leader, runner_up = (arm.summary.arm for arm in board.arms[:2])
    figures = compare_runs(project, leader.run_id, baseline=runner_up.run_id).regression.summary
    load(browser, (reviewer_site / "index.html").as_uri())
    assert browser.title.endswith("Reviewer demo")
    assert browser.find_element(By.CSS_SELECTOR, "main p.lede").text == "Two arms answer twelve questions."
    card = browser.find_element(By.CSS_SELECTOR, "main > section.verdicts article.verdict-card")
    assert card.location["y"] < 400  # the first thing on the page
    assert card.find_element(By.CSS_SELECTOR, ".leader strong").text == leader.label
    assert f"Against {runner_up.label}: Δ {figures.mean_delta:+.3f}" in card.text
    navigated(browser, card.find_element(By.LINK_TEXT, "Full leaderboard →").click)
    assert browser.find_element(By.TAG_NAME, "h1").text == f"Dataset {DATASET}"
    assert problems_in(browser, reviewer_site) == []


@pytest.mark.parametrize("page", ["index.html", f"datasets/{paths.slug(DATASET)}.html", "item"])
def test_no_horizontal_overflow_at_400_px(browser, reviewer_site, page):
    target = paths.item_page(DATASET, paths.item_bucket("q3")) if page == "item" else page
    from selenium.webdriver.support.ui import WebDriverWait

    browser.set_window_size(400, 900)
    try:
        load(browser, (reviewer_site / target).as_uri())
        WebDriverWait(browser, 10).until(lambda d: d.execute_script("return window.innerWidth") <= 400)
        if page == "item":
            drawn(browser, "section.item table.answers")
        width, inner = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        assert width <= inner, f"{target}: {width} px wide in a {inner} px window"
    finally:
        browser.set_window_size(1400, 1000)


def test_dark_mode_follows_the_system_setting(browser, reviewer_site):
    load(browser, (reviewer_site / "index.html").as_uri())
    light = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        dark = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert light != dark and sum(int(c) for c in dark[dark.index("(") + 1:-1].split(",")[:3]) < 150


def test_the_leaderboard_fits_at_1280_px_with_a_visible_legend(browser, reviewer_site):
    from selenium.webdriver.common.by import By

    browser.set_window_size(1280, 900)
    try:
        load(browser, (reviewer_site / paths.dataset(DATASET)).as_uri())
        block = browser.find_element(By.ID, "leaderboard-1")
        scroller = block.find_element(By.CSS_SELECTOR, ".scroll")
        assert browser.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", scroller)
        headers = [th.text for th in block.find_elements(By.CSS_SELECTOR, "thead th") if th.size["width"] > 0]
        assert headers[:7] == ["rank", "arm", "mean score", "group", "Δ leader", "cost / case", "p50 latency"]
        legend = block.find_element(By.CSS_SELECTOR, "dl.legend")
        assert legend.is_displayed() and "not separated by the paired sign-flip tests" in legend.text
        block.find_element(By.CSS_SELECTOR, "input.show-secondary").click()
        assert len([th for th in block.find_elements(By.CSS_SELECTOR, "thead th") if th.size["width"] > 0]) > 7
    finally:
        browser.set_window_size(1400, 1000)


def test_the_matrix_shows_costs_input_expected_and_a_pair_picker(browser, reviewer_site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    load(browser, (reviewer_site / paths.experiment("exp")).as_uri() + "#matrix-divergent")
    row = drawn(browser, "#matrix-table tr#item-q3")[0]
    assert all("divergent" in tr.get_attribute("class") for tr in browser.find_elements(By.CSS_SELECTOR, "#matrix-table tbody tr"))
    cells = row.find_elements(By.CSS_SELECTOR, "td.num")
    assert all(" tok · " in cell.text and " ms" in cell.text for cell in cells)
    right, wrong = sorted(cells, key=lambda cell: "cell-pass" not in cell.get_attribute("class"))
    assert "outlier" not in right.get_attribute("class") and "outlier" in wrong.get_attribute("class")
    row.find_element(By.PARTIAL_LINK_TEXT, " distinct").click()
    drawn(browser, "#item-q3-diff .pair-picker .worddiff-out")
    block = browser.find_element(By.ID, "item-q3-diff")
    assert "ask q3" in block.text and "answer q3" in block.text  # input and expected beside the outputs
    picker = block.find_element(By.CSS_SELECTOR, ".pair-picker")
    left, other = (Select(picker.find_element(By.CSS_SELECTOR, s)) for s in ("select.pick-left", "select.pick-right"))
    assert left.first_selected_option.text != other.first_selected_option.text
    changed = " ".join(e.text for e in picker.find_elements(By.CSS_SELECTOR, ".worddiff-out ins, .worddiff-out del"))
    assert "zebrafish" in changed
    other.select_by_index(0 if other.first_selected_option.text != left.options[0].text else 1)
    left.select_by_visible_text(other.first_selected_option.text)
    assert not picker.find_elements(By.CSS_SELECTOR, ".worddiff-out ins, .worddiff-out del")  # an output against itself
    assert problems_in(browser, reviewer_site) == []


def test_the_runs_table_counts_items_improved_regressed_and_unchanged(reviewer_site):
    page = parse(reviewer_site / "runs.html")
    header = [" ".join(th.text().split()) for th in page.find("div", id="runs").find("thead").find_all("th")]
    rows = {row[0]: dict(zip(header, row)) for row in table_rows(page.find("div", id="runs").find("table"))}
    newer = rows["20260101T000002Z-a-0003"]
    assert (newer["improved"], newer["regressed"], newer["unchanged"]) == ("0", "1", "11")  # q5 went wrong
    assert rows["20260101T000000Z-a-0001"]["improved"] == "—"  # no baseline
