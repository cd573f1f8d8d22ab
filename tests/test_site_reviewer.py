"""The site as a reviewer reads it, in headless Chromium from file://: an item's page with every
arm's answer, the compare page linking it, whole-site search, the diff picker."""

from __future__ import annotations

from pathlib import Path

import pytest
from sitekit import case, parse, write_run
from test_site_browser import CHROMEDRIVER, CHROMIUM, browser, problems_in  # noqa: F401  (the module's browser)

from evalsite.project import find_project
from evalsite.site import build_site, paths

DATASET = "data@000000000000"
UNIQUE = "zebrafish quokka marmalade"

pytestmark = pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                                reason="headless browser tests need /usr/bin/chromium and /usr/bin/chromedriver")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("reviewer")
    (root / "data").mkdir()
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


def test_an_item_page_shows_input_expected_and_every_runs_output(site):
    page = parse(site / paths.item_page(DATASET, paths.item_bucket("q3")))
    section = page.find("section", id=paths.item_anchor("q3"))
    text = " ".join(section.text().split())
    assert "ask q3" in text and "answer q3" in text and UNIQUE in text
    runs = {a.text().strip() for a in section.find_all("a") if "runs/" in a.attrs.get("href", "")}
    assert runs == {"20260101T000000Z-a-0001", "20260101T000001Z-b-0002", "20260101T000002Z-a-0003"}


def test_the_compare_page_lists_changed_items_linking_their_item_pages(browser, site):  # noqa: F811
    from selenium.webdriver.common.by import By

    browser.get((site / paths.compare("20260101T000002Z-a-0003", "20260101T000000Z-a-0001")).as_uri())
    visible = [row for row in browser.find_elements(By.CSS_SELECTOR, "#items tbody tr") if row.is_displayed()]
    assert [row.find_element(By.TAG_NAME, "td").text for row in visible] == ["q5"]
    browser.find_element(By.CSS_SELECTOR, "input.show-unchanged").click()
    assert len([row for row in browser.find_elements(By.CSS_SELECTOR, "#items tbody tr") if row.is_displayed()]) == 12
    browser.find_element(By.LINK_TEXT, "q5").click()
    target = browser.find_element(By.ID, paths.item_anchor("q5"))
    assert "wrong" in target.text and "answer q5" in target.text
    assert problems_in(browser, site) == []


def test_search_from_file_finds_an_item_by_a_unique_output(browser, site):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get((site / "index.html").as_uri())
    box = browser.find_element(By.CSS_SELECTOR, "form.site-search input")
    box.send_keys("quokka marma")
    link = WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "ol.search-results a"))[0]
    assert "q3" in link.text
    link.click()
    assert UNIQUE in browser.find_element(By.ID, paths.item_anchor("q3")).text
    assert problems_in(browser, site) == []


def test_the_pair_picker_diffs_two_answers(browser, site):  # noqa: F811
    from selenium.webdriver.common.by import By

    browser.get((site / paths.item_page(DATASET, paths.item_bucket("q3"))).as_uri() + "#" + paths.item_anchor("q3"))
    picker = browser.find_element(By.CSS_SELECTOR, f"#{paths.item_anchor('q3')} .pair-picker")
    assert picker.is_displayed()
    removed = [e.text for e in picker.find_elements(By.CSS_SELECTOR, ".worddiff-out del")]
    added = [e.text for e in picker.find_elements(By.CSS_SELECTOR, ".worddiff-out ins")]
    assert "zebrafish" in " ".join(added + removed)
