"""The built site in real headless Chromium: navigation from file://, sorting, no console errors,
no request outside the site folder, and no payload executing. Screenshots go to a temp folder
(``EVALSITE_SCREENSHOTS`` names another) so CI can keep them as artifacts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from browser_support import drawn, load, navigated, needs_browser, problems_in
from example_support import run_example
from sitekit import write_hostile_project

from evalsite.execute.runner import execute_plan
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.plan import build_plan
from evalsite.project import find_project
from evalsite.site import build_site

pytestmark = needs_browser


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory) -> Path:
    """Where screenshots go: ``EVALSITE_SCREENSHOTS`` or a temp folder."""
    folder = Path(os.environ.get("EVALSITE_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def example_site(tmp_path_factory) -> Path:
    """The example site (one repeat) with a second sampler run to compare, built once."""
    root = run_example(tmp_path_factory.mktemp("browser-example"), repeat=1)
    project = find_project(root)
    rerun = build_plan(project, load_manifest(root / "experiments/arithmetic.yaml"), arm_ids=("sampler",), repeat=2)
    execute_plan(project, rerun)  # a second sampler run, compared with the first
    build_site(project)
    return root / "site"


def click_link(driver, text_part: str):
    """Follow the first link whose text has ``text_part`` to another page, once that page has loaded."""
    from selenium.webdriver.common.by import By

    navigated(driver, driver.find_element(By.PARTIAL_LINK_TEXT, text_part).click)


def test_home_to_leaderboard_to_run_to_compare_and_sorting(browser, example_site, screenshots):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    load(browser, (example_site / "index.html").as_uri())
    assert browser.find_element(By.TAG_NAME, "h1").text
    browser.save_screenshot(str(screenshots / "home.png"))
    assert problems_in(browser, example_site) == []

    click_link(browser, "arithmetic@")
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Dataset arithmetic@")
    assert browser.find_elements(By.CSS_SELECTOR, "svg.chart")
    browser.save_screenshot(str(screenshots / "leaderboard.png"))
    assert problems_in(browser, example_site) == []

    table = browser.find_element(By.CSS_SELECTOR, "#leaderboard-1 table")
    column = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")].index("p50 latency")
    header = table.find_elements(By.CSS_SELECTOR, "thead th button")[column]

    def cells():
        return [row.find_elements(By.TAG_NAME, "td")[column].get_attribute("data-sort")
                for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")]

    header.click()
    ascending = [float(v) for v in cells()]
    assert ascending == sorted(ascending)
    header.click()
    assert [float(v) for v in cells()] == sorted(ascending, reverse=True)

    click_link(browser, "careful")  # the run of the top arm
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Run ")
    everything = len(drawn(browser, "#cases-table tbody tr"))
    failed = int(browser.find_element(By.PARTIAL_LINK_TEXT, "failed (").text.split("(")[1].rstrip(")"))
    browser.find_element(By.PARTIAL_LINK_TEXT, "failed (").click()  # the count's link picks the filter
    WebDriverWait(browser, 10, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: all("case-failed" in row.get_attribute("class") for row in d.find_elements(By.CSS_SELECTOR, "#cases-table tbody tr")))
    rows = browser.find_elements(By.CSS_SELECTOR, "#cases-table tbody tr")
    assert len(rows) == failed < everything
    browser.save_screenshot(str(screenshots / "run-failed-cases.png"))
    assert problems_in(browser, example_site) == []

    browser.back()  # the run page without the #fragment: the same document
    navigated(browser, browser.back)  # the leaderboard
    click_link(browser, "sampler")  # the newer sampler run, which has a baseline
    navigated(browser, browser.find_element(By.CSS_SELECTOR, "p.compare-link a").click)
    assert " against " in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_element(By.TAG_NAME, "h2").text == "Fingerprint diff"
    browser.save_screenshot(str(screenshots / "compare.png"))
    assert problems_in(browser, example_site) == []


def test_status_and_text_filters_hide_rows_on_the_page(browser, example_site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    run_page = next((example_site / "runs").glob("*left_to_right*.html"))
    load(browser, run_page.as_uri())
    drawn(browser, "#cases-table tbody tr")

    def visible():
        return [r for r in browser.find_elements(By.CSS_SELECTOR, "#cases-table tbody tr") if r.is_displayed()]

    everything = len(visible())
    Select(browser.find_element(By.CSS_SELECTOR, "select[data-filter-status]")).select_by_visible_text("passed")
    passed = visible()
    assert 0 < len(passed) < everything and all("case-passed" in r.get_attribute("class") for r in passed)
    browser.find_element(By.CSS_SELECTOR, "input[data-filter-table]").send_keys(passed[0].text.split()[0])
    assert len(visible()) == 1


def test_experiment_matrix_and_decisions_pages_load_cleanly(browser, example_site, screenshots):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    load(browser, (example_site / "experiments/arithmetic.html").as_uri())
    assert len(drawn(browser, "#matrix-table tbody tr")) == 50  # items_per_page
    divergent = int(browser.find_element(By.PARTIAL_LINK_TEXT, "outputs differ (").text.split("(")[1].rstrip(")"))
    browser.find_element(By.PARTIAL_LINK_TEXT, "outputs differ (").click()
    WebDriverWait(browser, 10, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: all("divergent" in row.get_attribute("class") for row in d.find_elements(By.CSS_SELECTOR, "#matrix-table tbody tr")))
    assert len(browser.find_elements(By.CSS_SELECTOR, "#matrix-table tbody tr")) == min(50, divergent)
    browser.save_screenshot(str(screenshots / "experiment.png"))
    click_link(browser, "Decisions")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Decisions"
    assert problems_in(browser, example_site) == []


def test_no_payload_executes_in_the_browser(browser, tmp_path_factory, screenshots):
    from selenium.webdriver.common.by import By

    root = write_hostile_project(tmp_path_factory.mktemp("hostile-browser"))
    build_site(find_project(root))
    site = root / "site"
    items = sorted((site / "items/evil-000000000000").glob("[0-9a-f][0-9a-f].html"))
    assert items
    for page in ["index.html", "runs/20260101T000000Z-arm0-0000.html", "experiments/evil.html", "decisions.html",
                 "datasets/evil-000000000000.html", *(p.relative_to(site).as_posix() for p in items)]:
        load(browser, (site / page).as_uri())
        if page.startswith(("runs/", "items/", "experiments/")):  # drawn from the data: every payload is on the page, as text
            drawn(browser, "#cases-table tbody tr, section.item, #matrix-table tbody tr")
        if page.startswith("experiments/"):
            for link in browser.find_elements(By.PARTIAL_LINK_TEXT, " distinct"):
                link.click()
            drawn(browser, ".diff .output pre")
        assert browser.execute_script("return window.__xss === undefined"), page
        assert problems_in(browser, site) == [], page
    browser.save_screenshot(str(screenshots / "hostile-decisions.png"))
