"""Pages drawn from the data scripts, in headless Chromium from file://: the case listing's filters
work over every page of a run, the configuration diff switches between the resolved and the
submitted configurations, and the charts keep legible labels at 400 px inside their own box."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import drawn, load, needs_browser, problems_in
from example_support import run_example
from sitekit import case, write_run

from evalsite.project import find_project
from evalsite.site import build_site, paths

pytestmark = needs_browser

RUN = "20260101T000000Z-big-0001"
NEEDLE = "pelican saxophone"


@pytest.fixture(scope="module")
def big_run(tmp_path_factory) -> Path:
    """The site of one run of 250 cases (one of them answering NEEDLE), more than a page holds."""
    root = tmp_path_factory.mktemp("big-run")
    (root / "data").mkdir()
    cases = [case(f"i{n:03d}", output=NEEDLE if n == 237 else f"answer {n}", passed=n % 5 > 0, score=float(n % 5 > 0))
             for n in range(250)]
    write_run(root / "runs", RUN, cases)
    build_site(find_project(root))
    return root / "site"


@pytest.fixture(scope="module")
def config_diff_site(tmp_path_factory) -> Path:
    """The example project's site (one repeat), for its experiment page and charts."""
    root = run_example(tmp_path_factory.mktemp("config-diff"), repeat=1)
    build_site(find_project(root))
    return root / "site"


def shown_items(driver) -> list[str]:
    from selenium.webdriver.common.by import By

    return [row.find_element(By.TAG_NAME, "code").text for row in driver.find_elements(By.CSS_SELECTOR, "#cases-table tbody tr")]


def test_the_case_filters_and_pages_cover_the_whole_run(browser, big_run):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    load(browser, (big_run / paths.run(RUN)).as_uri())
    drawn(browser, "#cases-table tbody tr")
    assert shown_items(browser) == [f"i{n:03d}" for n in range(100)]  # page 1 of 3, in item order
    browser.find_element(By.LINK_TEXT, "3").click()
    assert shown_items(browser) == [f"i{n:03d}" for n in range(200, 250)]
    browser.find_element(By.CSS_SELECTOR, "input[data-filter-table]").send_keys("saxoph")
    assert shown_items(browser) == ["i237"]  # found although it is not on the page the reader was on
    browser.find_element(By.CSS_SELECTOR, "input[data-filter-table]").clear()
    Select(browser.find_element(By.CSS_SELECTOR, "select[data-filter-status]")).select_by_visible_text("failed")
    assert shown_items(browser) == [f"i{n:03d}" for n in range(0, 250, 5)]  # all 50, from every page
    assert "1–50 of 50 (of 250 cases)" in browser.find_element(By.CSS_SELECTOR, ".case-listing .filter-box").text
    assert problems_in(browser, big_run) == []


def test_the_configuration_diff_switches_between_resolved_and_submitted(browser, config_diff_site):
    from selenium.webdriver.common.by import By

    load(browser, (config_diff_site / "experiments/arithmetic.html").as_uri())
    panel = browser.find_element(By.ID, "config-diff")
    assert panel.is_displayed()

    def diff_text() -> str:
        views = [v for v in panel.find_elements(By.CSS_SELECTOR, ".config-view") if v.is_displayed()]
        assert len(views) == 1
        return views[0].find_element(By.CSS_SELECTOR, ".worddiff-out").text

    resolved = diff_text()
    assert '"arm_id"' in resolved and '"arm": {' not in resolved  # the configs as the runs executed them
    panel.find_element(By.CSS_SELECTOR, "input[value=submitted]").click()
    submitted = diff_text()
    assert '"arm": {' in submitted and "target" in submitted  # the manifest's entries as written
    assert panel.find_elements(By.CSS_SELECTOR, ".config-view[data-view=submitted] .worddiff-out ins")
    panel.find_element(By.CSS_SELECTOR, "input[value=resolved]").click()
    assert diff_text() == resolved
    assert problems_in(browser, config_diff_site) == []


def test_charts_keep_their_size_and_scroll_in_their_box_at_400_px(browser, config_diff_site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    dataset = next((config_diff_site / "datasets").glob("*.html"))
    browser.set_window_size(400, 900)
    try:
        load(browser, dataset.as_uri())
        WebDriverWait(browser, 10).until(lambda d: d.execute_script("return window.innerWidth") <= 400)
        width, inner = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        assert width <= inner  # the page itself does not overflow
        figures = browser.find_elements(By.CSS_SELECTOR, ".charts figure")
        assert len(figures) >= 2  # the forest plot and the critical-difference diagram
        for figure in figures:
            svg = figure.find_element(By.CSS_SELECTOR, "svg.chart")
            assert svg.size["width"] == 640  # drawn at its own size: 12 px labels stay 12 px
            assert browser.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth", figure)
    finally:
        browser.set_window_size(1400, 1000)


def test_the_matrix_pages_its_sixty_items(browser, config_diff_site):
    from selenium.webdriver.common.by import By

    load(browser, (config_diff_site / paths.experiment("arithmetic")).as_uri())
    rows = drawn(browser, "#matrix-table tbody tr")
    assert len(rows) == 50  # [site] items_per_page
    browser.find_element(By.CSS_SELECTOR, ".matrix-view").find_element(By.LINK_TEXT, "2").click()
    rows = browser.find_elements(By.CSS_SELECTOR, "#matrix-table tbody tr")
    assert [row.get_attribute("id") for row in rows] == [f"item-q{n:03d}" for n in range(50, 60)]
    assert "51–60 of 60 items" in browser.find_element(By.CSS_SELECTOR, ".matrix-view").text
    assert problems_in(browser, config_diff_site) == []
